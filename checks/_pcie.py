"""Shared PCIe helpers: upstream links, expected vs current bandwidth, NCCL path words, GPU activity.

Conventions (checks-spec §1, §3):

* A device's ``path`` runs root port first, device last. Each (parent port, child) pair is one link,
  except the virtual bus inside a switch (upstream port -> its downstream ports), which is skipped.
* A link's current speed and width are read at the child's end (in sysfs a device's
  ``current_link_*`` describes the link to its upstream port); a root or downstream port's own values
  describe the link below it and serve as the fallback when the child's are missing.
* A link's expected speed and width are the lower of the two ends' maxima (NCCL does the same).
* Bandwidth is GB/s per direction from :data:`doctor.facts.util.LANE_GBPS`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from doctor.facts import Facts, NumaTopology, PciDevice, PciTree
from doctor.facts.pci import DOWNSTREAM, ROOT_PORT, UPSTREAM
from doctor.facts.util import GENERATION, link_bandwidth

#: NCCL / ``nvidia-smi topo -m`` path words, closest first.
PATH_WORDS = ("PIX", "PXB", "PHB", "NODE", "SYS")
#: NCCL enables GPUDirect RDMA and PCIe P2P only at these words or closer (``netGdrLevel = PATH_PXB``).
GDR_WORDS = ("PIX", "PXB")
#: Mellanox/NVIDIA networking; their NICs are RDMA-capable even without an infiniband class entry.
RDMA_VENDORS = frozenset({0x15B3})
#: Severity thresholds: fraction of the path's expected bandwidth lost.
HIGH_LOSS = 0.5
MEDIUM_LOSS = 0.25


def gen_label(speed: float | None) -> str:
    """``16.0`` -> ``"16 GT/s (Gen4)"``; ``None`` -> ``"?"``."""
    if speed is None:
        return "?"
    gen = GENERATION.get(speed)
    text = f"{speed:g} GT/s"
    return f"{text} (Gen{gen})" if gen else text


def link_label(speed: float | None, width: int | None) -> str:
    """``(16.0, 8)`` -> ``"16 GT/s (Gen4) x8"``."""
    return f"{gen_label(speed)} x{width if width is not None else '?'}"


def gbps(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} GB/s"


@dataclass(frozen=True)
class Link:
    """One physical link on a device's upstream path (``parent`` is None when missing from the tree)."""

    child: PciDevice
    parent: PciDevice | None
    cur_speed: float | None
    cur_width: int | None
    exp_speed: float | None
    exp_width: int | None
    partner_known: bool  # whether the parent's maxima were known (else expected = child's maxima)

    @property
    def known(self) -> bool:
        return None not in (self.cur_speed, self.cur_width, self.exp_speed, self.exp_width) and bool(self.cur_width)

    @property
    def down(self) -> bool:
        """Width 0: the link is down or the device is in D3cold; nothing to compare."""
        return self.cur_width == 0

    @property
    def current_bw(self) -> float | None:
        return link_bandwidth(self.cur_speed, self.cur_width) if self.known else None

    @property
    def expected_bw(self) -> float | None:
        return link_bandwidth(self.exp_speed, self.exp_width) if self.known else None

    @property
    def width_short(self) -> bool:
        return self.known and self.cur_width is not None and self.exp_width is not None \
            and self.cur_width < self.exp_width

    @property
    def speed_short(self) -> bool:
        return self.known and self.cur_speed is not None and self.exp_speed is not None \
            and self.cur_speed < self.exp_speed - 0.01

    @property
    def slot_limited(self) -> bool:
        """The child could run faster or wider than the port above allows (not a fault of the link)."""
        c, p = self.child, self.parent
        if p is None:
            return False
        return (c.max_speed is not None and p.max_speed is not None and c.max_speed > p.max_speed) or \
            (c.max_width is not None and p.max_width is not None and c.max_width > p.max_width)

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


def _is_internal(parent: PciDevice | None, child: PciDevice) -> bool:
    return parent is not None and parent.port_type == UPSTREAM and child.port_type == DOWNSTREAM


