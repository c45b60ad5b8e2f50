"""numa.irq_affinity: data NIC interrupts served by CPUs of another NUMA node."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import DataNic, data_nics, tcp_carries_data
from doctor.derived.procs import irqbalance_running
from doctor.facts import Facts, Irq
from doctor.facts.util import format_cpulist
from doctor.findings import LOW, MEDIUM, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.inputs import whole
from doctor.registry import check

#: Share of a NIC's data vectors off its node above which it is reported.
OFF_NODE_SHARE = 0.5
#: Vector names that carry no data (control/async queues).
CONTROL_NAMES = ("async", "ctrl", "-fw", "_cmd", "pages")
REFERENCES = (
    "https://docs.kernel.org/core-api/irq/irq-affinity.html",
    "https://github.com/Mellanox/mlnx-tools/blob/master/sbin/set_irq_affinity_bynode.sh",
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/performance+tuning",
)


def nic_irqs(facts: Facts, nic: DataNic) -> list[Irq]:
    """Data vectors of a NIC: its ``msi_irqs``, else interrupts named after its address or interface."""
    addr = nic.netdev.pci_address or ""
    msi = set(nic.pci.msi_irqs) if nic.pci else set()
    out = []
    for irq in facts.irqs:
        named = bool(addr) and addr in irq.actions or f"{nic.name}-" in irq.actions
        if irq.number in msi or named:
            if any(c in irq.actions.lower() for c in CONTROL_NAMES):
                continue
            out.append(irq)
    return out


def _cpus(irq: Irq) -> tuple[frozenset[int] | None, str]:
    if irq.effective is not None and irq.effective:
        return irq.effective, "effective_affinity_list"
    return irq.affinity, "smp_affinity_list"


def _one_node(facts: Facts) -> str | None:
    """One NUMA node, or no data NIC (told only when the NUMA nodes and the NICs were read whole)."""
    if whole(facts, "numa") and not facts.numa.multi_node:
        return N_("one NUMA node")
    if whole(facts, "netdevs", "pci") and not data_nics(facts):
        return N_("no data NIC")
    return None


@check("numa.irq_affinity", "Data NIC interrupts on the NIC's NUMA node", "numa", acts="os", fixes=("irq_affinity",),
       needs=("netdevs", "numa", "irqs"), applies=_one_node)
def irq_affinity(facts: Facts) -> Iterator[Finding]:
    """More than half of a data NIC's MSI-X data vectors with an effective affinity off the NIC's node:
    medium when TCP carries data, else low (NCCL's RDMA path polls completion queues). Says whether
    irqbalance runs.
    """
    numa = facts.numa
    if not numa.multi_node or not facts.irqs:
        return
    balancer = irqbalance_running(facts)
    balancer_text = {True: N_('irqbalance is running and may move them again'),
                     False: N_('irqbalance is not running'), None: N_('whether irqbalance runs is unknown')}[balancer]
    carries, why = tcp_carries_data(facts)
    checked = 0
    found = False
    for nic in data_nics(facts):
        node_id = nic.pci.numa_node if nic.pci else None
        node = numa.get(node_id) if node_id is not None and node_id >= 0 else None
        if node is None or not node.cpus:
            continue
        irqs = nic_irqs(facts, nic)
        placed: list[tuple[Irq, frozenset[int], str]] = []
        for irq in irqs:
            cpus, src = _cpus(irq)
            if cpus:
                placed.append((irq, cpus, src))
        if not placed:
            continue
        checked += 1
        off = [(irq, cpus, src) for irq, cpus, src in placed if not cpus & node.cpus]
        if len(off) <= OFF_NODE_SHARE * len(placed):
            continue
        found = True
        requested_only = all(src == "smp_affinity_list" for _, _, src in off)
        local = node.cpulist
        previous = {str(irq.number): format_cpulist(irq.affinity) if irq.affinity else "" for irq, _, _ in off}
        far_nodes = sorted({n for _, cpus, _ in off for c in cpus if (n := numa.node_of_cpu(c)) is not None})
        yield Finding(
            MEDIUM if carries else LOW, nic.name,
            N_('{n_off} of {n_placed} interrupts of {name} run on node {map}, the NIC is on node {id}', n_off=len(off), n_placed=len(placed), name=nic.name, map=join(', ', map(str, far_nodes)), id=node.id),
            detail=(N_('{name} ({pci_address}) sits on node {id} (CPUs {local}); {n_off} of its {n_placed} data vectors are served elsewhere; {balancer_text}. ', name=nic.name, pci_address=nic.netdev.pci_address, id=node.id, local=local, n_off=len(off), n_placed=len(placed), balancer_text=balancer_text)
                    + (N_('TCP carries data here ({why}), so every packet crosses the socket interconnect.', why=why)
                       if carries else N_("This matters for TCP traffic; NCCL's RDMA path polls completion queues and is barely affected."))),
            evidence=tuple(Evidence(f"{irq.origin}/{src}", f"{format_cpulist(cpus)}"
                                    + (f" ({irq.actions.split()[-1]})" if irq.actions else "")) for irq, cpus, src in off[:6])
            + (Evidence(nic.pci.attr("numa_node") if nic.pci else nic.netdev.origin, str(node.id)),
               Evidence("processes", balancer_text)),
            expected=N_('IRQ affinity within node {id} CPUs ({local})', id=node.id, local=local),
            observed=N_('{n_off}/{n_placed} vectors off-node', n_off=len(off), n_placed=len(placed)),
            impact=Impact(12 if carries else 3, N_('cross-socket interrupt and softirq processing'), basis=N_('interrupts handled on the remote socket touch packet buffers across the inter-socket link; a general NUMA cost, not measured on this node')),
            fix=make("irq_affinity", netdev=nic.name, node=node.id, cpus=local, irqs=previous,
                     irqbalance=bool(balancer),
                     notes=(N_('Use either command (set_irq_affinity_bynode.sh ships with mlnx-tools). ')
                           + (N_('irqbalance rebalances within minutes: disable it, or keep it and ban these IRQs (IRQBALANCE_ARGS="--banirq=N ..." in /etc/default/irqbalance). ') if balancer else "")
                           + N_('Re-apply at boot from a systemd unit; IRQ affinity is not persistent.'))),
            references=REFERENCES, related=tuple(p.name for p in nic.rdma),
            confidence=0.7 if requested_only else 1.0)
    if checked and not found:
        yield Finding(PASS, "node", N_('interrupts of {checked} data NIC(s) run on their NUMA node ({balancer_text})', checked=checked, balancer_text=balancer_text))
