"""What the ``watch.*`` checks share: the watch's record, its gaps, and rates and evidence of its series."""

from __future__ import annotations

from collections.abc import Iterable

from doctor.facts import Facts
from doctor.facts.watch import WatchRecord
from doctor.findings import Evidence
from doctor.i18n import N_

#: the prefixes :mod:`doctor.watch` gives what it could not sample
LINKS, GPUS, KERNEL = "PCIe links", "GPU activity, clocks and replays", "kernel log"


def record_of(facts: Facts) -> WatchRecord:
    """The watch record (the ``watch.*`` checks run only when there is one: ``requires="watch"``)."""
    record = facts.watch
    assert record is not None
    return record


def gap(record: WatchRecord, prefix: str) -> str | None:
    """What the watch could not sample under ``prefix`` (``None``: it was sampled)."""
    return next((n for n in record.not_sampled if n.startswith(prefix)), None)


def per_minute(count: float, seconds: float, interval: float) -> float:
    """``count`` events over ``seconds`` of watch (at least one interval) as a rate per minute."""
    return count * 60.0 / max(seconds, interval, 1e-3)


def span(record: WatchRecord) -> str:
    """``"120 s (61 samples, every 2 s)"``."""
    return N_("{secs} s ({n} samples, every {interval} s)", secs=f"{round(record.duration_s, 1):g}", n=record.samples,
              interval=f"{record.interval_s:g}")


def series_evidence(record: WatchRecord, subject: str, recent: Iterable[str]) -> tuple[Evidence, ...]:
    """The newest samples of one series, one evidence line each."""
    return tuple(Evidence(f"{record.origin}: {subject}", line) for line in recent)
