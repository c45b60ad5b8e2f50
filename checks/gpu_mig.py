"""gpu.mig: a pending MIG mode change, or MIG enabled on a GPU that serving processes use whole."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import reported, smi_evidence
from doctor.derived.procs import servers
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import HIGH, MEDIUM, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html",)


def _claims_whole(facts: Facts, env: dict[str, str], gpu: Gpu) -> bool:
    """Whether a server with this environment uses ``gpu`` as a whole GPU (not through a MIG device)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return True  # sees every GPU
    uuid = (gpu.runtime.uuid or "").lower() if gpu.runtime else ""
    for item in (v.strip() for v in visible.split(",")):
        if item.isdigit() and int(item) == gpu.index:
            return True
        if item.upper().startswith("GPU-") and uuid and uuid.startswith(item.lower()):
            return True
    return False


def _word(on: bool | None) -> str:
    return "Enabled" if on else "Disabled" if on is False else "N/A"


@check("gpu.mig", "MIG mode pending a reset, or MIG on GPUs served whole", "gpu", acts="os", fixes=("mig_mode",), needs=("gpus",),
       reads=reads(env=("CUDA_VISIBLE_DEVICES",)))
def gpu_mig(facts: Facts) -> Iterator[Finding]:
    """High when MIG is enabled on a GPU that an inference server uses whole (``CUDA_VISIBLE_DEVICES``
    unset, or naming the GPU rather than one of its ``MIG-`` devices): CUDA sees no usable device there. Medium when the pending MIG mode
    differs from the current one (applied at the next GPU reset)."""
    gpus = [(g, rt) for g, rt in reported(facts) if rt.mig_mode is not None]
    if not gpus:
        return
    procs = [s for s in servers(facts) if s.root]
    found = 0
    for gpu, rt in gpus:
        label = gpu_label(facts, gpu.address)
        ev = smi_evidence(facts, gpu, N_('mig_mode current {word}, pending {word2}', word=_word(rt.mig_mode), word2=_word(rt.mig_mode_pending)))
        if rt.mig_mode_pending is not None and rt.mig_mode_pending != rt.mig_mode:
            found += 1
            yield Finding(
                MEDIUM, label, N_('MIG mode change pending: {word} now, {word2} after the next GPU reset', word=_word(rt.mig_mode), word2=_word(rt.mig_mode_pending)),
                detail=N_('`nvidia-smi -mig` was run but the GPU was never reset; the mode flips at the next reset or reboot and every process on the GPU must be stopped for that.'),
                evidence=(ev,), expected=N_('pending MIG mode equal to current'),
                observed=N_('current {word}, pending {word2}', word=_word(rt.mig_mode), word2=_word(rt.mig_mode_pending)),
                impact=Impact(10, N_("the GPU's shape changes at an unplanned reset"),
                          basis=N_('nvidia-smi: a pending MIG mode applies at the next GPU reset; nothing changes until then')),
                fix=make("mig_mode",
                         N_('Stop every process on the GPU before the reset. Rollback cancels the pending change (run it instead of the reset). MIG mode survives reboots.'),
                         index=gpu.index, enable=bool(rt.mig_mode_pending), previous=bool(rt.mig_mode), pending=True),
                references=REFERENCES, related=(gpu.address,))
        elif rt.mig_mode and (whole := [s for s in procs if _claims_whole(facts, s.process.env, gpu)]):
            found += 1
            names = join(', ', (f"pid {s.process.pid}" for s in whole[:3]))
            yield Finding(
                HIGH, label, N_('MIG is enabled but the inference servers use whole GPUs'),
                detail=N_('Servers on this node ({names}) use this GPU whole (CUDA_VISIBLE_DEVICES unset or naming the GPU, not one of its MIG devices). With MIG on, CUDA exposes only MIG instances of this GPU: a server that expects the whole GPU finds no device or a slice of its memory.', names=names),
                evidence=(ev, *[Evidence(f"{s.process.origin}/environ", "CUDA_VISIBLE_DEVICES="
                                         + s.process.env.get("CUDA_VISIBLE_DEVICES", "(unset)"))
                                for s in whole][:2]),
                expected=N_('MIG Disabled on GPUs served whole'), observed=N_('MIG Enabled'),
                impact=Impact(60, N_('the GPU serves nothing, or a fraction of its memory and SMs'),
                          basis=N_('NVIDIA MIG user guide: with MIG on, a process that names the whole GPU sees no CUDA device, and each instance holds a fraction of the SMs and memory')),
                fix=make("mig_mode",
                         N_('Stop the processes on the GPU first. MIG mode is stored on the GPU and survives reboots; also remove any MIG partitioning service (nvidia-mig-manager, mig-parted) that re-applies it.'), index=gpu.index, enable=False, previous=True, pending=False),
                references=REFERENCES, related=(gpu.address,))
    if not found:
        on = sum(1 for _, rt in gpus if rt.mig_mode)
        yield Finding(PASS, "node", N_('MIG mode settled on {n_gpus} GPUs ({on} with MIG, none used whole by a server)', n_gpus=len(gpus), on=on)
                      if on else N_('MIG disabled with nothing pending on {n_gpus} GPUs', n_gpus=len(gpus)),
                      evidence=(smi_evidence(facts, gpus[0][0], f"mig_mode {_word(gpus[0][1].mig_mode)}"),))
