"""pcie.aer: PCIe Advanced Error Reporting counters on the links of GPUs and NICs (bad risers, cables)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import subject_nics
from doctor.derived.pcie import Link, link_label, upstream_links
from doctor.derived.relations import gpu_activity, gpu_label
from doctor.facts import Facts, PciDevice
from doctor.findings import HIGH, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact, cmd
from doctor.i18n import N_, join
from doctor.registry import check

#: aer_dev_<kind> -> the line holding its total (older kernels lack it; then the lines are summed).
TOTALS = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}
IMPACT = {HIGH: 35.0, MEDIUM: 15.0, LOW: 4.0}
REFERENCES = (
    "https://docs.kernel.org/PCI/pcieaer-howto.html",
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats",
    "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html",
)
FIRMWARE_FIRST = (N_('On firmware-first (APEI/GHES) platforms the OS counters stay at 0, so zero counts are not proof of health; look for `[Hardware Error]` lines in dmesg and the BMC log.'))


def total(counters: dict[str, int], kind: str) -> int:
    key = TOTALS[kind]
    if key in counters:
        return counters[key]
    return sum(v for k, v in counters.items() if not k.startswith("TOTAL_"))


def _no_subject(facts: Facts) -> str | None:
    """Why the check does not apply: no GPU and no RDMA NIC whose links to watch."""
    return None if facts.pci.gpus or subject_nics(facts) else N_('no GPU or RDMA NIC on the PCI bus')


def _devices(facts: Facts) -> tuple[list[PciDevice], dict[str, str]]:
    """GPUs, NICs and every bridge on their upstream paths; address -> the endpoint it serves."""
    pci = facts.pci
    serves: dict[str, str] = {}
    for dev in [*pci.gpus, *subject_nics(facts)]:
        for addr in dev.path or (dev.address,):
            serves.setdefault(addr, dev.address)
    return [d for a in sorted(serves) if (d := pci.get(a)) is not None], serves


def _downgraded(facts: Facts, dev: PciDevice, endpoint: str) -> Link | None:
    """A short link touching ``dev`` (idle GPUs' power-saving speed drop does not count)."""
    idle = gpu_activity(facts, endpoint) == "idle"
    for lk in upstream_links(facts.pci, endpoint):
        if dev.address not in (lk.child.address, lk.parent.address if lk.parent else None):
            continue
        if lk.width_short or (lk.speed_short and not idle and not lk.slot_limited):
            return lk
    return None


@check("pcie.aer", "PCIe AER error counters on GPU and NIC paths", "pcie", acts="hardware", needs=("pci.aer",), applies=_no_subject)
def pcie_aer(facts: Facts) -> Iterator[Finding]:
    """High for any uncorrectable (fatal/non-fatal) error; low for correctable errors, medium when the
    same link also runs narrower or slower than it should."""
    if facts.host.is_vm or facts.pci.origin != "sysfs":
        return
    devices, serves = _devices(facts)
    counted = [d for d in devices if d.aer]
    if not counted:
        return  # no aer_dev_* files (kernel < 4.19, no AER capability, or not recorded): nothing to say
    flagged = 0
    for dev in counted:
        uncorrectable = {k: total(dev.aer[k], k) for k in ("fatal", "nonfatal") if k in dev.aer}
        bad = {k: v for k, v in uncorrectable.items() if v > 0}
        correctable = total(dev.aer["correctable"], "correctable") if "correctable" in dev.aer else 0
        if not bad and correctable == 0:
            continue
        flagged += 1
        endpoint = serves[dev.address]
        short = _downgraded(facts, dev, endpoint)
        level = HIGH if bad else MEDIUM if short else LOW
        label = gpu_label(facts, dev.address) if dev.is_gpu else dev.address
        what = join(', ', (f"{v} {k}" for k, v in bad.items())) or f"{correctable} correctable"
        evidence = [Evidence(dev.attr(f"aer_dev_{k}"),
                             join(' ', (f"{n} {v}" for n, v in dev.aer[k].items() if v)) or "all 0")
                    for k in ("fatal", "nonfatal", "correctable") if k in dev.aer]
        if short is not None:
            evidence.append(Evidence(short.child.attr("current_link_width"),
                                     f"link {link_label(short.cur_speed, short.cur_width)} of "
                                     f"{link_label(short.exp_speed, short.exp_width)}"))
        serving = "" if endpoint == dev.address else N_(' (on the path of {gpu_label})', gpu_label=gpu_label(facts, endpoint))
        yield Finding(
            level, label, N_('PCIe AER: {what} errors', what=what) + (N_(' on a downgraded link') if short else ""),
            detail=N_('{address}{serving} counted {what} errors since boot. ', address=dev.address, serving=serving, what=what)
                   + (N_('Uncorrectable errors mean lost or poisoned transactions; the device may need a reset. ')
                      if bad else N_('Correctable errors are retried (replays), costing bandwidth and latency. '))
                   + (N_('The same link trained below its capability, which points at signal integrity (riser, cable, retimer, slot). ') if short else "")
                   + FIRMWARE_FIRST,
            evidence=tuple(evidence), expected=N_('0 AER errors'), observed=what,
            impact=Impact(IMPACT[level], N_('replays and retraining cut PCIe bandwidth; uncorrectable errors can take the device off the bus'), basis=N_('the AER counters in the evidence: each replay retransmits a packet; uncorrectable errors can make the driver drop the device')),
            fix=Fix(notes=N_('Reseat or replace the riser/cable, check the slot and retimer firmware, update BIOS and device firmware; compare with `') + cmd("lspci", "-vvv", "-s", dev.address)
                          + N_('` (CESta/UESta) and watch whether the counters grow under load.')),
            references=REFERENCES, confidence=0.9)
    if not flagged:
        yield Finding(PASS, "node", N_('no AER errors on {n_counted} GPU/NIC path devices', n_counted=len(counted)),
                      detail=FIRMWARE_FIRST,
                      evidence=(Evidence("sys/bus/pci/devices/*/aer_dev_*", f"{len(counted)} devices, all 0"),))
