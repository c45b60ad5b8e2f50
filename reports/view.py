"""What every report shows, prepared once from the result (no verdicts computed here).

``build_view`` turns a :class:`~doctor.runner.Result` (fresh, or read by :mod:`doctor.result_io`)
into the sections the HTML, PDF, Markdown and fix-script renderers lay out.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from doctor.findings import (
    CRITICAL,
    HIGH,
    INFO,
    LOW,
    MEDIUM,
    PASS,
    SEVERITIES,
    UNKNOWN,
    Evidence,
    Finding,
    severity_order,
)
from doctor.record import record
from doctor.runner import Result

PROBLEMS = (CRITICAL, HIGH, MEDIUM, LOW)
#: How many findings the summary names
TOP = 3
#: What a renderer accepts from a saved result: file size, findings shown (worst first), evidence lines
#: kept per finding and characters per text field. A real result is a few hundred KiB with tens of
#: findings; a crafted one must not take PDF rendering to tens of GB.
MAX_FINDINGS = 500
MAX_EVIDENCE = 50
MAX_FIELD = 4000


@record
class CheckLine:
    """A check in the passed / could-not-evaluate / did-not-apply lists."""

    id: str
    title: str
    why: str = ""


@record
class View:
    """Sections of a report, in display order."""

    result: Result
    host: str
    source_kind: str
    source_path: str
    collected_at: str
    generated_at: str
    tool_version: str
    redacted: bool
    counts: dict[str, int]
    problems: list[Finding]
    infos: list[Finding]
    unknowns: list[Finding]
    top: list[Finding]
    passed: list[CheckLine]
    not_evaluated: list[CheckLine]
    not_applicable: list[CheckLine]
    inventory: dict[str, Any] = field(default_factory=dict)
    omitted: int = 0  # findings beyond MAX_FINDINGS, not shown

    @property
    def findings(self) -> list[Finding]:
        """Every finding shown in the ranked list (problems, then information)."""
        return [*self.problems, *self.infos]


def sentence(f: Finding) -> str:
    """A finding in one sentence for the summary."""
    text = f"{f.title} ({f.subject})" if f.subject and f.subject not in f.title else f.title
    if f.impact.text and f.impact.text.rstrip(".") not in f.title:
        text += f": {f.impact.text}"
    return text.rstrip(".") + "."


def _check_lines(checks: list[dict[str, Any]], status: str) -> list[CheckLine]:
    return [CheckLine(str(c.get("id", "")), str(c.get("title", ""))) for c in checks
            if isinstance(c, dict) and c.get("status") == status]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def _capped(items: tuple[str, ...]) -> tuple[str, ...]:
    return items if len(items) <= MAX_EVIDENCE else (*items[:MAX_EVIDENCE], f"… {len(items) - MAX_EVIDENCE} more")


def _bounded(f: Finding) -> Finding:
    """``f`` with long text fields clipped and at most :data:`MAX_EVIDENCE` evidence lines, references and ids."""
    texts: dict[str, Any] = {k: _clip(v) for k in _TEXT_FIELDS if len(v := getattr(f, k)) > MAX_FIELD}
    evidence = tuple(Evidence(_clip(e.source), _clip(e.value)) for e in f.evidence[:MAX_EVIDENCE])
    if len(f.evidence) > MAX_EVIDENCE:
        evidence += (Evidence("gnd", f"… {len(f.evidence) - MAX_EVIDENCE} more in the JSON result"),)
    if not texts and evidence == f.evidence and len(f.references) <= MAX_EVIDENCE >= len(f.related):
        return f
    return replace(f, **texts, evidence=evidence, references=_capped(f.references), related=_capped(f.related))


_TEXT_FIELDS = ("subject", "title", "detail", "expected", "observed", "check", "category", "subject_id")


def build_view(result: Result) -> View:
    """Sections of the report for ``result`` (masked already, at the pipeline or ``--from-json`` boundary).

    At most :data:`MAX_FINDINGS` findings are shown (``omitted`` counts the rest) and long fields are clipped.
    """
    from doctor.i18n import localise

    result = localise(result)  # the prose in the current language (the same result when already done)
    findings = result.findings
    if len(findings) > MAX_FINDINGS:
        findings = sorted(findings, key=lambda f: severity_order(f.severity))
    omitted = max(0, len(findings) - MAX_FINDINGS)
    findings = [_bounded(f) for f in findings[:MAX_FINDINGS]]
    if any(f.rank == 0 for f in findings):  # hand-made JSON: keep its order, number it
        findings = [replace(f, rank=i) for i, f in enumerate(findings, 1)]
    problems = [f for f in findings if f.severity in PROBLEMS]
    infos = [f for f in findings if f.severity == INFO]
    unknowns = [f for f in findings if f.severity == UNKNOWN]
    checks = [c for c in result.checks if isinstance(c, dict)]
    not_evaluated = [CheckLine(f.check, f.title, f.detail or "; ".join(e.value for e in f.evidence))
                     for f in unknowns]
    passed = [CheckLine(str(c.get("id", "")), str(c.get("title", ""))) for c in result.passed_checks()]
    pass_titles = {f.check: f.title for f in findings if f.severity == PASS}
    passed = [CheckLine(c.id, c.title, pass_titles.get(c.id, "")) for c in passed]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    counts[PASS] = len(passed)  # checks passed, as every output counts them (Result.passed_checks)
    src = result.source
    inv = result.inventory
    host = str(src.get("hostname") or (inv.get("host") or {}).get("hostname") or "unknown host")
    return View(
        result=result, host=host, source_kind=str(src.get("kind") or "?"), source_path=str(src.get("path") or ""),
        collected_at=str(src.get("collected_at") or ""), generated_at=result.generated_at,
        tool_version=result.tool_version, redacted=result.redacted,
        counts=counts, problems=problems, infos=infos, unknowns=unknowns, top=problems[:TOP],
        passed=passed, not_evaluated=not_evaluated,
        not_applicable=_check_lines(checks, "not_applicable"), inventory=inv, omitted=omitted,
    )
