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
