"""Topology words between PCI devices: switch hops, NCCL / ``nvidia-smi topo -m`` path words, nearest NIC."""

from __future__ import annotations

from collections.abc import Iterable

from doctor.facts import NumaTopology, PciDevice, PciTree
from doctor.facts.pci import DOWNSTREAM, UPSTREAM
from doctor.facts.util import memo

#: NCCL / ``nvidia-smi topo -m`` path words, closest first.
PATH_WORDS = ("PIX", "PXB", "PHB", "NODE", "SYS")
#: NCCL enables GPUDirect RDMA and PCIe P2P only at these words or closer (``netGdrLevel = PATH_PXB``).
GDR_WORDS = ("PIX", "PXB")


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
    pa, pb = da.path, db.path
    common = 0
    for x, y in zip(pa[:-1], pb[:-1]):
        if x != y:
            break
        common += 1
    if common:
        sa, sb = _switches(pci, da), _switches(pci, db)  # the switch of each bridge above, once a device
        units = {sa[common - 1], *sa[common:], *sb[common:]}
        return "PIX" if len(units) <= 1 else "PXB"
    if da.host_bridge and da.host_bridge == db.host_bridge:
        return "PHB"
    na, nb = da.numa_node, db.numa_node
    if na is None or nb is None or na < 0 or nb < 0:
        return None
    if numa is not None and numa.nodes and (numa.get(na) is None or numa.get(nb) is None):
        return None
    return "NODE" if na == nb else "SYS"


def _switches(pci: PciTree, dev: PciDevice) -> tuple[str, ...]:
    """:func:`switch_of` each bridge above ``dev`` (its path but itself), worked out once per device: the
    nearest NIC of thousands of GPUs compares each GPU with a dozen NICs, each bridge of both paths again."""
    table: dict[str, tuple[str, ...]] = memo(pci, "_switch_paths", dict)
    got = table.get(dev.address)
    if got is None:
        got = table[dev.address] = tuple(switch_of(pci, x) for x in dev.path[:-1])
    return got


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


class NicIndex:
    """The candidate NICs grouped once, so that the nearest NIC of each of many GPUs costs what the
    few NICs that could be nearest cost, not all of them (n GPUs x m NICs was 50 s at 7,000 each).

    Exactly :func:`path_word`'s order (word rank, then lowest address): NICs that share the GPU's
    root port (the only ones that can be PIX or PXB) are each compared; any other NIC's word
    depends only on its host bridge (PHB when it is the GPU's), else its NUMA node, so of those
    only the lowest address per host bridge of the GPU, per NUMA node and overall is looked at.
    """

    def __init__(self, pci: PciTree, nics: Iterable[PciDevice] | None = None, numa: NumaTopology | None = None):
        self.pci, self.numa = pci, numa
        self._all = sorted((n for n in (list(nics) if nics is not None else pci.nics) if not n.is_vf),
                           key=lambda n: n.address)
        self._by_root: dict[str, list[PciDevice]] = {}
        self._by_bridge: dict[str, list[PciDevice]] = {}
        self._by_node: dict[int | None, list[PciDevice]] = {}
        for nic in self._all:
            root = _root_key(nic)
            if root is not None:
                self._by_root.setdefault(root, []).append(nic)
            if nic.host_bridge:
                self._by_bridge.setdefault(nic.host_bridge, []).append(nic)
            self._by_node.setdefault(nic.numa_node, []).append(nic)

    def nearest(self, gpu: str) -> tuple[PciDevice, str | None] | None:
        """The NIC closest to ``gpu`` and the word (see :func:`nearest_nic`)."""
        dev = self.pci.get(gpu)
        root = _root_key(dev) if dev is not None else None
        best: tuple[int, str, PciDevice, str | None] | None = None

        def consider(nic: PciDevice) -> None:
            nonlocal best
            word = path_word(self.pci, gpu, nic.address, self.numa)
            key = (word_rank(word), nic.address)
            if best is None or key < best[:2]:
                best = (key[0], key[1], nic, word)

        def first_outside(group: list[PciDevice]) -> None:
            """The lowest address of ``group`` outside the GPU's root port (those are compared apart)."""
            for nic in group:
                if nic.address != gpu and (root is None or _root_key(nic) != root):
                    consider(nic)
                    return

        for nic in self._by_root.get(root, ()) if root is not None else ():
            if nic.address != gpu:
                consider(nic)
        if dev is not None and dev.host_bridge:
            first_outside(self._by_bridge.get(dev.host_bridge, []))
        for group in self._by_node.values():
            first_outside(group)
        first_outside(self._all)
        return (best[2], best[3]) if best is not None else None


def _root_key(dev: PciDevice) -> str | None:
    """The root port above ``dev`` (first of its path) when it has bridges above it."""
    return dev.path[0] if len(dev.path) > 1 else None


def nearest_nic(pci: PciTree, gpu: str, nics: Iterable[PciDevice] | None = None,
                numa: NumaTopology | None = None) -> tuple[PciDevice, str | None] | None:
    """The NIC closest to ``gpu`` by path word (ties: lowest address) and that word; None if no NIC.

    ``nics`` defaults to every physical NIC in the tree (pass
    :func:`doctor.derived.net.subject_nics` to include InfiniBand HCAs, or a filtered list of
    RDMA-capable ports). The word is ``None`` when the topology cannot tell (see :func:`path_word`).
    For many GPUs build one :class:`NicIndex` and ask it for each.
    """
    return NicIndex(pci, nics, numa).nearest(gpu)