def _min(a: float | int | None, b: float | int | None) -> float | int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def make_link(child: PciDevice, parent: PciDevice | None) -> Link:
    cur_speed, cur_width = child.cur_speed, child.cur_width
    if (cur_speed is None or cur_width is None) and parent is not None \
            and parent.port_type in (ROOT_PORT, DOWNSTREAM):
        cur_speed = cur_speed if cur_speed is not None else parent.cur_speed
        cur_width = cur_width if cur_width is not None else parent.cur_width
    partner = parent is not None and parent.max_speed is not None and parent.max_width is not None
    exp_speed = _min(child.max_speed, parent.max_speed if parent else None) if child.max_speed is not None else None
    exp_width = _min(child.max_width, parent.max_width if parent else None) if child.max_width is not None else None
    return Link(child, parent, cur_speed, cur_width,
                None if exp_speed is None else float(exp_speed), None if exp_width is None else int(exp_width),
                partner)


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
        if _is_internal(parent, child):
            continue
        links.append(make_link(child, parent))
    if len(chain) == 1:
        root = pci.get(chain[0])
        if root is not None and root.port_type != ROOT_PORT and not root.is_bridge:
            links.append(make_link(root, None))  # a device directly on the root bus, no port above
    return links


@dataclass(frozen=True)
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
    return PathBandwidth(tuple(links), cur, exp, neck)


# --- devices of interest -----------------------------------------------------------------------


def rdma_addresses(facts: Facts) -> set[str]:
    return {p.pci_address for p in facts.rdma if p.pci_address}


def subject_nics(facts: Facts) -> list[PciDevice]:
    """Physical NICs: network class, or any device owning an RDMA port (InfiniBand HCAs); no VFs."""
    pci = facts.pci
    out = {d.address: d for d in pci.nics}
    for addr in rdma_addresses(facts):
        dev = pci.get(addr)
        if dev is not None and not dev.is_vf:
            out[addr] = dev
    return [out[a] for a in sorted(out)]


def is_rdma_nic(facts: Facts, dev: PciDevice) -> bool:
    return dev.base_class == 0x0207 or dev.vendor in RDMA_VENDORS or dev.address in rdma_addresses(facts)


def is_virtual_nic(dev: PciDevice) -> bool:
    """Paravirtual NICs (virtio, Hyper-V, VMware vmxnet, Xen) have no real link."""
    return dev.vendor in (0x1AF4, 0x1414, 0x15AD, 0x5853)


def gpu_activity(facts: Facts, address: str) -> str:
    """``busy``, ``idle`` or ``unknown`` for the GPU at ``address`` (checks-spec §1 gating)."""
    gpu = facts.gpus.by_address(address)
    return gpu.activity if gpu is not None else "unknown"


def gpu_label(facts: Facts, address: str) -> str:
    """``"GPU 3 (0000:9a:00.0)"`` when the index is known, else the address."""
    gpu = facts.gpus.by_address(address)
    return f"GPU {gpu.index} ({address})" if gpu is not None else address


# --- topology: switch hops and NCCL path words ------------------------------------------------------


def switch_of(pci: PciTree, address: str) -> str:
    """The switch a bridge belongs to: a downstream port counts as its upstream port's switch."""
    dev = pci.get(address)
    if dev is not None and dev.port_type == DOWNSTREAM and dev.parent:
        parent = pci.get(dev.parent)
        if parent is not None and parent.port_type == UPSTREAM:
            return parent.address
    return address


def switch_hops(pci: PciTree, address: str) -> int | None:
    """PCIe switches (upstream-port levels) between a device and its root port; None if no path."""
    dev = pci.get(address)
    if dev is None or len(dev.path) < 2:
        return None if dev is None or not dev.path else 0
    return sum(1 for a in dev.path[:-1] if (b := pci.get(a)) is not None and b.port_type == UPSTREAM)


