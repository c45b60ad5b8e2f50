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
    MEDIUM,
    PASS,
    UNKNOWN,
    Actor,
    Evidence,
    Finding,
    Fix,
    Impact,
    severity_order,
)
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check
from doctor.xid_catalog import LAST_CODE, entry, nvlink_rule

#: Xid -> (severity, meaning): the curated grades, after NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/
#: analyzing-xid-catalog.html): critical where the catalogue's resolution is a reboot or the GPU is unusable, high
#: where it is RESET_GPU or an NVLink workflow, low for RESTART_APP faults. Codes not listed here are graded from
#: the catalogue's immediate resolution bucket (doctor/xid_catalog.py, every code through R595) by BUCKET_GRADE;
#: codes newer than that table are info. Codes marked Unused there (122-125 are SPI/InfoROM, not C2C) and IGNORE
#: ones (137, 141) stay info. Xid 45 (preemptive cleanup after another error: benign alone, a symptom beside 79/48)
#: needs context a fixed grade cannot give: it stays info. 162-176 have no published resolution yet: those that
#: name a fatal condition (PCIe fatal timeout, micro-controller halt, uncorrectable DRAM/SRAM beside Xid 48, fatal
#: C2C link failure, memory subsystem error) are graded as RESET_GPU codes; reduced memory capacity medium.
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
    167: (HIGH, N_('PCIe fatal timeout')),
    169: (HIGH, N_('internal micro-controller (SEC2) halt')),
    171: (HIGH, N_('uncorrectable DRAM error')),
    172: (HIGH, N_('uncorrectable SRAM error')),
    173: (HIGH, N_('fatal C2C link failure')),
    175: (HIGH, N_('memory subsystem error')),
    168: (MEDIUM, N_('reduced GPU memory capacity')),
}
#: The catalogue's immediate resolution bucket -> severity, for codes XID_TABLE does not grade
BUCKET_GRADE = {"RESTART_BM": CRITICAL, "RESET_GPU": HIGH, "RESTART_VM": HIGH, "WORKFLOW_XID_48": HIGH,
                "WORKFLOW_NVLINK_ERR": HIGH, "WORKFLOW_NVLINK5_ERR": HIGH, "CHECK_MECHANICALS": MEDIUM,
                "UPDATE_SWFW": MEDIUM, "RESTART_APP": LOW, "CHECK_UVM": LOW, "WORKFLOW_XID_13": LOW,
                "WORKFLOW_XID_31": LOW}
IMPACT = {CRITICAL: 95.0, HIGH: 60.0, MEDIUM: 30.0, LOW: 5.0, INFO: 1.0}
#: Distinct messages shown as evidence per finding (each with its count)
MAX_EVIDENCE = 5
#: Addresses named in the one finding for Xid lines that name no GPU
MAX_OTHER_ADDRESSES = 8
#: Xid 154's recovery action -> severity (gpu.recovery judges the action NVML reports now)
RECOVERY_GRADE = {"reboot": CRITICAL, "system_reboot": CRITICAL, "reset": HIGH, "drain_and_reset": HIGH,
                  "bus_reset": HIGH, "drain_p2p": MEDIUM, "recover_imex_domain": MEDIUM, "none": INFO}
REFERENCES = (
    "https://docs.nvidia.com/deploy/xid-errors/index.html",
    "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html",
)


def _grade(xid: int) -> tuple[str, str]:
    """(severity, meaning): the curated grade, else the catalogue's bucket, else info."""
    if xid in XID_TABLE:
        return XID_TABLE[xid]
    known = entry(xid)
    if known is None:
        return INFO, N_("not in NVIDIA's Xid catalogue through Xid {last} (a newer driver?)", last=LAST_CODE)
    meaning = known.description or f"{known.mnemonic}, marked Unused in the catalogue"
    if known.immediate:
        meaning = f"{meaning}; NVIDIA's resolution: {known.immediate}"
    return BUCKET_GRADE.get(known.immediate, INFO), meaning


#: Codes XID_TABLE grades as the application's faults, and the catalogue buckets that say so or name the
#: software stack: whoever acts on them is the workload's owner (restart the job, check its code) or the
#: node's admin (the unified-memory driver, a driver update); every other code is the GPU's (the check's own)
APPLICATION_XIDS = frozenset({13, 31, 43})
BUCKET_ACTS = {"RESTART_APP": Actor.APPLICATION, "WORKFLOW_XID_13": Actor.APPLICATION,
               "WORKFLOW_XID_31": Actor.APPLICATION, "CHECK_UVM": Actor.OS, "UPDATE_SWFW": Actor.OS}


