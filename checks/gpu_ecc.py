"""gpu.ecc: ECC disabled on a data-centre GPU, or an ECC mode change pending until the next GPU reset."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import is_datacentre, reported, smi_evidence
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",)
RESET_NOTE = (N_('Stop every process on the GPU first (`nvidia-smi -q -d PIDS`); the reset applies the pending mode. ECC mode is stored on the GPU and survives reboots.'))


def _word(on: bool | None) -> str:
    return "Enabled" if on else "Disabled" if on is False else "N/A"


@check("gpu.ecc", "ECC disabled or an ECC mode change pending a GPU reset", "gpu", acts="os", fixes=("ecc_mode",), needs=("gpus",))
def gpu_ecc(facts: Facts) -> Iterator[Finding]:
    """Medium when a data-centre GPU runs with ECC disabled (memory errors silently corrupt results) or
    its pending ECC mode differs from the current one (someone ran ``nvidia-smi -e`` and never reset it)."""
    gpus = [(g, rt) for g, rt in reported(facts) if is_datacentre(g) and rt.ecc_mode is not None]
    if not gpus:
        return
    found = 0
    for gpu, rt in gpus:
        label = gpu_label(facts, gpu.address)
        ev = (smi_evidence(facts, gpu, N_('ecc_mode current {word}, pending {word2}', word=_word(rt.ecc_mode), word2=_word(rt.ecc_mode_pending))),)
        if rt.ecc_mode_pending is not None and rt.ecc_mode_pending != rt.ecc_mode:
            found += 1
            yield Finding(
                MEDIUM, label, N_('ECC mode change pending: {word} now, {word2} after the next GPU reset', word=_word(rt.ecc_mode), word2=_word(rt.ecc_mode_pending)),
                detail=N_('A pending mode takes effect at the next GPU reset or reboot, so the GPU will change behaviour (and usable memory) at an unplanned moment.'),
                evidence=ev, expected=N_('pending ECC mode equal to current'), observed=N_('current {word}, pending {word2}', word=_word(rt.ecc_mode), word2=_word(rt.ecc_mode_pending)),
                impact=Impact(5, N_('the GPU changes ECC mode at the next reset; a reset is needed to settle it'),
                          basis=N_('nvidia-smi: a pending ECC mode applies at the next GPU reset or reboot; no throughput is lost until then')),
                fix=make("ecc_mode", RESET_NOTE + N_(' Rollback cancels the pending change instead (run it before the reset).'), index=gpu.index, enable=bool(rt.ecc_mode_pending), previous=bool(rt.ecc_mode),
                         pending=True),
                references=REFERENCES, related=(gpu.address,))
        elif rt.ecc_mode is False:
            found += 1
            yield Finding(
                MEDIUM, label, N_('ECC is disabled on a data-centre GPU'),
                detail=N_('Without ECC, memory bit flips go undetected: wrong tokens or NaNs instead of an Xid 48/94 and a clean failure; row remapping also stops protecting the GPU.'),
                evidence=ev, expected=N_('ECC Enabled'), observed=N_('ECC Disabled'),
                impact=Impact(5, N_('silent data corruption risk; no throughput at stake'),
                          basis=N_('ECC off trades a few percent of memory bandwidth for undetected bit errors; the score reflects risk, not speed')),
                fix=make("ecc_mode", RESET_NOTE, index=gpu.index, enable=True, previous=False, pending=False),
                references=REFERENCES, related=(gpu.address,))
    if not found:
        yield Finding(PASS, "node", N_('ECC enabled with nothing pending on {n_gpus} data-centre GPUs', n_gpus=len(gpus)),
                      evidence=(smi_evidence(facts, gpus[0][0], "ecc_mode Enabled/Enabled"),))