def path_word(pci: PciTree, a: str, b: str, numa: NumaTopology | None = None) -> str | None:
    """The ``nvidia-smi topo -m`` word between two PCI devices: PIX, PXB, PHB, NODE or SYS.

    * PIX: both sit below one switch (or one bridge) with no other bridge between them;
    * PXB: they meet below the same root port but cross more than one switch;
    * PHB: different root ports under the same host bridge (``pciDDDD:BB``);
    * NODE: different host bridges, same NUMA node; SYS: different NUMA nodes.

    NCCL uses GPUDirect RDMA and PCIe P2P only at PIX or PXB (see :data:`GDR_WORDS`). Returns
    ``None`` when it cannot tell (a device missing, no upstream path, or a NUMA node unknown or -1
    where it decides). ``numa`` (optional) lets a node without CPUs never count as "same node".
    """
    da, db = pci.get(a), pci.get(b)
    if da is None or db is None or not da.path or not db.path:
        return None
    pa, pb = list(da.path[:-1]), list(db.path[:-1])
    common: list[str] = []
    for x, y in zip(pa, pb):
        if x != y:
            break
        common.append(x)
    if common:
        meet = common[-1]
        units = {switch_of(pci, meet)}
        units.update(switch_of(pci, x) for x in pa[len(common):] + pb[len(common):])
        return "PIX" if len(units) <= 1 else "PXB"
    if da.host_bridge and da.host_bridge == db.host_bridge:
        return "PHB"
    na, nb = da.numa_node, db.numa_node
    if na is None or nb is None or na < 0 or nb < 0:
        return None
    if numa is not None and numa.nodes and (numa.get(na) is None or numa.get(nb) is None):
        return None
    return "NODE" if na == nb else "SYS"


def bridges_between(pci: PciTree, a: str, b: str) -> list[str]:
    """Bridges a peer-to-peer transfer between ``a`` and ``b`` crosses below their meeting point.

    Includes the meeting bridge itself; empty when the two only meet at the host bridge (there the
    traffic goes through the root complex anyway).
    """
    da, db = pci.get(a), pci.get(b)
    if da is None or db is None:
        return []
    pa, pb = list(da.path[:-1]), list(db.path[:-1])
    n = 0
    while n < min(len(pa), len(pb)) and pa[n] == pb[n]:
        n += 1
    if n == 0:
        return []
    return list(dict.fromkeys(pa[n - 1:] + pb[n:]))


def word_rank(word: str | None) -> int:
    """0 for PIX up to 4 for SYS; 5 when unknown."""
    return PATH_WORDS.index(word) if word in PATH_WORDS else len(PATH_WORDS)


def nearest_nic(pci: PciTree, gpu: str, nics: Iterable[PciDevice] | None = None,
                numa: NumaTopology | None = None) -> tuple[PciDevice, str | None] | None:
    """The NIC closest to ``gpu`` by path word (ties: lowest address) and that word; None if no NIC.

    ``nics`` defaults to every physical NIC in the tree (pass :func:`subject_nics` to include
    InfiniBand HCAs, or a filtered list of RDMA-capable ports). The word is ``None`` when the
    topology cannot tell (see :func:`path_word`).
    """
    candidates = list(nics) if nics is not None else pci.nics
    best: tuple[int, str, PciDevice, str | None] | None = None
    for nic in candidates:
        if nic.address == gpu or nic.is_vf:
            continue
        word = path_word(pci, gpu, nic.address, numa)
        key = (word_rank(word), nic.address)
        if best is None or key < best[:2]:
            best = (key[0], key[1], nic, word)
    return (best[2], best[3]) if best is not None else None


# --- chipset and coherent (C2C) attachment --------------------------------------------------------

INTEL = 0x8086
AMD = 0x1022
#: Intel PCH root ports live on bus 0 at these device numbers (D27, D28, D29).
PCH_ROOT_DEVICES = frozenset({0x1B, 0x1C, 0x1D})
#: LPC/eSPI (ISA) bridge class, present at 00:1f.0 on every Intel PCH.
LPC_CLASS = 0x0601
#: AMD client chipset bridges: Promontory (0x43xx) and X570 upstream/downstream ports.
AMD_CHIPSET_DEVICES = frozenset({0x57AD, 0x57A3, 0x57A4})
#: GPUs whose host traffic runs over NVLink-C2C, not PCIe: GH200 (0x2342, 0x2348), GB200 (0x2941).
C2C_GPU_DEVICES = frozenset({0x2342, 0x2348, 0x2941})
C2C_NAMES = ("GH200", "GB200", "GB300")


