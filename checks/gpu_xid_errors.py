"""gpu.xid_errors: NVIDIA Xid events in the kernel log (fallen off the bus, ECC, row remap, NVLink, GSP)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from doctor.derived.gpu import gpu_absent
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.facts.kernel_log import XidEvent
from doctor.findings import (
    CRITICAL,
    HIGH,
    INFO,
    LOW,
    PASS,
    UNKNOWN,
    Evidence,
    Finding,
    Fix,
    Impact,
    severity_order,
)
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: Xid -> (severity, meaning), after NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html:
#: critical where the catalogue's resolution is a reboot or the GPU is unusable, high where it is RESET_GPU or an
#: NVLink workflow, low for RESTART_APP faults); codes not listed are reported as info. Codes marked Unused there
#: (122-125 are SPI/InfoROM, not C2C) and IGNORE ones (137, 141) stay info. Xid 45 (preemptive cleanup after
#: another error: benign alone, a symptom beside 79/48) needs context a fixed grade cannot give: it stays info.
XID_TABLE: dict[int, tuple[str, str]] = {
    79: (CRITICAL, N_('GPU has fallen off the bus')),
    95: (CRITICAL, N_('uncontained ECC error')),
    64: (CRITICAL, N_('ECC page retirement or row remapping failure')),
    140: (CRITICAL, N_('unrecovered ECC error (escaped containment)')),
    143: (CRITICAL, N_('GPU initialization failure')),
    48: (HIGH, N_('double-bit ECC error')),
    94: (HIGH, N_('contained ECC error')),
    63: (HIGH, N_('ECC page retirement or row remapping recording event')),
    74: (HIGH, N_('NVLink error')),
    119: (HIGH, N_('GSP RPC timeout')),
    120: (HIGH, N_('GSP error')),
    136: (HIGH, N_('NVLink link training failed')),
    144: (HIGH, N_('NVLink SAW error')),
    145: (HIGH, N_('NVLink RLW error')),
    146: (HIGH, N_('NVLink TLW error')),
    147: (HIGH, N_('NVLink TREX error')),
    148: (HIGH, N_('NVLink NVLPW_CTRL error')),
    149: (HIGH, N_('NVLink NETIR error')),
    150: (HIGH, N_('NVLink MSE error')),
    154: (HIGH, N_('GPU recovery action changed (the driver asks for a reset, reboot or drain: see gpu.recovery)')),
    155: (HIGH, N_('NVLink software-defined error')),
    156: (HIGH, N_('resource retirement event (a GPU reset applies it)')),
    158: (HIGH, N_('GPU fatal timeout')),
    121: (LOW, N_('C2C link corrected errors (no operational impact; a GPU reset retrains the link)')),
    13: (LOW, N_('graphics engine exception (usually an application fault)')),
    31: (LOW, N_('GPU memory page fault (usually an application fault)')),
    43: (LOW, N_('GPU stopped processing (usually an application fault)')),
}
OTHER = (INFO, N_("see NVIDIA's Xid catalog"))
IMPACT = {CRITICAL: 95.0, HIGH: 60.0, LOW: 5.0, INFO: 1.0}
#: Evidence lines shown per GPU.
MAX_EVIDENCE = 5
REFERENCES = (
    "https://docs.nvidia.com/deploy/xid-errors/index.html",
    "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
)


def _grade(xid: int) -> tuple[str, str]:
    return XID_TABLE.get(xid, OTHER)


def _evidence(origin: str, events: list[XidEvent]) -> tuple[list[Evidence], int]:
    """Distinct messages, worst first, at most MAX_EVIDENCE, each with its count; and how many distinct."""
    counts = Counter(e.text for e in events)
    first = {e.text: e for e in reversed(events)}
    order = sorted(counts, key=lambda t: (severity_order(_grade(first[t].xid)[0]), -counts[t]))
    shown = []
    for text in order[:MAX_EVIDENCE]:
        stamp = first[text].timestamp
        value = (f"[{stamp}] " if stamp else "") + text + (f" (x{counts[text]})" if counts[text] > 1 else "")
        shown.append(Evidence(origin, value))
    return shown, len(order)


def _fix(level: str, target: str, codes: set[int]) -> Fix:
    if level in (LOW, INFO):
        return Fix(notes=N_("Usually the application (illegal address, bad kernel, killed context), not the GPU: check the failing job's logs. Investigate the hardware only if it recurs with different workloads."))
    notes = [N_('Drain the GPU first (cordon the node or stop the serving process).'),
             N_('A reset needs every process on the GPU stopped; on NVSwitch systems (HGX) reset all GPUs together or reboot the node instead.')]
    if 79 in codes:
        notes.append(N_('After Xid 79 a reset usually fails: power-cycle the node, then check the riser, power cables and slot.'))
    if codes & {48, 63, 64, 94, 95}:
        notes.append(N_('Check `nvidia-smi -q -d ROW_REMAPPER,ECC` afterwards; a pending row remap is applied by the reset.'))
    notes.append(N_('If it recurs after the reset, run the field diagnostic (`dcgmi diag -r 3`) and RMA the GPU.'))
    return make("gpu_reset", target=target, notes=join(' ', notes))


@check("gpu.xid_errors", "NVIDIA Xid errors in the kernel log", "gpu", fixes=("gpu_reset",), needs=("kernel_log",), applies=gpu_absent)
def gpu_xid_errors(facts: Facts) -> Iterator[Finding]:
    """Critical for Xid 79/95/64, high for 48/94/63/74/119/120, low for the usual application faults
    13/31/43, info for other codes; unknown when dmesg could not be read on a node with GPUs."""
    log = facts.kernel_log
    gpus = facts.gpus.gpus
    if not log.readable:
        if gpus:
            yield Finding(UNKNOWN, "node", N_('kernel log not available: Xid errors cannot be checked'),
                          detail=N_('NVIDIA reports GPU faults (fallen off the bus, ECC, NVLink) as Xid lines in the kernel log only.'),
                          evidence=(Evidence(log.origin, log.missing or "dmesg not recorded"),),
                          fix=Fix(notes=N_('Run the doctor as root, or collect with `sudo gnd collect`.')))
        return
    if not gpus and not log.xids:
        return
    by_address: dict[str, list[XidEvent]] = {}
    for event in log.xids:
        by_address.setdefault(event.address, []).append(event)
    for address, events in sorted(by_address.items()):
        codes = {e.xid for e in events}
        level = min((_grade(c)[0] for c in codes), key=severity_order)
        gpu = facts.gpus.by_address(address)
        label = gpu_label(facts, address)
        worst = sorted(c for c in codes if _grade(c)[0] == level)
        evidence, distinct = _evidence(log.origin, events)
        bandwidth = log.bandwidth_of(address)
        if bandwidth is not None and level in (CRITICAL, HIGH):
            evidence.append(Evidence(log.origin, bandwidth.text))
        summary = join(', ', (f"Xid {c} ({_grade(c)[1]})" for c in worst))
        counts = Counter(e.xid for e in events)
        observed = join(', ', (f"Xid {c} x{counts[c]}" for c in sorted(counts)))
        yield Finding(
            level, address, N_('{summary} on {label}', summary=summary, label=label),
            detail=N_('The kernel log holds {n_events} Xid line(s) for {label}: {observed}', n_events=len(events), label=label, observed=observed)
                   + (N_('; {distinct} more distinct message(s) not shown', distinct=distinct - MAX_EVIDENCE) if distinct > MAX_EVIDENCE
                      else "")
                   + N_('. The log covers events since boot (or since the ring buffer wrapped); a reset may already have cleared the fault.'),
            evidence=tuple(evidence), expected=N_('no Xid errors'), observed=observed,
            impact=Impact(IMPACT[level], N_('the GPU is lost or its results are suspect until reset or replaced')
                          if level in (CRITICAL, HIGH) else N_('a failed job; the GPU itself is usually fine'), basis=N_("NVIDIA's Xid catalogue for the codes in the evidence (which ones need a reset or the GPU replaced)")),
            fix=_fix(level, str(gpu.index) if gpu is not None else address, codes),
            references=REFERENCES, confidence=0.9)
    if not log.xids:
        yield Finding(PASS, "node", N_('no NVIDIA Xid errors in the kernel log ({n_gpus} GPUs)', n_gpus=len(gpus)),
                      evidence=(Evidence(log.origin, "no 'NVRM: Xid' line"),))
