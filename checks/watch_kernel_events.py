"""watch.kernel_events: Xid, AER and link-down lines the kernel printed during a watch.

The lines already in the log when the watch began are the static checks' business (``gpu.xid_errors``,
``pcie.aer``); this check judges only what appeared while watching, grouped per kind and subject with
a count and the first and last time: a fault happening now.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import KERNEL, gap, per_minute, record_of, span, unreadable
from doctor.facts import Facts
from doctor.findings import HIGH, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.registry import check

CHECK_ID = "watch.kernel_events"
REFERENCES = ("https://docs.nvidia.com/deploy/xid-errors/index.html", "https://docs.kernel.org/PCI/pcieaer-howto.html")
#: kind -> (severity, category, words)
KINDS = {"xid": (HIGH, "gpu", "new Xid lines"), "aer": (MEDIUM, "pcie", "new AER lines"),
         "link_down": (HIGH, "network", "new link-down lines")}


@check(CHECK_ID, "Xid, AER and link-down lines that appear during a watch", "gpu", requires="watch")
def watch_kernel_events(facts: Facts) -> Iterator[Finding]:
    """Over a watch: new kernel-log lines per kind and subject, with count, first and last time."""
    record = record_of(facts)
    bad = unreadable(record, CHECK_ID)
    if bad is not None:
        yield bad
        return
    missing = gap(record, KERNEL)
    if missing:
        yield Finding(UNKNOWN, "node", "the kernel log was not watched", detail=missing,
                      evidence=(Evidence(record.origin, missing),))
        return
    for e in record.events:
        severity, category, words = KINDS.get(e.kind, (MEDIUM, "gpu", "new kernel lines"))
        subject = e.subject
        if e.kind == "xid":
            address = e.subject.split(" ", 1)[0]
            gpu = facts.gpus.by_address(address)
            subject = f"GPU {gpu.index} ({address})" if gpu is not None else address
        rate = per_minute(e.count, e.last_t - e.first_t, record.interval_s)
        yield Finding(
            severity, subject, f"{e.count} {words} during the watch ({e.subject}; t={e.first_t:g}-{e.last_t:g} s)",
            detail=f"{rate:.1f} per minute while watching; the first ones are quoted as evidence.",
            evidence=tuple(Evidence(f"{record.origin}: kernel log", x) for x in e.examples),
            expected="no new lines", observed=f"{e.count} lines",
            impact=Impact(35.0 if severity == HIGH else 12.0, "a fault that is happening now, not one from an earlier boot",
                          basis=f"new kernel-log lines over {span(record)}"),
            references=REFERENCES, related=(e.subject.split(" ", 1)[0],), category=category)
    if not record.events:
        yield Finding(PASS, "node", f"no new Xid, AER or link-down line over {span(record)}",
                      evidence=(Evidence(record.origin, "kernel log read at every sample"),))
