"""NUMA nodes, IRQs and their CPU affinity."""

from __future__ import annotations

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

    @property
    def cpu_nodes(self) -> tuple[NumaNode, ...]:
        """Nodes with CPUs: sockets or sub-NUMA clusters, not CPU-less memory (GPU HBM) nodes."""
        return tuple(n for n in self.nodes if n.cpus)

    @property
    def multi_node(self) -> bool:
        return len(self.cpu_nodes) > 1

    def node_of_cpu(self, cpu: int) -> int | None:
        by_cpu = memo(self, "_by_cpu", lambda: {c: n.id for n in reversed(self.nodes) for c in n.cpus})
        return by_cpu.get(cpu)

    def get(self, node_id: int | None) -> NumaNode | None:
        return memo(self, "_by_id", lambda: {n.id: n for n in reversed(self.nodes)}).get(node_id)  # type: ignore[arg-type]


def build_numa(src: Source) -> NumaTopology:
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
    return NumaTopology(tuple(nodes), None if nodes else "no sys/devices/system/node")


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
