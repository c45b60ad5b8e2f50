"""numa.process_affinity: GPU processes allowed only on CPUs far from their GPU."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import gpu_absent
from doctor.derived.procs import gpu_holders, gpus_of, process_label, servers
from doctor.facts import Facts, Gpu, Process
from doctor.facts.util import format_cpulist
from doctor.findings import INFO, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact, cmd
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#cpu-affinity",
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci",
    "https://man7.org/linux/man-pages/man1/taskset.1.html",
)


def _candidates(facts: Facts) -> list[Process]:
    """Processes holding a GPU, and every inference-server process."""
    pids = set(gpu_holders(facts)) | {s.process.pid for s in servers(facts)}
    return [p for p in facts.processes if p.pid in pids]


def _local(gpus: list[Gpu]) -> tuple[frozenset[int] | None, list[int]]:
    """Union of the GPUs' local CPUs and their NUMA nodes; None when any is unknown or -1."""
    cpus: set[int] = set()
    nodes: list[int] = []
    for g in gpus:
        if g.pci is None or g.pci.numa_node is None or g.pci.numa_node < 0 or not g.pci.cpus:
            return None, []
        cpus |= g.pci.cpus
        nodes.append(g.pci.numa_node)
    return frozenset(cpus), sorted(set(nodes))


def _fix(proc: Process, local: frozenset[int], nodes: list[int]) -> Fix:
    cpulist = format_cpulist(local)
    node = join(',', (str(n) for n in nodes))
    return make(
        "taskset", pid=proc.pid, cpus=cpulist, previous=proc.cpus_allowed_list or "0-" + str(max(local)),
        notes=(N_('taskset moves the threads now; memory already allocated stays where it is, so restart the worker with the right binding (launcher option, numactl wrapper, or the kubelet topology manager) to make it stick, for example under {v} <command>. Find who pinned it first: a launcher, a cgroup cpuset, or a CPU manager.', v=cmd('numactl', f'--cpunodebind={node}', f'--membind={node}', '--'))))


@check("numa.process_affinity", "GPU processes run on their GPU's NUMA node", "numa", acts="application", fixes=("taskset",), needs=("processes",), applies=gpu_absent)
def process_affinity(facts: Facts) -> Iterator[Finding]:
    """A process allowed only on CPUs outside its GPU's ``local_cpulist``: medium; partial overlap: low;
    an unpinned process (all CPUs): info. Only on hosts with more than one NUMA node that has CPUs.
    """
    if not facts.numa.multi_node or not facts.gpus.gpus:
        return
    all_cpus = frozenset().union(*(n.cpus for n in facts.numa.cpu_nodes))
    looked = 0
    unmapped = 0
    found = False
    for proc in _candidates(facts):
        gpus, how = gpus_of(facts, proc)
        if not gpus:
            unmapped += 1
            continue
        local, nodes = _local(gpus)
        allowed = proc.cpus_allowed
        if local is None or not allowed:
            continue
        looked += 1
        labels = join(', ', (f"GPU {g.index} ({g.address})" for g in gpus))
        evidence = (Evidence(f"{proc.origin}/status", f"Cpus_allowed_list: {proc.cpus_allowed_list}"),
                    *(Evidence(g.pci.attr("local_cpulist") if g.pci else g.address,
                               f"{g.pci.local_cpulist if g.pci else '?'} (node {g.pci.numa_node if g.pci else '?'})")
                      for g in gpus),
                    Evidence(how, f"pid {proc.pid} uses {labels}"))
        name = f"pid {proc.pid} ({proc.name or (proc.argv[0] if proc.argv else '?')})"
        inside = allowed & local
        if allowed <= local:
            continue
        if allowed >= all_cpus:
            yield Finding(INFO, process_label(facts, proc.pid), N_('{name} is not pinned; its GPU is on node {map}', name=name, map=join(', ', map(str, nodes))),
                          detail=N_("The scheduler may run it on any socket. Pinning to the GPU's node avoids cross-socket staging of host buffers."),
                          evidence=evidence, related=tuple(g.address for g in gpus))
            continue
        found = True
        far = not inside
        yield Finding(
            MEDIUM if far else LOW, process_label(facts, proc.pid),
            N_('{name} runs {v} off the NUMA node of {labels}', name=name, v=N_('entirely') if far else N_('partly'), labels=labels),
            detail=(N_("Allowed CPUs {cpus_allowed_list}; the GPU's local CPUs are {format_cpulist} (node {map}). Host-side buffers (pinned memory, NCCL proxy threads, tokenizer and scheduler work) cross the socket interconnect.", cpus_allowed_list=proc.cpus_allowed_list, format_cpulist=format_cpulist(local), map=join(', ', map(str, nodes)))),
            evidence=evidence, expected=N_('Cpus_allowed_list within {format_cpulist}', format_cpulist=format_cpulist(local)),
            observed=N_('Cpus_allowed_list {cpus_allowed_list}', cpus_allowed_list=proc.cpus_allowed_list),
            impact=Impact(25 if far else 8, N_('cross-socket host-to-device copies: typically 5-30% slower'), basis=N_('cross-socket host-device copies commonly measure 5-30% slower than socket-local ones (vendor NUMA tuning guides); applies to CPU-GPU copies, not GPU compute')),
            fix=_fix(proc, local, nodes), references=REFERENCES, related=tuple(g.address for g in gpus))
    if looked and not found:
        yield Finding(PASS, "node", N_("{looked} GPU process(es) run on their GPU's NUMA node", looked=looked))
    elif not looked and unmapped:
        yield Finding(UNKNOWN, "node", N_('which GPU {unmapped} inference process(es) use is unknown', unmapped=unmapped),
                      detail=N_('No NVML/nvidia-smi process list and no single-GPU CUDA_VISIBLE_DEVICES: affinity cannot be compared with GPU locality.'))
