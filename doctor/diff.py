"""Compare two runs of one node: findings fixed, new, unchanged or changed in severity, and fact changes.

The one finding diff of the tool (``gnd diff``, the TUI's re-run diff). Rule: findings are keyed
by (check, subject), the subject without process ids (a fix that restarts the server gives it
another pid; ``vllm serve (pid 4242)`` and ``vllm serve (pid 5120)`` are the same server); ``pass`` findings are not compared (a pass says nothing about what changed),
every other severity is, ``info`` included, so a finding that went from ``info`` to ``high`` reads
as "worse", not as new. Only ``gnd diff --fail-on`` decides which changes count as regressions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, field
from typing import TYPE_CHECKING, Any

from doctor.findings import PASS, at_least, severity_order, stable_subject
from doctor.lazyre import lazy
from doctor.record import record

if TYPE_CHECKING:
    from doctor.findings import Finding
    from doctor.fleet.load import Node

FIXED, NEW, WORSE, BETTER, UNCHANGED = "fixed", "new", "worse", "better", "unchanged"
#: Display order: regressions first, then what the change fixed, then the rest.
ORDER = (NEW, WORSE, FIXED, BETTER, UNCHANGED)


@record
class FindingChange:
    """One (check, subject) seen before and/or after; a missing side has severity ``None``."""

    change: str
    check: str
    subject: str
    title: str
    before: str | None
    after: str | None
    related_facts: tuple[str, ...] = ()


@record
class FactChange:
    key: str
    before: str | None
    after: str | None


@record
class Diff:
    before: dict[str, Any]
    after: dict[str, Any]
    findings: tuple[FindingChange, ...]
    facts: tuple[FactChange, ...]
    identity_mismatch: tuple[str, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)

    def of(self, change: str) -> list[FindingChange]:
        return [f for f in self.findings if f.change == change]

    def regressions(self, level: str) -> list[FindingChange]:
        """New or worsened findings at or above ``level``."""
        return [f for f in self.findings if f.change in (NEW, WORSE) and f.after and at_least(f.after, level)]

    def to_dict(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "cross_host": bool(self.identity_mismatch),
                "identity_mismatch": list(self.identity_mismatch), "counts": self.counts,
                "findings": [dict(asdict(f), related_facts=list(f.related_facts)) for f in self.findings],
                "facts": [asdict(f) for f in self.facts]}


def _keyed(findings: Sequence[Finding]) -> dict[tuple[str, str], Finding]:
    """Findings that say something (not ``pass``) by (check, subject without process ids: a server
    restarted under another pid is the same server); a repeat keeps its title apart, then its pid."""
    out: dict[tuple[str, str], Finding] = {}
    for f in findings:
        if f.severity == PASS:
            continue
        subject = stable_subject(f.subject)
        key = (f.check, subject)
        if key in out:
            key = (f.check, f"{subject} [{f.title}]")
        if key in out:
            key = (f.check, f"{f.subject} [{f.title}]")
        out.setdefault(key, f)
    return out


_BDF = lazy(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", re.IGNORECASE)


def _subject_in(subject: str, key: str) -> bool:
    """Whether fact ``key`` is about ``subject`` (a PCI address inside it, a sysctl, a netdev...)."""
    tokens = [t.lower() for t in _BDF.findall(subject)] or ([subject] if subject not in ("", "node", "host") else [])
    return any(f".{t}." in f".{key}." for t in tokens)


def pair_findings(before: Sequence[Finding], after: Sequence[Finding],
                  ) -> list[tuple[tuple[str, str], Finding | None, Finding | None, str]]:
    """(key, before, after, change) for every finding compared, in first-seen order."""
    b, a = _keyed(before), _keyed(after)
    out = []
    for key in dict.fromkeys([*b, *a]):
        fb, fa = b.get(key), a.get(key)
        if fb and fa:
            ob, oa = severity_order(fb.severity), severity_order(fa.severity)
            change = UNCHANGED if ob == oa else WORSE if oa < ob else BETTER
        else:
            change = FIXED if fb else NEW
        out.append((key, fb, fa, change))
    return out


def compare_findings(before: Sequence[Finding], after: Sequence[Finding],
                     changed_keys: list[str] | None = None) -> list[FindingChange]:
    """Fixed/new/worse/better/unchanged, keyed by (check, subject), regressions first."""
    out: list[FindingChange] = []
    for key, fb, fa, change in pair_findings(before, after):
        shown = fa or fb
        assert shown is not None
        related = tuple(k for k in changed_keys or () if _subject_in(key[1], k))
        out.append(FindingChange(change, key[0], key[1], shown.title, fb.severity if fb else None,
                                 fa.severity if fa else None, related))
    rank = {c: i for i, c in enumerate(ORDER)}

    def sort_key(f: FindingChange) -> tuple[int, int, str, str]:
        return (rank[f.change], severity_order(f.after or f.before or PASS), f.check, f.subject)

    return sorted(out, key=sort_key)


def compare_facts(before: dict[str, str], after: dict[str, str]) -> list[FactChange]:
    """Every digest key whose value differs, appeared or disappeared, in key order."""
    keys = sorted(set(before) | set(after))
    return [FactChange(k, before.get(k), after.get(k)) for k in keys if before.get(k) != after.get(k)]


def identity_mismatch(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """``name: a != b`` for each identity value known on both sides that differs."""
    return [f"{name} {before[name]!r} != {after[name]!r}" for name in ("machine_id", "hostname", "board_serial")
            if before.get(name) and after.get(name) and before[name] != after[name]]


def _describe(node: Node, ident: dict[str, str]) -> dict[str, Any]:
    return {"path": node.path, "kind": node.kind, "hostname": ident.get("hostname"),
            "collected_at": node.result.source.get("collected_at"), "summary": node.result.to_dict()["summary"]}


def diff_nodes(before: Node, after: Node) -> Diff:
    """The diff of two analysed nodes (identity mismatch recorded, not enforced: the CLI decides)."""
    from doctor.fleet.load import identity

    ib, ia = identity(before.result, before.digest), identity(after.result, after.digest)
    facts = compare_facts(before.digest, after.digest)
    findings = compare_findings(before.result.findings, after.result.findings, [f.key for f in facts])
    counts = {c: sum(1 for f in findings if f.change == c) for c in ORDER}
    counts["facts"] = len(facts)
    return Diff(_describe(before, ib), _describe(after, ia), tuple(findings), tuple(facts),
                tuple(identity_mismatch(ib, ia)), counts)
