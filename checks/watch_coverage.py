"""watch.coverage: what a watch sampled, for how long, and what it could not sample (and why).

Info only: the other ``watch.*`` checks judge the samples; this one says what they rest on, so
that a watch of a host without GPUs, without RDMA ports or without a readable kernel log says so
rather than reading as health.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import record_of, span
from doctor.facts import Facts
from doctor.findings import INFO, Evidence, Finding
from doctor.i18n import N_
from doctor.registry import check

CHECK_ID = "watch.coverage"


@check(CHECK_ID, "What a watch sampled, and what it could not", "doctor", acts="os", requires="watch", needs=("watch",))
def watch_coverage(facts: Facts) -> Iterator[Finding]:
    """Over a watch: one info finding listing the series sampled and each gap with its reason."""
    record = record_of(facts)
    if record.missing:
        return  # the runner reports the unreadable record as the input "watch"
    sampled = N_("{links} links, {counters} error counters, {gpus} GPUs' clocks, {lines} new kernel-log lines",
                 links=len(record.links), counters=len(record.counters), gpus=len(record.clocks),
                 lines=sum(e.count for e in record.events))
    gaps = "; ".join(record.not_sampled)
    short = ", ".join(n.split(":", 1)[0] for n in record.not_sampled)
    title = N_("watched {span}: {sampled}", span=span(record), sampled=sampled)
    yield Finding(INFO, "node", title + N_("; not sampled: {gaps}", gaps=short) if short else title,
                  detail=N_("Not sampled: {gaps}.", gaps=gaps) if gaps else N_("Every kind of sample was read."),
                  evidence=(Evidence(record.origin, sampled),
                            *(Evidence(record.origin, f"not sampled: {n}") for n in record.not_sampled)))
