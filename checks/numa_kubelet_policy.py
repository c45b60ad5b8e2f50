"""numa.kubelet_policy: kubelet CPU and topology managers off on a multi-NUMA GPU node."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts, Kubelet
from doctor.findings import LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
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
STATE_FILES = ("/var/lib/kubelet/cpu_manager_state", "/var/lib/kubelet/memory_manager_state")
REFERENCES = (
    "https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/",
    "https://kubernetes.io/docs/tasks/administer-cluster/cpu-management-policies/",
)


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


@check("numa.kubelet_policy", "Kubelet CPU and topology manager on multi-NUMA GPU nodes", "numa",
       fixes=("kubelet_policy",))
def kubelet_policy(facts: Facts) -> Iterator[Finding]:
    """``cpuManagerPolicy`` or ``topologyManagerPolicy`` at ``none`` (or unset) on a multi-NUMA GPU node: medium.
    Recommends ``static`` + ``single-numa-node`` with ``topologyManagerScope: pod``. ``best-effort`` with active
    RDMA ports: low (misaligned pods are admitted). ``memoryManagerPolicy`` is reported, never changed.
    """
    kubelet = facts.kubelet
    if kubelet is None or not facts.numa.multi_node or not facts.gpus.gpus:
        return
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
