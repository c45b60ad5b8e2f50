"""Topology words between PCI devices: switch hops, NCCL / ``nvidia-smi topo -m`` path words, nearest NIC."""

from __future__ import annotations

from collections.abc import Iterable

from doctor.facts import NumaTopology, PciDevice, PciTree
from doctor.facts.pci import DOWNSTREAM, UPSTREAM

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

    ``nics`` defaults to every physical NIC in the tree (pass
    :func:`doctor.derived.net.subject_nics` to include InfiniBand HCAs, or a filtered list of
    RDMA-capable ports). The word is ``None`` when the topology cannot tell (see :func:`path_word`).
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
