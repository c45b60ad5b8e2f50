"""gpu.row_remap: pending or failed HBM row remaps and uncorrectable ECC errors (nvidia-smi)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import CRITICAL, HIGH, PASS, Evidence, Finding, Fix, Impact, cmd, severity_order
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

IMPACT = {CRITICAL: 95.0, HIGH: 60.0}
REFERENCES = (
    "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
    "https://docs.nvidia.com/deploy/xid-errors/index.html",
)


def _reported(gpu: Gpu) -> bool:
    rt = gpu.runtime
    return rt is not None and (rt.remap_pending is not None or rt.remap_failure is not None
                               or rt.ecc_volatile_uncorrectable is not None)


def _problems(gpu: Gpu) -> list[tuple[str, str]]:
    """(severity, observation) for each problem the GPU reports."""
    rt = gpu.runtime
    if rt is None:
        return []
    out: list[tuple[str, str]] = []
    if rt.remap_failure:
        out.append((CRITICAL, "Remapping Failure Occurred: Yes"))
    if rt.remap_pending:
        out.append((HIGH, "Remapped Rows Pending: Yes"))
    if rt.ecc_volatile_uncorrectable:
        out.append((HIGH, N_('volatile uncorrectable ECC errors: {ecc_volatile_uncorrectable}', ecc_volatile_uncorrectable=rt.ecc_volatile_uncorrectable)))
    return out


def _fix(level: str, gpu: Gpu, failure: bool) -> Fix:
    target = str(gpu.index)
    notes = (N_('Drain the GPU first; a reset needs every process on it stopped (on NVSwitch systems reset all GPUs together or reboot). The reset applies a pending remap; re-check with `')
             + cmd("nvidia-smi", "-q", "-d", "ROW_REMAPPER,ECC", "-i", target) + "`.")
    if failure:
        notes = (N_('The GPU ran out of spare rows or could not remap: take it out of service, run the field diagnostic (`dcgmi diag -r 3`) and RMA it if the flag is confirmed. ') + notes)
    else:
        notes += N_(' Results computed since the uncorrectable error are suspect. RMA if errors recur after the reset.')
    return make("gpu_reset", target=target, notes=notes)


@check("gpu.row_remap", "GPU memory row remapping and uncorrectable ECC errors", "gpu", acts="hardware", fixes=("gpu_reset",), needs=("gpus",))
def gpu_row_remap(facts: Facts) -> Iterator[Finding]:
    """Critical for a remapping failure, high for a pending remap (needs a GPU reset) or volatile
    uncorrectable ECC errors; silent when the driver's view has no row-remapper or ECC data."""
    gpus = [g for g in facts.gpus.gpus if _reported(g)]
    if not gpus:
        return
    where = facts.gpus.runtime_origin or "nvidia-smi"
    flagged = 0
    for gpu in gpus:
        problems = _problems(gpu)
        if not problems:
            continue
        flagged += 1
        rt = gpu.runtime
        level = min((p[0] for p in problems), key=severity_order)
        label = gpu_label(facts, gpu.address)
        observed = join('; ', (p[1] for p in problems))
        rows = ("" if rt is None or rt.remapped_rows_uncorrectable is None else
                N_(' Rows remapped so far: {v} for correctable, {remapped_rows_uncorrectable} for uncorrectable errors.', v=rt.remapped_rows_correctable or 0, remapped_rows_uncorrectable=rt.remapped_rows_uncorrectable))
        yield Finding(
            level, gpu.address, N_('{label}: {observed}', label=label, observed=observed),
            detail=N_('{label} reports {observed}.{rows} A pending remap takes effect only after a GPU reset; a remapping failure means the memory can no longer be repaired.', label=label, observed=observed, rows=rows),
            evidence=tuple(Evidence(where, f"{label}: {p[1]}") for p in problems),
            expected=N_('Pending: No, Remapping Failure Occurred: No, 0 volatile uncorrectable ECC errors'),
            observed=observed,
            impact=Impact(IMPACT[level], N_('uncorrectable memory errors kill jobs and can corrupt results'), basis=N_("NVIDIA's row-remapping documentation: pending or failed remaps need a GPU reset or service; uncorrectable errors end the process using that memory")),
            fix=_fix(level, gpu, level == CRITICAL), references=REFERENCES)
    if not flagged:
        yield Finding(PASS, "node", N_('no pending or failed row remap, no uncorrectable ECC error on {n_gpus} GPUs', n_gpus=len(gpus)),
                      evidence=(Evidence(where, "Remapped Rows Pending: No, Remapping Failure Occurred: No, "
                                                "volatile uncorrectable ECC: 0"),))