def _acts(xid: int) -> Actor | None:
    """Who acts on Xid ``xid`` when not the GPU's vendor (``None``: the check's own, the hardware)."""
    if xid in APPLICATION_XIDS:
        return Actor.APPLICATION
    if xid in XID_TABLE:
        return None
    known = entry(xid)
    return BUCKET_ACTS.get(known.immediate) if known is not None else None


def _evidence(origin: str, events: list[XidEvent]) -> tuple[list[Evidence], int]:
    """Distinct messages, most frequent first, at most MAX_EVIDENCE, each with its count; and how many distinct."""
    counts = Counter(e.text for e in events)
    first: dict[str, XidEvent] = {}
    for e in events:
        first.setdefault(e.text, e)
    order = sorted(counts, key=lambda t: -counts[t])
    shown = []
    for text in order[:MAX_EVIDENCE]:
        stamp = first[text].timestamp
        value = (f"[{stamp}] " if stamp else "") + text + (f" (x{counts[text]})" if counts[text] > 1 else "")
        shown.append(Evidence(origin, value))
    return shown, len(order)


def _span(events: list[XidEvent]) -> str:
    """``"first at [1843.3], last at [2001.0]"`` from the log's own time stamps (kernel or journal time)."""
    stamps = [e.timestamp for e in events if e.timestamp]
    if not stamps:
        return "no time stamps in the log"
    if len(events) == 1:
        return f"at [{stamps[0]}]"
    return f"first at [{stamps[0]}], last at [{stamps[-1]}]"


def _fix(level: str, target: str, codes: set[int], recovery: str | None = None) -> Fix:
    if level in (LOW, INFO):
        return Fix(notes=N_("Usually the application (illegal address, bad kernel, killed context), not the GPU: check the failing job's logs. Investigate the hardware only if it recurs with different workloads."))
    if recovery in ("reboot", "system_reboot"):
        return Fix(notes=N_('The driver asks for a node reboot (Xid 154): drain the node, reboot it, then check `nvidia-smi -q` and gpu.recovery; a GPU reset does not clear this action.'))
    if recovery == "recover_imex_domain":
        return Fix(notes=N_("The driver asks for the IMEX domain to be recovered (Xid 154): restart the IMEX daemon (`nvidia-imex`) across the NVLink domain's nodes, then check gpu.recovery; no GPU reset."))
    notes = ["Drain the GPU first (cordon the node or stop the serving process).",
             "A reset needs every process on the GPU stopped; on NVSwitch systems (HGX) reset all GPUs together "
             "or reboot the node instead."]
    if recovery in ("drain_p2p", "drain_and_reset"):
        notes.insert(1, "Stop the peer-to-peer (NVLink/P2P) traffic to this GPU first; the driver asks for the drain.")
    if 79 in codes:
        notes.append(N_('After Xid 79 a reset usually fails: power-cycle the node, then check the riser, power cables and slot.'))
    if codes & {48, 63, 64, 94, 95}:
        notes.append(N_('Check `nvidia-smi -q -d ROW_REMAPPER,ECC` afterwards; a pending row remap is applied by the reset.'))
    notes.append(N_('If it recurs after the reset, run the field diagnostic (`dcgmi diag -r 3`) and RMA the GPU.'))
    return make("gpu_reset", target=target, notes=join(' ', notes))


def _is_gpu(facts: Facts, address: str) -> bool:
    """The address names a GPU of this node: in the driver's inventory, or a GPU function on the PCI bus.
    With no PCI tree and no inventory at all (a kernel log on its own), the NVIDIA driver's own line is
    all there is, and it names the device it drives: a GPU."""
    if facts.gpus.by_address(address) is not None:
        return True
    if not facts.pci.devices and not facts.gpus.gpus:
        return True
    dev = facts.pci.get(address)
    return dev is not None and dev.is_gpu


