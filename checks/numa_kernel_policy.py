"""numa.kernel_policy: automatic NUMA balancing and zone reclaim on multi-node GPU hosts."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import sysctl_fix
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/admin-guide/sysctl/kernel.html#numa-balancing",
    "https://docs.kernel.org/admin-guide/sysctl/vm.html#zone-reclaim-mode",
    "https://docs.nvidia.com/grace-performance-tuning-guide/index.html",
)


@check("numa.kernel_policy", "NUMA balancing and zone reclaim", "numa", acts="os",
       fixes=("sysctl",),
       sysctls=("kernel.numa_balancing", "vm.zone_reclaim_mode"), needs=("sysctls",))
def numa_kernel_policy(facts: Facts) -> Iterator[Finding]:
    """Flag kernel.numa_balancing=1 (low) and vm.zone_reclaim_mode != 0 (medium) on multi-node GPU hosts.

    Automatic balancing migrates pages of processes that are already pinned next to their GPU;
    zone reclaim makes allocations reclaim local memory instead of using the other node.
    """
    if not facts.numa.multi_node or not facts.gpus.gpus:
        return
    sysctls = facts.sysctls
    balancing, reclaim = sysctls.get_int("kernel.numa_balancing"), sysctls.get_int("vm.zone_reclaim_mode")
    nodes = len(facts.numa.cpu_nodes)
    if balancing is None and reclaim is None:
        yield Finding(UNKNOWN, "node", N_('NUMA kernel policy not recorded'),
                      detail=N_('neither kernel.numa_balancing nor vm.zone_reclaim_mode is in this source'))
        return
    if balancing is not None and balancing != 0:
        pinned = sum(1 for p in facts.processes if p.cpus_allowed and facts.numa.node_of_cpu(min(p.cpus_allowed))
                     is not None and len({facts.numa.node_of_cpu(c) for c in p.cpus_allowed}) == 1)
        yield Finding(
            LOW, "kernel.numa_balancing", N_('automatic NUMA balancing is on for a multi-node GPU host'),
            detail=N_("{nodes} NUMA nodes with CPUs, {n_gpus} GPUs. Balancing migrates the pages of processes already pinned to their GPU's node and adds page-fault overhead.", nodes=nodes, n_gpus=len(facts.gpus.gpus)),
            evidence=(Evidence(sysctls.origins.get("kernel.numa_balancing", "sysctl"), str(balancing)),),
            expected=N_('0 on hosts whose GPU processes are pinned'), observed=str(balancing),
            impact=Impact(3, N_('page migration and hinting faults; {pinned} processes are pinned to one node', pinned=pinned), basis=N_('kernel sysctl documentation: NUMA balancing unmaps pages to sample accesses (hinting faults); processes pinned to one node gain nothing from it')),
            fix=sysctl_fix({"kernel.numa_balancing": "0"}, sysctls, "90-gnd-numa-balancing.conf"),
            references=REFERENCES)
    if reclaim is not None and reclaim != 0:
        yield Finding(
            MEDIUM, "vm.zone_reclaim_mode", N_('zone reclaim is on: allocations stall reclaiming local memory'),
            detail=N_('With zone_reclaim_mode set the kernel reclaims (drops caches, writes back) on the local node instead of allocating from the other node; model loading and pinned host buffers stall.'),
            evidence=(Evidence(sysctls.origins.get("vm.zone_reclaim_mode", "sysctl"), str(reclaim)),),
            expected="0", observed=str(reclaim),
            impact=Impact(8, N_('allocation stalls and page-cache thrashing during model load and KV offload'), basis=N_('kernel vm sysctl documentation: zone_reclaim_mode reclaims local page cache before allocating on another node')),
            fix=sysctl_fix({"vm.zone_reclaim_mode": "0"}, sysctls, "90-gnd-zone-reclaim.conf"),
            references=REFERENCES)
    if balancing == 0 and reclaim in (0, None) or reclaim == 0 and balancing in (0, None):
        yield Finding(PASS, "node", N_('NUMA balancing off and zone reclaim off'),
                      evidence=tuple(Evidence(sysctls.origins.get(k, "sysctl"), str(sysctls.get(k)))
                                     for k in ("kernel.numa_balancing", "vm.zone_reclaim_mode") if sysctls.get(k)))
