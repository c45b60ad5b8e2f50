"""NUMA nodes, IRQs and their CPU affinity.

NUMA nodes come from the first of: ``sys/devices/system/node/node*/{cpulist,distance}`` (a live host, a
snapshot, a sosreport's numa plugin); ``numactl --hardware`` (spec ``numactl_hardware``: a sosreport's
``sos_commands/numa/numactl_--hardware``, an nvidia-bug-report's ``numactl -H`` section); the node list
``sys/devices/system/node/online`` when it names one node (a bug report of a host without numactl): that node
holds every online CPU (``sys/devices/system/cpu/online``, else a PCI function's ``local_cpulist``, which on a
one-node host is that node's CPUs). Several nodes listed with no record of their CPUs stay missing (unknown).
"""

from __future__ import annotations

import re

from doctor.facts.util import memo, parse_cpulist
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source


@record
class NumaNode:
    id: int
    cpus: frozenset[int]
    cpulist: str
    distances: tuple[int, ...]


@record
class NumaTopology:
    nodes: tuple[NumaNode, ...]
    missing: str | None = None
    #: where the nodes were read (evidence): ``sys/devices/system/node``, a ``numactl --hardware`` output, or
    #: ``sys/devices/system/node/online``
    origin: str | None = None

    @property
    def cpu_nodes(self) -> tuple[NumaNode, ...]:
        """Nodes with CPUs: sockets or sub-NUMA clusters, not CPU-less memory (GPU HBM) nodes."""
        return tuple(n for n in self.nodes if n.cpus)

    @property
    def multi_node(self) -> bool:
        return len(self.cpu_nodes) > 1

    def node_of_cpu(self, cpu: int) -> int | None:
        by_cpu = self.__dict__.get("_by_cpu")  # asked for each CPU each process may run on: no call when built
        if by_cpu is None:
            by_cpu = memo(self, "_by_cpu", lambda: {c: n.id for n in reversed(self.nodes) for c in n.cpus})
        return by_cpu.get(cpu)  # type: ignore[no-any-return]

    def get(self, node_id: int | None) -> NumaNode | None:
        return memo(self, "_by_id", lambda: {n.id: n for n in reversed(self.nodes)}).get(node_id)  # type: ignore[arg-type]


#: Most NUMA nodes and CPUs a ``numactl --hardware`` output is read for (the kernel's MAX_NUMNODES, NR_CPUS)
_MAX_NODES, _MAX_CPUS = 1024, 65536
_NODE_CPUS = lazy(r"^node (\d{1,4}) cpus:((?: \d{1,6})*)\s*$", re.M)
_DISTANCE_ROW = lazy(r"^\s*(\d{1,4}):((?:\s+\d{1,4})+)\s*$", re.M)


def cpulist_text(cpus: frozenset[int]) -> str:
    """``{0,1,2,3,8}`` -> ``"0-3,8"`` (the kernel's cpulist form)."""
    out: list[str] = []
    run: list[int] = []
    for cpu in sorted(cpus):
        if run and cpu == run[-1] + 1:
            run.append(cpu)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [cpu]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def parse_numactl(text: str) -> tuple[NumaNode, ...]:
    """Nodes of ``numactl --hardware`` (``node 0 cpus: 0 1 2``, the ``node distances:`` matrix); memory-only
    nodes print no CPUs. Empty when the output names no node (``No NUMA available on this system``)."""
    cpus: dict[int, frozenset[int]] = {}
    for m in _NODE_CPUS.finditer(text[:1 << 20]):
        node = int(m.group(1))
        if node < _MAX_NODES and node not in cpus and len(cpus) < _MAX_NODES:
            cpus[node] = frozenset(int(c) for c in m.group(2).split()[:_MAX_CPUS] if int(c) < _MAX_CPUS)
    tail = text[:1 << 20].partition("node distances:")[2]
    dist = {int(m.group(1)): tuple(int(x) for x in m.group(2).split()[:_MAX_NODES])
            for m in _DISTANCE_ROW.finditer(tail)}
    return tuple(NumaNode(n, c, cpulist_text(c), dist.get(n, ())) for n, c in sorted(cpus.items()))


def _sysfs_nodes(src: Source) -> list[NumaNode]:
    nodes = []
    for name in src.listdir("sys/devices/system/node"):
        if not name.startswith("node") or not name[4:].isdigit():
            continue
        base = f"sys/devices/system/node/{name}"
        cpulist = src.read_line(f"{base}/cpulist") or ""
        cpus = parse_cpulist(cpulist) or frozenset()
        dist = tuple(int(x) for x in (src.read_line(f"{base}/distance") or "").split() if x.isdigit())
        nodes.append(NumaNode(int(name[4:]), cpus, cpulist, dist))
    nodes.sort(key=lambda n: n.id)
    return nodes