def _subcodes(events: list[XidEvent]) -> str:
    """``"; NVLink unit and subcode: NETIR_LINK_EVT/4 x12"`` for Xid 144-150 lines that give them."""
    seen = Counter(f"{e.unit}/{e.subcode}" for e in events if e.subcode is not None)
    if not seen:
        return ""
    shown = ", ".join(f"{k} x{n}" for k, n in seen.most_common(MAX_EVIDENCE))
    more = len(seen) - min(len(seen), MAX_EVIDENCE)
    return f"; NVLink unit/subcode (bits 20-25 of the interrupt information): {shown}" + (f", +{more} more" if more else "")


def _nvlink_decode(xid: int, events: list[XidEvent]) -> tuple[str | None, str]:
    """Xid 144-150 by the catalogue's decode sheet (unit, subcode and error status of each line): the grade
    when every line decodes (RESET_GPU high; a link-fatal row NVIDIA resolves IGNORE medium; non-fatal rows and
    those whose action the following Xid 154 names low), else None (the code's own grade stands); and the
    decode as text for the detail."""
    rows: Counter[str] = Counter()
    grades: set[str] = set()
    undecoded = 0
    for e in events:
        rule = nvlink_rule(xid, e.intrinfo, e.error_status) \
            if e.intrinfo is not None and e.error_status is not None else None
        if rule is None:
            undecoded += 1
            continue
        rows[f"{rule.unit} status 0x{rule.error_status:08x} ({rule.severity}, {rule.resolution})"] += 1
        grades.add(HIGH if rule.resolution == "RESET_GPU" else MEDIUM if rule.fatal and rule.resolution == "IGNORE"
                   else LOW)
    if not rows:
        return None, ""
    text = "; NVIDIA's decode of the lines: " + ", ".join(f"{k} x{n}" for k, n in rows.most_common(MAX_EVIDENCE)) \
        + (f", {undecoded} line(s) matching no row of the decode sheet" if undecoded else "")
    if undecoded:
        return None, text
    return min(grades, key=severity_order), text


def _gpu_finding(facts: Facts, origin: str, address: str, xid: int, events: list[XidEvent]) -> Finding:
    level, meaning = _grade(xid)
    decoded, decode_text = _nvlink_decode(xid, events) if 144 <= xid <= 150 else (None, "")
    if decoded is not None:
        level = decoded
    recovery = next((e.recovery for e in reversed(events) if e.recovery), None) if xid == 154 else None
    if recovery is not None:
        level = RECOVERY_GRADE.get(recovery, HIGH)
    gpu = facts.gpus.by_address(address)
    label = gpu_label(facts, address)
    evidence, distinct = _evidence(origin, events)
    bandwidth = facts.kernel_log.bandwidth_of(address)
    if bandwidth is not None and level in (CRITICAL, HIGH):
        evidence.append(Evidence(origin, bandwidth.text))
    observed = f"Xid {xid} x{len(events)}" + (f", recovery action {recovery}" if recovery else "")
    detail = (f"The kernel log holds {len(events)} Xid {xid} line(s) for {label}, {_span(events)}"
              + (f"; the last asks for recovery action `{recovery}`" if recovery else "")
              + _subcodes(events) + decode_text
              + (f"; {distinct - MAX_EVIDENCE} more distinct message(s) not shown" if distinct > MAX_EVIDENCE else "")
              + ". The log covers events since boot (or since the ring buffer wrapped); a reset may "
                "already have cleared the fault.")
    return Finding(
        level, address, N_('Xid {xid} ({meaning}) on {label}', xid=xid, meaning=meaning, label=label) + (N_(': recovery action {recovery}', recovery=recovery) if recovery else ""),
        detail=detail, evidence=tuple(evidence), expected=N_('no Xid errors'), observed=observed,
        impact=Impact(IMPACT.get(level, IMPACT[HIGH]), N_('the GPU is lost or its results are suspect until reset or replaced')
                      if level in (CRITICAL, HIGH, MEDIUM) else N_('a failed job; the GPU itself is usually fine'),
                      basis=N_("NVIDIA's Xid catalogue for the codes in the evidence (which ones need a reset or the GPU replaced)")),
        fix=_fix(level, str(gpu.index) if gpu is not None else address, {xid}, recovery),
        references=REFERENCES, confidence=0.9, acts=_acts(xid))


