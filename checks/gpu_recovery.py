"""gpu.recovery: the recovery action the driver asks for (reset, reboot, drain P2P), from NVML or nvidia-smi.

A GPU with a pending reset passes ECC and health counters (NVIDIA/DCGM#263, fixed in DCGM 4.5 with a
recovery-state check): the driver refuses new work on it or its results are suspect until the action is done.
Grading: ``reboot`` (and NVML's ``system_reboot``) is critical: the driver cannot recover the GPU without
rebooting the node, so every GPU on it goes out of service. ``reset``, ``drain_and_reset`` (and NVML's
``bus_reset``) are high: one GPU is out of service, the fix is local to it (drain, reset) and the other GPUs
keep serving. ``drain_p2p`` (and ``recover_imex_domain``) is medium: the GPU still computes, but peer-to-peer
(NVLink/PCIe P2P, IMEX) traffic must stop, which breaks or hangs tensor-parallel serving across GPUs.
The action is the finding's ``observed`` value, one word (``reset``, ``reboot``, ``drain_p2p``,
``drain_and_reset``, ``none``...), for an orchestrator to act on.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import is_consumer
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import CRITICAL, HIGH, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact, cmd
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: action -> (severity, what the driver asks for)
ACTIONS: dict[str, tuple[str, str]] = {
    "reboot": (CRITICAL, N_('a node reboot')),
    "system_reboot": (CRITICAL, N_('a system reboot')),
    "reset": (HIGH, N_('a GPU reset')),
    "drain_and_reset": (HIGH, N_('draining peer-to-peer traffic, then a GPU reset')),
    "bus_reset": (HIGH, N_("a reset of the GPU's PCIe bus")),
    "drain_p2p": (MEDIUM, N_('draining peer-to-peer (P2P/NVLink) traffic')),
    "recover_imex_domain": (MEDIUM, N_('recovering the IMEX domain')),
}
IMPACT = {CRITICAL: 100.0, HIGH: 80.0, MEDIUM: 40.0}
REFERENCES = (
    "https://docs.nvidia.com/deploy/xid-errors/index.html",
    "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceEnumvs.html",
    "https://github.com/NVIDIA/DCGM/issues/263",
)


def _fix(action: str, gpu: Gpu) -> Fix:
    target = str(gpu.index)
    verify = N_(' Afterwards `{v}` must show `GPU Recovery Action : None`.', v=cmd('nvidia-smi', '-q', '-i', target))
    if ACTIONS[action][0] == CRITICAL:
        return Fix(notes=N_('Drain the node (cordon it and let the workloads move), then reboot it (`sudo systemctl reboot`); a GPU reset does not clear this state.') + verify
                         + N_(' If it comes back after the reboot, run `dcgmi diag -r 3` and open a support case.'))
    if action in ("drain_p2p", "recover_imex_domain"):
        return Fix(notes=N_('Stop the multi-GPU (P2P/NVLink) jobs that use this GPU; single-GPU work may go on. ')
                         + (N_("Recover the IMEX domain (restart nvidia-imex on the domain's nodes). ")
                            if action == "recover_imex_domain" else "")
                         + N_('The driver clears the action when the traffic is drained.') + verify)
    notes = (N_('Drain the GPU first: cordon the node or stop the serving process, and check `')
             + cmd("nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv", "-i", target)
             + N_('` lists nothing.') + (N_(' Stop the P2P/NVLink peers using it as well.') if action == "drain_and_reset"
                                     else ""))
    notes += (N_(' On NVSwitch systems (HGX) reset all GPUs together or reboot instead.') + verify
              + N_(" Nothing to roll back: a reset only clears the GPU's state."))
    if is_consumer(gpu):
        notes += N_(' GeForce boards may refuse `nvidia-smi -r`: then reload the driver or reboot.')
    return make("gpu_reset", target=target, notes=notes)


@check("gpu.recovery", "GPU recovery action the driver asks for (reset, reboot, drain)", "gpu", acts="hardware",
       fixes=("gpu_reset",), needs=("gpus",))
def gpu_recovery(facts: Facts) -> Iterator[Finding]:
    """Critical when the driver asks for a reboot, high for a reset or drain-and-reset, medium for draining
    P2P traffic; pass when every GPU reports none; unknown when the driver does not report the action."""
    gpus = facts.gpus.gpus
    if not gpus:
        return
    where = facts.gpus.runtime_origin or "nvidia-smi"
    seen = [(g, g.runtime, g.runtime.recovery_action) for g in gpus
            if g.runtime is not None and g.runtime.recovery_action is not None]
    for gpu, rt, action in seen:
        label = gpu_label(facts, gpu.address)
        evidence = (Evidence(where, f"{label}: {rt.recovery_text}"),)
        if action == "none":
            continue
        if action not in ACTIONS:
            yield Finding(UNKNOWN, gpu.address, N_('{label}: recovery action not understood: {recovery_text}', label=label, recovery_text=rt.recovery_text),
                          detail=N_("The driver reports a recovery action this version of gnd does not know; read NVIDIA's Xid catalogue for what it asks."),
                          evidence=evidence, observed=action, references=REFERENCES)
            continue
        level, asks = ACTIONS[action]
        yield Finding(
            level, gpu.address, N_('{label} needs {asks} (driver recovery action: {action})', label=label, asks=asks, action=action),
            detail=N_('The NVIDIA driver asks for {asks} on {label}. ', asks=asks, label=label)
                   + (N_('Until then peer-to-peer work on it fails or hangs') if level == MEDIUM else
                      N_('Until then it refuses new work on the GPU or its results are suspect'))
                   + N_(", while ECC counters and most health checks still read clean. The kernel log's Xid 154 line (and the Xid before it) says what set it."),
            evidence=evidence, expected=N_('GPU Recovery Action: None'), observed=action,
            impact=Impact(IMPACT[level], N_('every GPU of the node is out of service until the reboot') if level == CRITICAL
                          else N_('this GPU is out of service until it is reset') if level == HIGH
                          else N_('multi-GPU (P2P/NVLink) work on this GPU fails or hangs until drained'),
                          basis=N_("the driver's recovery action (nvmlDeviceGpuRecoveryAction_t); NVIDIA/DCGM#263 shows a GPU in this state that DCGM's health check still called healthy")),
            fix=_fix(action, gpu), references=REFERENCES, confidence=0.95)
    blind = [g for g in gpus if g.runtime is not None and g.runtime.recovery_action is None]
    if blind:
        driver = facts.gpus.driver_version
        yield Finding(UNKNOWN, "node", N_('GPU recovery action not reported for {n_blind} GPU(s)', n_blind=len(blind)),
                      detail=N_('{where} (driver {v}) holds neither `GPU Recovery Action` nor `GPU Reset Status`: older drivers (before R535) have no such field, and a partial dump (`nvidia-smi -q -d PERFORMANCE`) leaves it out. A GPU waiting for a reset cannot be told from a healthy one here.', where=where, v=driver or 'version unknown'),
                      evidence=(Evidence(where, "no gpu_recovery_action or gpu_reset_status for "
                                         + join(', ', (gpu_label(facts, g.address) for g in blind[:8]))),),
                      fix=Fix(notes=N_('Upgrade to a driver that reports it (nvidia-smi -q shows `GPU Recovery Action`), or watch for Xid 154 in the kernel log.')),
                      references=REFERENCES)
    elif not any(g.runtime is not None for g in gpus):
        yield Finding(UNKNOWN, "node", N_('GPU recovery action not read: no driver view of the GPUs'),
                      evidence=(Evidence(where, facts.gpus.runtime_missing or "no NVML and no nvidia-smi output"),),
                      fix=Fix(notes=N_('Collect `nvidia-smi -q -x` (gnd collect does), or run where NVML is reachable.')))
    if seen and all(action == "none" for _, _, action in seen) and not blind:
        yield Finding(PASS, "node", N_('no GPU waits for a reset, reboot or drain ({n_seen} GPUs)', n_seen=len(seen)),
                      evidence=(Evidence(where, "recovery action none on every GPU"),), observed="none")
