"""numa.kubelet_policy: kubelet CPU and topology managers off on a multi-NUMA GPU node."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.kubelet import options, reservations
from doctor.facts import Facts, Kubelet
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.inputs import whole
from doctor.registry import check

#: config key, command-line flag, kubelet default, recommended value
POLICIES = (
    ("cpuManagerPolicy", "cpu-manager-policy", "none", "static"),
    ("topologyManagerPolicy", "topology-manager-policy", "none", "single-numa-node"),
)
SCOPE = ("topologyManagerScope", "topology-manager-scope", "container", "pod")
MEMORY = ("memoryManagerPolicy", "memory-manager-policy", "None")
#: topology policies that admit a pod whose GPUs, NICs and CPUs sit on different NUMA nodes
ADMITS_MISALIGNED = frozenset({"best-effort"})
REFERENCES = (
    "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/",
    "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/",
    "https://kubernetes.io/docs/concepts/policy/node-resource-managers/#full-pcpus-only",
    "https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/",
)
OPTIONS_NONE_DOC = N_("kubelet CPU manager: the none policy accepts no options (\"None policy: received unsupported "
                    "options\"), so cpuManagerPolicyOptions without cpuManagerPolicy: static stops the kubelet at start")
#: Kubernetes memory manager documentation, "Reserved memory flag": sum(reserved-memory(i)) = kube-reserved +
#: system-reserved + eviction-threshold, where i is a NUMA node; the kubelet does not start otherwise.
RESERVED_DOC = N_("Kubernetes memory manager documentation: with the Static policy \"sum(reserved-memory(i)) = "
                "kube-reserved + system-reserved + eviction-threshold\" (i: each NUMA node), checked when the "
                "kubelet starts")


def _fix(kubelet: Kubelet, node: str, wanted: dict[str, str]) -> Fix:
    config = "/" + (kubelet.origin or "var/lib/kubelet/config.yaml")
    flags_note = ""
    overriding = [flag for key, flag, _, _ in (*POLICIES, SCOPE) if key in wanted and flag in kubelet.flags]
    if overriding:
        flags_note = (N_(' The flags {v} in kubeadm-flags.env or a kubelet drop-in override the config file: change them there too.', v=join(', ', ('--' + f for f in overriding))))
    settings = {key: [value, key in kubelet.settings] for key, value in wanted.items()}
    return make("kubelet_policy", config=config, node=node, settings=settings,
                notes=(N_('The kubelet refuses to start when cpu_manager_state was written under another policy, so it must be removed on every policy change (with the node drained). The static policy needs reserved CPUs (reservedSystemCPUs or kube/systemReserved cpu). Only Guaranteed pods with integer CPU requests are aligned.') + flags_note))


def _memory_note(memory: str | None) -> str:
    if (memory or MEMORY[2]).strip().lower() == "static":
        return N_("memoryManagerPolicy Static also keeps Guaranteed pods' memory on their NUMA node.")
    return (N_("memoryManagerPolicy is None: pods' memory is not NUMA-aligned; Static needs reservedMemory per NUMA node in the kubelet config before it is switched on."))


def _no_kubelet(facts: Facts) -> str | None:
    """No kubelet configuration (told only when it was read whole)."""
    return N_("no kubelet configuration") if facts.kubelet is None and whole(facts, "kubelet") else None


@check("numa.kubelet_policy", "Kubelet CPU and topology manager on multi-NUMA GPU nodes", "numa", acts="os",
       fixes=("kubelet_policy",), needs=("kubelet", "numa", "gpus"), applies=_no_kubelet)
def kubelet_policy(facts: Facts) -> Iterator[Finding]:
    """``cpuManagerPolicy`` or ``topologyManagerPolicy`` at ``none`` (or unset) on a multi-NUMA GPU node: medium.
    Recommends ``static`` + ``single-numa-node`` with ``topologyManagerScope: pod``. ``best-effort`` with active
    RDMA ports: low (misaligned pods are admitted). ``memoryManagerPolicy`` is reported, never changed.
    """
    kubelet = facts.kubelet
    if kubelet is None or not facts.numa.multi_node or not facts.gpus.gpus:
        return
    yield from _managers(facts, kubelet)
    evidence = []
    wanted: dict[str, str] = {}
    observed = []
    for key, flag, default, recommended in POLICIES:
        value, origin = kubelet.policy(key, flag)
        effective = (value or default).strip().lower()
        observed.append(f"{key}={value or default + ' (default)'}")
        evidence.append(Evidence(origin or (kubelet.origin or "kubelet config"), f"{key}: {value or 'unset'}"))
        if effective == "none":
            wanted[key] = recommended
    memory, memory_origin = kubelet.policy(MEMORY[0], MEMORY[1])
    evidence.append(Evidence(memory_origin or (kubelet.origin or "kubelet config"),
                             f"{MEMORY[0]}: {memory or 'unset (' + MEMORY[2] + ')'}"))
    topology = (kubelet.policy(POLICIES[1][0], POLICIES[1][1])[0] or "none").strip().lower()
    if not wanted and topology in ADMITS_MISALIGNED and any(p.active for p in facts.rdma):
        node = facts.host.hostname or "<node>"
        yield Finding(
            LOW, "node", N_('kubelet topologyManagerPolicy best-effort admits pods with GPUs and NICs on other nodes'),
            detail=(N_("best-effort only prefers alignment: a pod whose GPUs, RDMA NICs and CPUs cannot share a NUMA node is admitted anyway, and GPUDirect RDMA then crosses the socket link. single-numa-node rejects such pods (use it when each pod fits one node's GPUs); restricted admits a pod only with its preferred alignment, which also fits whole-node pods. ") + _memory_note(memory)),
            evidence=tuple(evidence), expected=N_('topologyManagerPolicy: single-numa-node (or restricted)'),
            observed=N_('topologyManagerPolicy: best-effort'),
            impact=Impact(8, N_('misaligned pods lose GPUDirect locality silently'),
                          basis=N_('Kubernetes topology manager documentation: best-effort admits pods whose GPUs and NICs sit on different NUMA nodes')),
            fix=_fix(kubelet, node, {POLICIES[1][0]: POLICIES[1][3]}), references=REFERENCES)
        return
    if not wanted:
        yield Finding(PASS, "node", N_('kubelet aligns CPUs and devices to NUMA nodes'), evidence=tuple(evidence),
                      detail=_memory_note(memory))
        return
    scope, _ = kubelet.policy(SCOPE[0], SCOPE[1])
    if (scope or SCOPE[2]).lower() != SCOPE[3]:
        wanted[SCOPE[0]] = SCOPE[3]
    node = facts.host.hostname or "<node>"
    yield Finding(
        MEDIUM, "node", N_("kubelet does not align pods' CPUs and GPUs to one NUMA node"),
        detail=(N_('{n_cpu_nodes} NUMA nodes with CPUs and {n_gpus} GPUs, but {observed}. A Guaranteed inference pod gets CPUs from any socket, far from its GPUs and NICs.', n_cpu_nodes=len(facts.numa.cpu_nodes), n_gpus=len(facts.gpus.gpus), observed=join(', ', observed))),
        evidence=tuple(evidence), expected=N_('cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node (or restricted), topologyManagerScope: pod'),
        observed=join(', ', observed),
        impact=Impact(15, N_('cross-socket host-device traffic for pods: typically 5-30%'), basis=N_('cross-socket host-device copies commonly measure 5-30% slower than socket-local ones (vendor NUMA tuning guides); applies to CPU-GPU copies, not GPU compute')),
        fix=_fix(kubelet, node, wanted), references=REFERENCES)


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.4g} MiB"


def _managers(facts: Facts, kubelet: Kubelet) -> Iterator[Finding]:
    """CPU manager options and the memory manager's reservations: what they do, and layouts that keep the
    kubelet from starting."""
    origin = kubelet.origin or "kubelet config"
    opts = options(kubelet)
    cpu = (kubelet.policy(POLICIES[0][0], POLICIES[0][1])[0] or POLICIES[0][2]).strip().lower()
    if opts and cpu != "static":
        yield Finding(
            HIGH, "kubelet", N_('cpuManagerPolicyOptions ({v}) without cpuManagerPolicy: static: the kubelet does not start', v=', '.join(opts)),
            detail=(N_('The none CPU manager policy refuses any option, so the kubelet exits at start with this configuration (one running now was started before it was written). No pod can be scheduled on the node until it is fixed.')),
            evidence=(Evidence(origin, f"cpuManagerPolicy: {cpu}; cpuManagerPolicyOptions: {opts}"),),
            expected=N_('cpuManagerPolicy: static with its options, or no options'), observed=N_('policy {cpu}, options {opts}', cpu=cpu, opts=opts),
            impact=Impact(90, N_('the node serves nothing once the kubelet restarts'), basis=OPTIONS_NONE_DOC),
            fix=Fix(notes=N_('Set cpuManagerPolicy: static (drain the node and remove cpu_manager_state first) or remove cpuManagerPolicyOptions, then restart the kubelet.')),
            references=REFERENCES)
    elif opts.get("full-pcpus-only", "").strip().lower() == "true":
        yield Finding(
            INFO, "kubelet", N_('cpuManagerPolicyOptions full-pcpus-only: Guaranteed pods get whole physical cores'),
            detail=(N_("The server's CPU threads (scheduler, tokenizer, NCCL proxy) share no core with another pod's, which steadies latency a little; GPU throughput does not change. A Guaranteed pod whose CPU request is odd on an SMT node is rejected with SMTAlignmentError: request even CPU counts.")),
            evidence=(Evidence(origin, f"cpuManagerPolicyOptions: {opts}"),), references=REFERENCES)
    memory = (kubelet.policy(MEMORY[0], MEMORY[1])[0] or MEMORY[2]).strip().lower()
    if memory != "static":
        return
    r = reservations(kubelet)
    if r is None:
        yield Finding(INFO, "kubelet", N_('memoryManagerPolicy Static: the reserved memory could not be read'),
                      detail=N_('reservedMemory, kubeReserved, systemReserved or evictionHard is in a form gnd does not read, so whether the kubelet accepts the layout is not judged.'),
                      evidence=(Evidence(origin, "memoryManagerPolicy: Static"),), references=REFERENCES)
        return
    nodes = ", ".join(f"node {n}: {_gib(v)}" for n, v in r.per_node) or "none"
    if r.reserved != r.required:
        yield Finding(
            HIGH, "kubelet", N_('reservedMemory sums to {v}, the Static memory manager needs {v2}: the kubelet does not start', v=_gib(r.reserved), v2=_gib(r.required)),
            detail=(N_('reservedMemory ({nodes}) must add up over the NUMA nodes to kubeReserved ({v}) + systemReserved ({v2}) + the hard eviction threshold ({v3}). With any other sum the kubelet refuses to start (one running now was started before the change).', nodes=nodes, v=_gib(r.kube), v2=_gib(r.system), v3=_gib(r.eviction))),
            evidence=(Evidence(origin, f"memoryManagerPolicy: Static; reservedMemory {nodes}; kubeReserved "
                                       f"{_gib(r.kube)}, systemReserved {_gib(r.system)}, eviction {_gib(r.eviction)}"),),
            expected=N_('reservedMemory summing to {required} bytes', required=r.required), observed=N_('{reserved} bytes', reserved=r.reserved),
            impact=Impact(90, N_('the node serves nothing once the kubelet restarts'), basis=RESERVED_DOC),
            fix=Fix(notes=(N_('Split {v} over the NUMA nodes in reservedMemory (for example on node 0), drain the node, remove /var/lib/kubelet/memory_manager_state and restart the kubelet.', v=_gib(r.required)))),
            references=REFERENCES)
        return
    yield Finding(
        INFO, "kubelet", N_("memoryManagerPolicy Static: Guaranteed pods' memory stays on their NUMA node"),
        detail=(N_("reservedMemory ({nodes}) matches kubeReserved + systemReserved + eviction ({v}). With the topology manager the pod's host memory (pinned buffers, KV offload) sits next to its GPUs; GPU compute does not change.", nodes=nodes, v=_gib(r.required))),
        evidence=(Evidence(origin, f"reservedMemory {nodes}"),), references=REFERENCES)
