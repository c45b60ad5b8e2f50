"""Findings: one schema (the JSON contract) with severity, subject, evidence, impact and fixes.

Ranking happens once, here: by severity, then by impact score, then by check id and subject.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field, replace
from typing import Any

CRITICAL, HIGH, MEDIUM, LOW, INFO, UNKNOWN, PASS = "critical", "high", "medium", "low", "info", "unknown", "pass"
#: Display and ranking order, worst first.
SEVERITIES = (CRITICAL, HIGH, MEDIUM, LOW, UNKNOWN, INFO, PASS)
#: Levels ``--fail-on`` accepts, worst first (``unknown`` and ``pass`` never fail a run).
FAIL_LEVELS = (CRITICAL, HIGH, MEDIUM, LOW, INFO)
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}
CATEGORIES = ("pcie", "iommu", "numa", "network", "rdma", "runtime", "gpu", "baseline", "doctor")


def severity_order(severity: str) -> int:
    """0 for critical up to 6 for pass."""
    return _ORDER.get(severity, len(SEVERITIES))


def at_least(severity: str, level: str) -> bool:
    """Whether ``severity`` is at or above the ``--fail-on`` ``level``."""
    if severity not in FAIL_LEVELS or level not in FAIL_LEVELS:
        return False
    return FAIL_LEVELS.index(severity) <= FAIL_LEVELS.index(level)


def cmd(*argv: object) -> str:
    """A shell command with every argument quoted (``cmd("sysctl", "-w", "a=b c")``)."""
    return shlex.join(str(a) for a in argv)


def q(value: object) -> str:
    """One shell-quoted word, for commands that need redirections or pipes around it."""
    return shlex.quote(str(value))


@dataclass(frozen=True)
class Evidence:
    """One observation: the file or command it came from and what it said."""

    source: str
    value: str


@dataclass(frozen=True)
class Impact:
    """How much this costs: ``score`` 0-100 (share of throughput at stake) and a sentence."""

    score: float = 0.0
    text: str = ""


@dataclass(frozen=True)
class Fix:
    """Commands to apply now, to make it survive a reboot, and to undo; all values shell-quoted."""

    runtime: tuple[str, ...] = ()
    persistent: tuple[str, ...] = ()
    rollback: tuple[str, ...] = ()
    notes: str = ""

    @property
    def empty(self) -> bool:
        return not (self.runtime or self.persistent or self.rollback or self.notes)


@dataclass(frozen=True)
class Finding:
    """What one check concluded about one subject."""

    severity: str
    subject: str
    title: str
    detail: str = ""
    evidence: tuple[Evidence, ...] = ()
    expected: str = ""
    observed: str = ""
    impact: Impact = field(default_factory=Impact)
    fix: Fix = field(default_factory=Fix)
    references: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    confidence: float = 1.0
    check: str = ""
    category: str = ""
    rank: int = 0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["evidence"] = [asdict(e) for e in self.evidence]
        for key in ("references", "related"):
            data[key] = list(data[key])
        for key in ("runtime", "persistent", "rollback"):
            data["fix"][key] = list(data["fix"][key])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """Rebuild a finding from its JSON form (``gnd report --from-json``, ``gnd diff``)."""
        fix = data.get("fix") or {}
        impact = data.get("impact") or {}
        return cls(
            severity=str(data.get("severity", UNKNOWN)), subject=str(data.get("subject", "")),
            title=str(data.get("title", "")), detail=str(data.get("detail", "")),
            evidence=tuple(Evidence(str(e.get("source", "")), str(e.get("value", "")))
                           for e in data.get("evidence") or [] if isinstance(e, dict)),
            expected=str(data.get("expected", "")), observed=str(data.get("observed", "")),
            impact=Impact(float(impact.get("score", 0) or 0), str(impact.get("text", ""))),
            fix=Fix(tuple(map(str, fix.get("runtime") or ())), tuple(map(str, fix.get("persistent") or ())),
                    tuple(map(str, fix.get("rollback") or ())), str(fix.get("notes", ""))),
            references=tuple(map(str, data.get("references") or ())),
            related=tuple(map(str, data.get("related") or ())),
            confidence=float(data.get("confidence", 1.0) or 0), check=str(data.get("check", "")),
            category=str(data.get("category", "")), rank=int(data.get("rank", 0) or 0),
        )


def rank(findings: list[Finding]) -> list[Finding]:
    """Sort worst first (severity, then impact) and number them from 1."""
    ordered = sorted(findings, key=lambda f: (severity_order(f.severity), -f.impact.score, f.check, f.subject))
    return [replace(f, rank=i) for i, f in enumerate(ordered, 1)]


def summary(findings: list[Finding]) -> dict[str, int]:
    """Count per severity, every severity present as a key."""
    counts = dict.fromkeys(SEVERITIES, 0)
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    return counts
