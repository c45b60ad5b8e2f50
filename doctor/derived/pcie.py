"""PCIe links on a device's upstream path, their verdict and the path's bottleneck bandwidth.

Conventions (docs/checks.md#pcie-link-downgrade, #pcie-chipset-slot):

* A device's ``path`` runs root port first, device last. Each (parent port, child) pair is one link,
  except the virtual bus inside a switch (upstream port -> its downstream ports), which is skipped.
* Current and expected numbers and the verdict come from :mod:`doctor.derived.links` (the one rule).
* Bandwidth is GB/s per direction from :data:`doctor.facts.pcie_gen.LANE_GBPS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from doctor.derived.links import DOWN, LinkEnd, LinkVerdict, is_internal, judge_ends
from doctor.facts.pci import ROOT_PORT, PciDevice, PciTree
from doctor.facts.pcie_gen import generation, link_bandwidth
from doctor.i18n import N_
from doctor.record import record

if TYPE_CHECKING:
    from doctor.facts import Facts


def gen_label(speed: float | None) -> str:
    """``16.0`` -> ``"16 GT/s (Gen4)"``; ``None`` -> ``"?"``."""
    if speed is None:
        return "?"
    gen = generation(speed)
    text = f"{speed:g} GT/s"
    return f"{text} (Gen{gen})" if gen else text


def link_label(speed: float | None, width: int | None) -> str:
    """``(16.0, 8)`` -> ``"16 GT/s (Gen4) x8"``."""
    return f"{gen_label(speed)} x{width if width is not None else '?'}"


def gbps(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} GB/s"


def end_of(dev: PciDevice) -> LinkEnd:
    return LinkEnd(dev.cur_speed, dev.cur_width, dev.max_speed, dev.max_width, dev.port_type)


#: PCI Express device types that are part of the root complex: they have the capability but no link
#: (PCIe base specification 7.5.3.2: Link Capabilities/Status are not implemented for them)
NO_LINK_TYPES = frozenset({"Root Complex Integrated Endpoint", "Root Complex Event Collector"})


def no_link_reason(dev: PciDevice) -> str | None:
    """Why a function has no PCIe link to judge, or ``None`` when it has one (or that is not known).

    A Root Complex Integrated Endpoint (or Event Collector) lives inside the root complex; a function whose
    capability list was read and holds no PCI Express capability is conventional PCI (an on-board chipset
    function such as Intel's I219 Ethernet at 00:1f.6); a function on the root bus with neither link
    attributes nor a port type is one of those as sysfs shows it. A capability present but unreadable
    (``<access denied>``, a trimmed recording) is not a reason: that stays unknown.
    """
    if dev.port_type in NO_LINK_TYPES:
        return N_('{address} is a {type}: part of the root complex, it has no PCIe link', address=dev.address,
                  type=dev.port_type)
    if dev.express is False and dev.cur_width is None and dev.max_width is None:
        return N_('{address} has no PCI Express capability in its capability list: a conventional PCI or chipset '
                  'function with no PCIe link', address=dev.address)
    if len(dev.path) == 1 and dev.host_bridge and dev.cur_width is None and dev.max_width is None:
        return N_('{address} sits on the root bus with no link attributes: an integrated function with no PCIe link',
                  address=dev.address)
    return None


def model_id(dev: PciDevice) -> str | None:
    """``vendor:device`` in hex (``10de:2330``), as a baseline records a slot's model."""
    if dev.vendor is None or dev.device is None:
        return None
    return f"{dev.vendor:04x}:{dev.device:04x}"


def expected_gen(facts: Facts, dev: PciDevice) -> tuple[int | None, str]:
    """The generation a device's link runs at under load, and how it was judged.

    An idle GPU parks its link at 2.5 GT/s, so for a GPU that is not busy the link's expected
    speed (the lower of both ends' maxima, :mod:`doctor.derived.links`) stands in for the current one.
    """
    from doctor.derived.relations import gpu_idle

    if dev.is_gpu and gpu_idle(facts, dev.address):
        port = facts.pci.get(dev.parent)
        verdict = judge_ends(end_of(dev), end_of(port) if port is not None else None, idle=True)
        return generation(verdict.exp_speed), "capability (GPU not busy)"
    return generation(dev.cur_speed), "current"


@record
class Link:
    """One physical link on a device's upstream path (``parent`` is None when missing from the tree).

    ``verdict`` is judged without idle awareness (idleness belongs to the GPU a reader asks about;
    see :func:`doctor.derived.links.judge_link`).
    """

    child: PciDevice
    parent: PciDevice | None
    verdict: LinkVerdict
    partner_known: bool  # whether the parent's maxima were known (else expected = child's maxima)

    @property
    def cur_speed(self) -> float | None:
        return self.verdict.cur_speed

    @property
    def cur_width(self) -> int | None:
        return self.verdict.cur_width

    @property
    def exp_speed(self) -> float | None:
        return self.verdict.exp_speed

    @property
    def exp_width(self) -> int | None:
        return self.verdict.exp_width

    @property
    def known(self) -> bool:
        """All four numbers known and the link up (the verdict compared them)."""
        return self.verdict.state not in ("unknown", DOWN)

    @property
    def down(self) -> bool:
        """Width 0: the link is down or the device is in D3cold; nothing to compare."""
        return self.verdict.state == DOWN

    @property
    def current_bw(self) -> float | None:
        return link_bandwidth(self.cur_speed, self.cur_width) if self.known else None

    @property
    def expected_bw(self) -> float | None:
        return link_bandwidth(self.exp_speed, self.exp_width) if self.known else None

    @property
    def width_short(self) -> bool:
        return self.verdict.width_short

    @property
    def speed_short(self) -> bool:
        return self.verdict.speed_short

    @property
    def slot_limited(self) -> bool:
        """The child could run faster or wider than the port above allows (not a fault of the link)."""
        return self.verdict.slot_limited

    @property
    def ports(self) -> tuple[str, ...]:
        """The bridges at this link's ends (the child only if it is a bridge itself)."""
        out = [self.child.address] if self.child.is_bridge else []
        if self.parent is not None:
            out.append(self.parent.address)
        return tuple(out)

    @property
    def port_above(self) -> str | None:
        """The downstream end (root or switch downstream port), where a retrain is issued."""
        return self.parent.address if self.parent is not None else None


def make_link(child: PciDevice, parent: PciDevice | None) -> Link:
    partner = parent is not None and parent.max_speed is not None and parent.max_width is not None
    verdict = judge_ends(end_of(child), end_of(parent) if parent is not None else None)
    return Link(child, parent, verdict, partner)


def upstream_links(pci: PciTree, address: str) -> list[Link]:
    """Every physical link from ``address`` up to its root port, the device's own link first."""
    dev = pci.get(address)
    if dev is None:
        return []
    links: list[Link] = []
    chain = list(dev.path) if dev.path and dev.path[-1] == address else [address]
    for i in range(len(chain) - 1, 0, -1):
        child = pci.get(chain[i])
        if child is None:
            continue
        parent = pci.get(chain[i - 1])
        if parent is not None and is_internal(parent.port_type, child.port_type):
            continue
        links.append(make_link(child, parent))
    if len(chain) == 1:
        root = pci.get(chain[0])
        if root is not None and root.port_type != ROOT_PORT and not root.is_bridge:
            links.append(make_link(root, None))  # a device directly on the root bus, no port above
    return links


@record
class PathBandwidth:
    """The path from a device to its root port: current and expected bottleneck bandwidth."""

    links: tuple[Link, ...]
    current_bw: float | None
    expected_bw: float | None
    bottleneck: Link | None  # the link that sets the current minimum

    @property
    def loss(self) -> float:
        """Fraction of expected bandwidth lost (0 when unknown or none)."""
        if not self.current_bw or not self.expected_bw or self.current_bw >= self.expected_bw:
            return 0.0
        return 1.0 - self.current_bw / self.expected_bw


def path_bandwidth(links: Iterable[Link], ignore_speed: bool = False) -> PathBandwidth:
    """Bottleneck over the known links; ``ignore_speed`` counts current speed as expected (idle GPUs)."""
    links = tuple(links)
    known = [lk for lk in links if lk.known]
    cur: float | None = None
    exp: float | None = None
    neck: Link | None = None
    for lk in known:
        speed = lk.exp_speed if ignore_speed else lk.cur_speed
        c = link_bandwidth(speed, lk.cur_width)
        e = lk.expected_bw
        if c is not None and (cur is None or c < cur):
            cur, neck = c, lk
        if e is not None and (exp is None or e < exp):
            exp = e
    return PathBandwidth(links, cur, exp, neck)


@record
class PathCap:
    """What the host path allows a device, against what the device itself can do.

    The card's capability is the higher of LnkCap's Max Link Speed and LnkCap2's Supported Link Speeds
    (an NVIDIA GPU lowers its LnkCap to the host's generation; Linux's ``max_link_speed`` reads LnkCap2
    first). The path's cap is the lowest maximum of every port on the way to the root port (for the
    driver-only view, nvidia-smi's host maximum); its width the narrowest of them.
    """

    card_speed: float | None
    card_width: int | None
    speed: float | None  # the lowest port maximum on the path (GT/s)
    width: int | None  # the narrowest port maximum on the path
    speed_port: str | None  # where the speed cap sits
    width_port: str | None  # where the width cap sits

    @property
    def speed_capped(self) -> bool:
        return self.card_speed is not None and self.speed is not None and self.speed < self.card_speed - 0.01

    @property
    def width_capped(self) -> bool:
        return self.card_width is not None and self.width is not None and self.width < self.card_width

    @property
    def kept(self) -> float | None:
        """Share of the card's own bandwidth the path can carry (None when either is unknown)."""
        card = link_bandwidth(self.card_speed, self.card_width)
        cap = link_bandwidth(self.speed if self.speed_capped else self.card_speed,
                             self.width if self.width_capped else self.card_width)
        return cap / card if card and cap is not None else None


def card_speed(dev: PciDevice) -> float | None:
    """The highest speed the device's silicon supports (LnkCap or LnkCap2, whichever says more)."""
    speeds = [s for s in (dev.max_speed, dev.supported_speed) if s is not None]
    return max(speeds) if speeds else None


def path_cap(links: Iterable[Link]) -> PathCap | None:
    """The host path's cap over ``links`` (the device's own link first), or None without a port above."""
    links = tuple(links)
    if not links or links[0].parent is None:
        return None
    dev = links[0].child
    ports: list[PciDevice] = []
    for i, lk in enumerate(links):
        if i and lk.child.is_bridge:
            ports.append(lk.child)
        if lk.parent is not None:
            ports.append(lk.parent)
    speeds = [(p.max_speed, p.address) for p in ports if p.max_speed is not None]
    widths = [(p.max_width, p.address) for p in ports if p.max_width is not None]
    speed = min(speeds) if speeds else None
    width = min(widths) if widths else None
    return PathCap(card_speed(dev), dev.max_width, speed[0] if speed else None, width[0] if width else None,
                   speed[1] if speed else None, width[1] if width else None)
