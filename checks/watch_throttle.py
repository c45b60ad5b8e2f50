"""watch.throttle_under_load: GPU clocks held back by thermal, power or hardware slowdowns while busy.

Clock-event reasons matter under load, not at idle (an idle GPU reports ``gpu_idle``). Judged over a
watch: for each GPU, the busy samples in which a reason other than idle, application clocks or boost
sync was active. Hardware slowdowns (``hw_slowdown``, ``hw_thermal_slowdown``,
``hw_power_brake_slowdown``) are high: the board is protecting itself (power supply, cooling); a
software thermal slowdown is medium; the software power cap is low (the GPU runs at its power limit,
as a heavily loaded GPU may by design).
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import GPUS, gap, record_of, series_evidence, span
from doctor.facts import Facts
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact, severity_order
from doctor.i18n import N_
from doctor.registry import check

CHECK_ID = "watch.throttle_under_load"
REFERENCES = ("https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",)
REASONS = {"hw_slowdown": HIGH, "hw_thermal_slowdown": HIGH, "hw_power_brake_slowdown": HIGH,
           "sw_thermal_slowdown": MEDIUM, "sw_power_cap": LOW}


def _applies(facts: Facts) -> str | None:
    return None if facts.pci.gpus or (facts.watch and facts.watch.clocks) else N_("no GPU on the PCI bus")


@check(CHECK_ID, "GPU clocks held back while busy, over a watch", "gpu", acts="hardware", requires="watch", needs=("watch",), applies=_applies)
def watch_throttle(facts: Facts) -> Iterator[Finding]:
    """Over a watch: clock-event reasons active in busy samples; idle-time reasons are not judged."""
    record = record_of(facts)
    if record.missing:
        return  # the runner reports the unreadable record as the input "watch"
    if not record.clocks and not facts.pci.gpus:
        return  # no GPU: the check does not apply (``_applies`` says why)
    missing = gap(record, GPUS)
    busy = [c for c in record.clocks if c.busy_samples]
    if missing or not busy:
        why = missing or N_("no GPU was busy in {span}: throttling under load cannot be judged", span=span(record))
        yield Finding(UNKNOWN, "node", N_("GPU clocks under load were not watched"), detail=why,
                      evidence=(Evidence(record.origin, why),))
        return
    found = False
    for c in busy:
        active = {r: n for r, n in (c.busy_reasons or {}).items() if n}
        if not active:
            continue
        found = True
        worst = min(active, key=lambda r: (severity_order(REASONS.get(r, MEDIUM)), -active[r]))
        severity = REASONS.get(worst, MEDIUM)
        gpu = facts.gpus.by_address(c.address)
        listed = ", ".join(f"{r} in {n}" for r, n in sorted(active.items(), key=lambda kv: -kv[1]))
        yield Finding(
            severity, f"GPU {gpu.index} ({c.address})" if gpu else c.address,
            N_("clocks held back under load: {reason} in {n} of {busy} busy samples", reason=worst, n=active[worst],
               busy=c.busy_samples),
            detail=N_("Active while busy: {listed}. Hardware slowdowns point at cooling or the power supply; the "
                      "software power cap means the GPU runs at its power limit.", listed=listed)
                   + (N_(" Hottest reading: {temp} C.", temp=c.max_temp) if c.max_temp is not None else ""),
            evidence=series_evidence(record, c.address, c.recent), expected=N_("no slowdown reason while busy"),
            observed=listed,
            impact=Impact({HIGH: 40.0, MEDIUM: 20.0}.get(severity, 5.0), N_("the GPU computes at lower clocks while it works"),
                          basis=N_("share of busy samples with the reason active, over {span}", span=span(record))),
            references=REFERENCES, related=(c.address,))
    if not found:
        yield Finding(PASS, "node", N_("no slowdown while busy on {n} GPUs over {span}", n=len(busy), span=span(record)),
                      evidence=(Evidence(record.origin, f"{sum(c.busy_samples for c in busy)} busy samples"),))
