"""watch.link_changes: PCIe links that change width, or run below their top speed while their GPU is busy.

Judged over a watch (``gnd watch``, or ``gnd collect --watch`` and a later ``gnd check``), never
from one snapshot. A width change is a retrain (ASPM and power management change a link's speed and
power state, not its width): signal integrity, a riser or retimer, or a failing link. A GPU link
that drops speed while the GPU is busy loses bandwidth when it matters. A GPU link whose speed
follows the GPU's own idle and busy periods is power management: info, never more.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import LINKS, gap, per_minute, record_of, series_evidence, span
from doctor.facts import Facts
from doctor.facts.watch import LinkSeries
from doctor.findings import HIGH, INFO, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.i18n import N_
from doctor.registry import check

CHECK_ID = "watch.link_changes"
REFERENCES = ("https://docs.kernel.org/PCI/sysfs-pci.html",
              "https://github.com/local-inference-lab/rtx6kpro/pull/88")


def _speed(value: float | None) -> str:
    return "?" if value is None else f"{value:g} GT/s"


def _subject(facts: Facts, s: LinkSeries) -> str:
    gpu = facts.gpus.by_address(s.address) if s.role == "gpu" else None
    if gpu is not None:
        return f"GPU {gpu.index} ({s.address})"
    return f"{'NIC' if s.role == 'nic' else 'port'} {s.address}"


def _judge(facts: Facts, s: LinkSeries, rate: float) -> Finding | None:
    record = record_of(facts)
    carries_gpu = s.role == "gpu" or (s.role == "hop" and bool(facts.pci.get(s.address)) and _above_gpu(facts, s))
    widths = f"x{s.low_width}-x{s.top_width}"
    share = 100.0 * s.below_s / s.seconds if s.seconds else 0.0
    evidence = series_evidence(record, s.address, s.recent)
    if s.width_changes:
        return Finding(
            HIGH if carries_gpu else MEDIUM, _subject(facts, s),
            N_("link width changed {n} times in {secs} s ({rate} transitions/min, {widths})", n=s.width_changes,
               secs=f"{round(record.duration_s, 1):g}", rate=f"{rate:.1f}", widths=widths),
            detail=N_("Below its widest (x{width}) or fastest ({speed}) for {below} s, {share} % of the watch. A width "
                      "change is a retrain: power management changes speed, not width. Suspect the riser, retimer, "
                      "cable or slot; reseat, and compare with another slot.", width=s.top_width,
                      speed=_speed(s.top_speed), below=f"{s.below_s:g}", share=f"{share:.0f}"),
            evidence=evidence, expected=N_("x{width}, steady", width=s.top_width),
            observed=N_("{widths}, {n} transitions", widths=widths, n=s.transitions),
            impact=Impact(50.0 if carries_gpu else 20.0, N_("each retrain stalls the link; a narrower link carries less"),
                          basis=N_("{n} width changes in {span}", n=s.width_changes, span=span(record))),
            references=REFERENCES, related=(s.address,))
    if s.busy_below_s > 0 and carries_gpu:
        busy_share = 100.0 * s.busy_below_s / s.busy_s if s.busy_s else 0.0
        return Finding(
            HIGH, _subject(facts, s),
            N_("ran below {speed} while busy for {secs} s ({share} % of its busy time)", speed=_speed(s.top_speed),
               secs=f"{s.busy_below_s:g}", share=f"{busy_share:.0f}"),
            detail=N_("Lowest {low}; {n} speed changes ({rate} transitions/min), {busy} of them while busy. An idle GPU "
                      "may drop its link speed to save power; a busy one should not.", low=_speed(s.low_speed),
                      n=s.speed_changes, rate=f"{rate:.1f}", busy=s.busy_speed_changes),
            evidence=evidence, expected=N_("{speed} while busy", speed=_speed(s.top_speed)),
            observed=N_("{low} for {secs} s while busy", low=_speed(s.low_speed), secs=f"{s.busy_below_s:g}"),
            impact=Impact(45.0, N_("host-device copies run at the lower rate while the GPU works"),
                          basis=N_("seconds below the top speed while busy, in {span}", span=span(record))),
            references=REFERENCES, related=(s.address,))
    if s.speed_changes and not carries_gpu:
        return Finding(
            MEDIUM, _subject(facts, s),
            N_("link speed changed {n} times in {secs} s ({rate} transitions/min)", n=s.speed_changes,
               secs=f"{round(record.duration_s, 1):g}", rate=f"{rate:.1f}"),
            detail=N_("Between {low} and {top}; below the top for {below} s ({share} % of the watch). A NIC link does "
                      "not follow a GPU's idle periods: this is retraining.", low=_speed(s.low_speed),
                      top=_speed(s.top_speed), below=f"{s.below_s:g}", share=f"{share:.0f}"),
            evidence=evidence, expected=N_("{speed}, steady", speed=_speed(s.top_speed)),
            observed=f"{_speed(s.low_speed)}-{_speed(s.top_speed)}",
            impact=Impact(20.0, N_("each retrain stalls the NIC's traffic"),
                          basis=N_("{n} speed changes in {span}", n=s.speed_changes, span=span(record))),
            references=REFERENCES, related=(s.address,))
    if s.speed_changes:
        return Finding(
            INFO, _subject(facts, s),
            N_("link speed follows the GPU's idle and busy periods ({n} changes, full speed while busy)", n=s.speed_changes),
            detail=N_("Power management: the GPU lowers its link speed when idle and restores it under load. Nothing to fix."),
            evidence=evidence, expected=N_("full speed while busy"),
            observed=N_("{low} only while idle", low=_speed(s.low_speed)),
            references=REFERENCES, related=(s.address,))
    return None


def _above_gpu(facts: Facts, s: LinkSeries) -> bool:
    return any(s.address in (g.path or ()) for g in facts.pci.gpus)


@check(CHECK_ID, "PCIe links that change width, or speed while busy, over a watch", "pcie", acts="hardware", requires="watch", needs=("watch",))
def watch_link_changes(facts: Facts) -> Iterator[Finding]:
    """Over a watch: width changes, and speed below the top while the GPU below is busy; power management is info."""
    record = record_of(facts)
    if record.missing:
        return  # the runner reports the unreadable record as the input "watch"
    missing = gap(record, LINKS)
    watched = [s for s in record.links if s.samples >= 2]
    if missing or not watched:
        why = missing or N_("fewer than two samples of any link")
        yield Finding(UNKNOWN, "node", N_("PCIe links were not watched"), detail=why,
                      evidence=(Evidence(record.origin, why),))
        return
    found = False
    for s in watched:
        finding = _judge(facts, s, per_minute(s.transitions, record.duration_s, record.interval_s))
        if finding is not None:
            found = found or finding.severity != INFO
            yield finding
    if not found:
        yield Finding(PASS, "node", N_("{n} links kept their width, and their speed under load, over {span}",
                                       n=len(watched), span=span(record)),
                      evidence=(Evidence(record.origin, f"{len(watched)} links, {record.samples} samples"),))