def _online_cpus(src: Source) -> tuple[frozenset[int], str] | None:
    """Every online CPU and where it was read: ``sys/devices/system/cpu/online``, else the ``local_cpulist`` of
    the first PCI function that records one (on a host of one NUMA node, all of that node's CPUs)."""
    online = parse_cpulist(src.read_line("sys/devices/system/cpu/online"))
    if online:
        return online, "sys/devices/system/cpu/online"
    for address in sorted(src.listdir("sys/bus/pci/devices"))[:4096]:
        path = f"sys/bus/pci/devices/{address}/local_cpulist"
        cpus = parse_cpulist(src.read_line(path))
        if cpus:
            return cpus, path
    return None


def build_numa(src: Source) -> NumaTopology:
    nodes = _sysfs_nodes(src)
    if nodes:
        return NumaTopology(tuple(nodes), None, "sys/devices/system/node")
    out = src.command("numactl_hardware")
    parsed = parse_numactl(out.text) if out.text else ()
    if parsed:
        return NumaTopology(parsed, None, out.where)
    online = src.read_line("sys/devices/system/node/online")
    ids = parse_cpulist(online)
    if not ids:
        return NumaTopology((), "no sys/devices/system/node")
    if len(ids) > 1:
        return NumaTopology((), f"sys/devices/system/node/online lists nodes {online}, but not which CPUs each "
                                "holds (no node*/cpulist, no numactl --hardware)")
    node = min(ids)
    cpus = _online_cpus(src)
    if cpus is None:
        return NumaTopology((NumaNode(node, frozenset(), "", ()),), None, "sys/devices/system/node/online")
    return NumaTopology((NumaNode(node, cpus[0], cpulist_text(cpus[0]), ()),), None,
                        f"sys/devices/system/node/online (CPUs: {cpus[1]})")


@record
class Irq:
    number: int
    actions: str  # the device/handler names of /proc/interrupts (e.g. "mlx5_comp3@pci:0000:1a:00.0")
    effective: frozenset[int] | None
    affinity: frozenset[int] | None
    origin: str
    #: the interrupt chip column of ``/proc/interrupts``: ``IR-PCI-MSIX-0000:19:00.0``, ``IR-IO-APIC``, ``PCI-MSI-edge``
    #: (kernels before 4.x), ``GICv3``, ``Hyper-V PCIe MSI``; empty when not recorded
    chip: str = ""


def _affinities(src: Source, numbers: set[int]) -> dict[int, tuple[frozenset[int] | None, frozenset[int] | None]]:
    """IRQ number -> (effective, configured) CPU sets from ``proc/irq/N``."""
    out = {}
    for n in sorted(numbers):
        base = f"proc/irq/{n}"
        out[n] = (parse_cpulist(src.read_line(f"{base}/effective_affinity_list")),
                  parse_cpulist(src.read_line(f"{base}/smp_affinity_list")))
    return out


_HWIRQ = lazy(r"^\d+(?:-[a-z]+)?$")


def irq_actions(fields: list[str], ncpu: int) -> str:
    """The handler names of one ``/proc/interrupts`` row, split after its ``N:``: the per-CPU counts, the chip
    (``IR-PCI-MSI``) and, since Linux 4.x, the hardware IRQ and trigger (``524288-edge``; ``27 Level`` on
    ARM GIC) come first. Kernels before 4.x print ``PCI-MSI-edge eth0`` with no hardware IRQ."""
    rest = fields[ncpu + 1:] if len(fields) > ncpu else []
    if rest and _HWIRQ.match(rest[0]):
        rest = rest[2:] if rest[0].isdigit() and rest[1:2] in (["Edge"], ["Level"]) else rest[1:]
    return " ".join(rest)


def irq_chip(fields: list[str], ncpu: int) -> str:
    """The chip column of one ``/proc/interrupts`` row (the words between the per-CPU counts and the hardware
    IRQ: ``Hyper-V PCIe MSI`` has three); one word where no hardware IRQ follows (kernels before 4.x)."""
    rest = fields[ncpu:ncpu + 5] if len(fields) > ncpu else []
    for i, word in enumerate(rest):
        if i and _HWIRQ.match(word):
            return " ".join(rest[:i])
    return rest[0] if rest else ""


def build_irqs(src: Source) -> tuple[Irq, ...]:
    names: dict[int, str] = {}
    chips: dict[int, str] = {}
    text = src.read_text("proc/interrupts") or ""
    lines = text.splitlines()
    ncpu = len(lines[0].split()) if lines else 0
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        fields = rest.split()
        names[int(head)] = irq_actions(fields, ncpu)
        chips[int(head)] = irq_chip(fields, ncpu)
    listed = {int(n) for n in src.listdir("proc/irq") if n.isdigit()}
    affinity = _affinities(src, listed | set(names))
    return tuple(Irq(n, names.get(n, ""), *affinity[n], f"proc/irq/{n}", chips.get(n, ""))
                 for n in sorted(affinity))
