"""gpu.compute_mode: a GPU left in Exclusive_Process or Prohibited compute mode."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import reported, smi_evidence
from doctor.derived.procs import gpus_of, servers
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import HIGH, LOW, MEDIUM, PASS, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",
              "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#compute-modes")
EXCLUSIVE = ("exclusive_process", "exclusive_thread")
PROHIBITED = "prohibited"
#: nvidia-smi ``-c`` argument for each mode name nvidia-smi prints
SMI_ARG = {"default": "DEFAULT", "exclusive_process": "EXCLUSIVE_PROCESS", "exclusive_thread": "EXCLUSIVE_THREAD",
           "prohibited": "PROHIBITED"}


@check("gpu.compute_mode", "GPUs left in Exclusive_Process or Prohibited compute mode", "gpu", acts="os",
       fixes=("compute_mode",), needs=("gpus",))
def gpu_compute_mode(facts: Facts) -> Iterator[Finding]:
    """High for ``Prohibited`` (no CUDA context can be created). For ``Exclusive_Process``: medium when
    several processes use the GPU (the second one fails with cudaErrorDevicesUnavailable), else low."""
    gpus = [(g, rt) for g, rt in reported(facts) if rt.compute_mode]
    if not gpus:
        return
    users: dict[str, set[int]] = {}
    for s in servers(facts):
        for g in gpus_of(facts, s.process)[0]:
            users.setdefault(g.address, set()).add(s.process.pid)
    found = 0
    for gpu, rt in gpus:
        mode = (rt.compute_mode or "").lower()
        if mode not in EXCLUSIVE and mode != PROHIBITED:
            continue
        found += 1
        pids = users.get(gpu.address, set()) | {p.pid for p in rt.processes}
        if mode == PROHIBITED:
            sev, title, score = HIGH, N_('compute mode Prohibited: no process can use this GPU'), 100.0
        elif len(pids) > 1:
            sev, title, score = MEDIUM, N_('compute mode {compute_mode} while {n_pids} processes use the GPU', compute_mode=rt.compute_mode, n_pids=len(pids)), 50.0
        else:
            sev, title, score = LOW, N_('compute mode {compute_mode}: a second process on this GPU will fail', compute_mode=rt.compute_mode), 5.0
        yield Finding(
            sev, gpu_label(facts, gpu.address), title,
            detail=N_('In this mode the driver refuses further CUDA contexts (cudaErrorDevicesUnavailable): a second replica, a profiler, a health probe or a framework helper process on the same GPU fails. Compute mode resets to Default when the driver reloads, so something set it on this boot.'),
            evidence=(smi_evidence(facts, gpu, f"compute_mode {rt.compute_mode}"
                                   + (f"; processes {join(', ', map(str, sorted(pids)))}" if pids else "")),),
            expected="Default", observed=rt.compute_mode or "",
            impact=Impact(score, N_('processes that share the GPU fail to start'),
                          basis=N_('nvidia-smi documentation of compute modes: Exclusive_Process admits one CUDA context, Prohibited none')),
            fix=make("compute_mode",
                     N_('Persistent: remove the `nvidia-smi -c` call (a systemd unit, a boot script or a scheduler prolog) that sets it; Default is what the driver loads with.'),
                     index=gpu.index, previous=SMI_ARG[mode]),
            references=REFERENCES, related=(gpu.address,))
    if not found:
        yield Finding(PASS, "node", N_('compute mode Default on {n_gpus} GPUs', n_gpus=len(gpus)),
                      evidence=(smi_evidence(facts, gpus[0][0], f"compute_mode {gpus[0][1].compute_mode}"),))
