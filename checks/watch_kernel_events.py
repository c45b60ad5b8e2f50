"""watch.kernel_events: Xid, AER and link-down lines the kernel printed during a watch.

The lines already in the log when the watch began are the static checks' business (``gpu.xid_errors``,
``pcie.aer``); this check judges only what appeared while watching, grouped per kind and subject with
a count and the first and last time: a fault happening now.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import KERNEL, gap, per_minute, record_of, span
from doctor.facts import Facts
from doctor.findings import HIGH, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.i18n import N_
from doctor.registry import check

CHECK_ID = "watch.kernel_events"
REFERENCES = ("https://docs.nvidia.com/deploy/xid-errors/index.html", "https://docs.kernel.org/PCI/pcieaer-howto.html")
#: kind -> (severity, category, words)
KINDS = {"xid": (HIGH, "gpu", N_("{n} new Xid lines during the watch ({subject}; t={first}-{last} s)")),
         "aer": (MEDIUM, "pcie", N_("{n} new AER lines during the watch ({subject}; t={first}-{last} s)")),
         "link_down": (HIGH, "network", N_("{n} new link-down lines during the watch ({subject}; t={first}-{last} s)"))}


@check(CHECK_ID, "Xid, AER and link-down lines that appear during a watch", "gpu", acts="hardware", requires="watch", needs=("watch",))
def watch_kernel_events(facts: Facts) -> Iterator[Finding]:
    """Over a watch: new kernel-log lines per kind and subject, with count, first and last time."""
    record = record_of(facts)
    if record.missing:
        return  # the runner reports the unreadable record as the input "watch"
    missing = gap(record, KERNEL)
    if missing:
        yield Finding(UNKNOWN, "node", N_("the kernel log was not watched"), detail=missing,
                      evidence=(Evidence(record.origin, missing),))
        return
    for e in record.events:
        severity, category, words = KINDS.get(e.kind, KINDS["aer"])
        subject = e.subject
        if e.kind == "xid":
            address = e.subject.split(" ", 1)[0]
            gpu = facts.gpus.by_address(address)
            subject = f"GPU {gpu.index} ({address})" if gpu is not None else address
        rate = per_minute(e.count, e.last_t - e.first_t, record.interval_s)
        yield Finding(
            severity, subject, N_(words, n=e.count, subject=e.subject, first=f"{e.first_t:g}", last=f"{e.last_t:g}"),
            detail=N_("{rate} per minute while watching; the first ones are quoted as evidence.", rate=f"{rate:.1f}"),
            evidence=tuple(Evidence(f"{record.origin}: kernel log", x) for x in e.examples),
            expected=N_("no new lines"), observed=N_("{n} lines", n=e.count),
            impact=Impact(35.0 if severity == HIGH else 12.0, N_("a fault that is happening now, not one from an earlier boot"),
                          basis=N_("new kernel-log lines over {span}", span=span(record))),
            references=REFERENCES, related=(e.subject.split(" ", 1)[0],), category=category)
    if not record.events:
        yield Finding(PASS, "node", N_("no new Xid, AER or link-down line over {span}", span=span(record)),
                      evidence=(Evidence(record.origin, "kernel log read at every sample"),))