def intel_pch(facts: Facts, dev: PciDevice) -> tuple[PciDevice, PciDevice] | None:
    """(PCH root port, LPC bridge) when the device hangs off an Intel PCH root port."""
    root = facts.pci.root_port(dev.address)
    if root is None or root.vendor != INTEL:
        return None
    domain, bus, slot = root.address.split(":")[0], root.address.split(":")[1], root.address.split(":")[2][:2]
    if bus != "00" or int(slot, 16) not in PCH_ROOT_DEVICES:
        return None
    lpc = facts.pci.get(f"{domain}:00:1f.0")
    if lpc is None or lpc.vendor != INTEL or lpc.base_class != LPC_CLASS:
        return None
    return root, lpc


def amd_chipset(facts: Facts, dev: PciDevice) -> list[PciDevice]:
    """AMD client-chipset bridges (Promontory, X570) above the device."""
    return [b for b in facts.pci.upstream(dev.address) if b.vendor == AMD and b.device is not None
            and (b.device >> 8 == 0x43 or b.device in AMD_CHIPSET_DEVICES)]


def behind_chipset(facts: Facts, dev: PciDevice) -> bool:
    return intel_pch(facts, dev) is not None or bool(amd_chipset(facts, dev))


def c2c_gpu(facts: Facts, address: str) -> bool:
    """A Grace-coupled GPU (GH200/GB200): host memory traffic uses NVLink-C2C, its PCIe link is secondary."""
    dev = facts.pci.get(address)
    if dev is not None and dev.vendor == 0x10DE and dev.device in C2C_GPU_DEVICES:
        return True
    gpu = facts.gpus.by_address(address)
    name = (gpu.name if gpu is not None else None) or (dev.name if dev is not None else None) or ""
    return any(n in name for n in C2C_NAMES)


# --- severity and fix helpers ---------------------------------------------------------------------


def severity_for_loss(loss: float) -> str:
    """``high`` at half the bandwidth or worse, ``medium`` from a quarter, else ``low``."""
    if loss >= HIGH_LOSS:
        return "high"
    if loss >= MEDIUM_LOSS:
        return "medium"
    return "low"


# --- VFIO ----------------------------------------------------------------------------------------------

VFIO_DRIVERS = frozenset({"vfio-pci", "vfio_pci"})
VFIO_MODULES = frozenset({"vfio_pci", "vfio_pci_core"})


def uses_vfio(facts: Facts) -> tuple[bool, str]:
    """Whether this host passes devices through with VFIO, and why we think so."""
    bound = [d.address for d in facts.pci.devices.values() if d.driver in VFIO_DRIVERS]
    if bound:
        return True, f"{len(bound)} device(s) bound to vfio-pci ({', '.join(bound[:3])})"
    unmanaged = [g.name for g in facts.iommu.groups.values() if g.type == "unmanaged"]
    if unmanaged:
        return True, f"IOMMU group(s) {', '.join(unmanaged[:3])} of type unmanaged (owned by VFIO)"
    modules = facts.modules or frozenset()
    if modules & VFIO_MODULES:
        return True, "the vfio_pci module is loaded"
    return False, "no device on vfio-pci and no vfio_pci module"


def group_members(facts: Facts, group: str) -> list[PciDevice]:
    """Devices of an IOMMU group: from /sys/kernel/iommu_groups, else the devices' iommu_group links."""
    info = facts.iommu.groups.get(group)
    addresses = set(info.devices) if info else set()
    addresses |= {d.address for d in facts.pci.devices.values() if d.iommu_group == group}
    return [d for a in sorted(addresses) if (d := facts.pci.get(a)) is not None]