def _other_finding(facts: Facts, origin: str, events: list[XidEvent]) -> Finding:
    """One node-level finding for Xid lines naming a host bridge, a NIC or an address on no bus."""
    addresses = Counter(e.address for e in events)
    named = []
    for address, n in addresses.most_common(MAX_OTHER_ADDRESSES):
        dev = facts.pci.get(address)
        what = (dev.name or ("a bridge" if dev.is_bridge else "a NIC" if dev.is_nic else "not a GPU")) if dev is not None \
            else "on no bus of this node"
        named.append(f"{address} ({what}) x{n}")
    more = len(addresses) - len(named)
    codes = Counter(e.xid for e in events)
    worst = min((_grade(c)[0] for c in codes), key=severity_order)
    level = worst if severity_order(worst) >= severity_order(MEDIUM) else MEDIUM
    evidence, distinct = _evidence(origin, events)
    return Finding(
        level, "node", N_('{n_events} Xid line(s) name no GPU of this node ({n_addresses} address(es))', n_events=len(events), n_addresses=len(addresses)),
        detail=N_('The NVIDIA driver names the GPU of each Xid by its PCI address; these lines name an address that is no GPU in the inventory or on the PCI bus: ') + ", ".join(named)
               + (N_(', +{more} more', more=more) if more else "") + N_(' ({v}; codes ', v=_span(events))
               + ", ".join(f"Xid {c} x{n}" for c, n in sorted(codes.items())[:16]) + N_('). A log from another node, a GPU that has left the bus entirely (see gpu.unreachable) or corrupt lines; no GPU is reset on their word.'),
        evidence=tuple(evidence), expected=N_('Xid lines name GPUs of this node'),
        observed=N_('{n_events} line(s), {n_addresses} address(es)', n_events=len(events), n_addresses=len(addresses)),
        impact=Impact(20.0, N_('none known for the GPUs listed; the lines may belong to a GPU no longer seen'),
                      basis=N_('the addresses match no GPU of the inventory')),
        fix=Fix(notes=N_('Compare the addresses with `lspci -D -d 10de:` and `nvidia-smi -q`; if a GPU is missing from both, it has fallen off the bus: see gpu.unreachable.')),
        references=REFERENCES, confidence=0.6)


@check("gpu.xid_errors", "NVIDIA Xid errors in the kernel log", "gpu", acts="hardware", fixes=("gpu_reset",), needs=("kernel_log",), applies=gpu_absent)
def gpu_xid_errors(facts: Facts) -> Iterator[Finding]:
    """One finding per GPU and Xid code with the count and first and last time: critical for Xid
    79/95/64/140/143, high for 48/94/63/74/119/120 and the NVLink ones, low for the usual application faults
    13/31/43; any other code graded by NVIDIA's catalogue (RESET_GPU high, RESTART_APP low, IGNORE and unused
    info; doctor/xid_catalog.py), info for a code newer than it; Xid 154 graded by the recovery action it names; Xid lines naming no GPU of the node
    one node-level finding; unknown when dmesg could not be read on a node with GPUs."""
    log = facts.kernel_log
    gpus = facts.gpus.gpus
    if not log.readable:
        if gpus:
            yield Finding(UNKNOWN, "node", N_('kernel log not available: Xid errors cannot be checked'),
                          detail=N_('NVIDIA reports GPU faults (fallen off the bus, ECC, NVLink) as Xid lines in the kernel log only.'),
                          evidence=(Evidence(log.origin, log.missing or "dmesg not recorded"),),
                          fix=Fix(notes=N_('Read as root already: run the doctor on the host itself, not in a container, or give its container CAP_SYSLOG (or read the log with `journalctl -k`).')
                                  if facts.as_root else N_('Run the doctor as root, or collect with `sudo gnd collect`.')))
        return
    if not gpus and not log.xids:
        return
    groups: dict[tuple[str, int], list[XidEvent]] = {}
    other: list[XidEvent] = []
    is_gpu: dict[str, bool] = {}
    for event in log.xids:
        if event.address not in is_gpu:
            is_gpu[event.address] = _is_gpu(facts, event.address)
        if is_gpu[event.address]:
            groups.setdefault((event.address, event.xid), []).append(event)
        else:
            other.append(event)
    for (address, xid), events in sorted(groups.items()):
        yield _gpu_finding(facts, log.origin, address, xid, events)
    if other:
        yield _other_finding(facts, log.origin, other)
    if not log.xids:
        yield Finding(PASS, "node", N_('no NVIDIA Xid errors in the kernel log ({n_gpus} GPUs)', n_gpus=len(gpus)),
                      evidence=(Evidence(log.origin, "no 'NVRM: Xid' line"),))
