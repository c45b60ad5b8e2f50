"""What every report shows, prepared once from the JSON result (no verdicts computed here).

``build_view`` turns a result dict (validated by :func:`doctor.result_io.validate`) into the
sections the HTML, PDF and Markdown renderers lay out.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from doctor.errors import DoctorError
from doctor.findings import (
    CRITICAL,
    HIGH,
    INFO,
    LOW,
    MEDIUM,
    PASS,
    SEVERITIES,
    UNKNOWN,
    Finding,
    severity_order,
)
from doctor.record import record
from doctor.redact import mask_strings
from doctor.result_io import validate
from doctor.runner import Result

TOOL_NAME = "gpu-node-doctor"
#: Result schema majors this gnd reads (1.x: fixes as command text, shown but never run)
SUPPORTED_MAJORS = ("1", "2")
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

    data: dict[str, Any]
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


def _bounded_finding(raw: dict[str, Any]) -> dict[str, Any]:
    """A finding dict with long text fields clipped and at most :data:`MAX_EVIDENCE` evidence lines."""
    out = {k: _clip(v) if isinstance(v, str) else v for k, v in raw.items()}
    evidence = out.get("evidence")
    if isinstance(evidence, list):
        kept = [{k: _clip(v) if isinstance(v, str) else v for k, v in e.items()}
                for e in evidence[:MAX_EVIDENCE] if isinstance(e, dict)]
        if len(evidence) > MAX_EVIDENCE:
            kept.append({"source": "gnd", "value": f"… {len(evidence) - MAX_EVIDENCE} more in the JSON result"})
        out["evidence"] = kept
    for key in ("references", "related"):
        if isinstance(out.get(key), list) and len(out[key]) > MAX_EVIDENCE:
            out[key] = [*out[key][:MAX_EVIDENCE], f"… {len(out[key]) - MAX_EVIDENCE} more"]
    return out


def _bounded(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """``data`` with at most :data:`MAX_FINDINGS` findings (worst first) and bounded fields; how many were cut."""
    raw = [f for f in data.get("findings") or [] if isinstance(f, dict)]
    if len(raw) > MAX_FINDINGS:
        raw = sorted(raw, key=lambda f: severity_order(str(f.get("severity"))))
    kept = [_bounded_finding(f) for f in raw[:MAX_FINDINGS]]
    return {**data, "findings": kept}, max(0, len(raw) - MAX_FINDINGS)


def build_view(data: dict[str, Any]) -> View:
    """Sections of the report for ``data`` (a validated result dict); secrets are masked again here.

    At most :data:`MAX_FINDINGS` findings are shown (``omitted`` counts the rest) and long fields are clipped.
    """
    data, omitted = _bounded(validate(data))
    data = mask_strings(data)
    try:
        result = Result.from_dict(data)
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise DoctorError(f"malformed gpu-node-doctor result: {exc}") from None
    findings = result.findings
    if any(f.rank == 0 for f in findings):  # hand-made JSON: keep its order, number it
        findings = [Finding.from_dict({**f.to_dict(), "rank": i}) for i, f in enumerate(findings, 1)]
    problems = [f for f in findings if f.severity in PROBLEMS]
    infos = [f for f in findings if f.severity == INFO]
    unknowns = [f for f in findings if f.severity == UNKNOWN]
    checks = [c for c in result.checks if isinstance(c, dict)]
    not_evaluated = [CheckLine(f.check, f.title, f.detail or "; ".join(e.value for e in f.evidence))
                     for f in unknowns]
    passed = _check_lines(checks, PASS)
    pass_titles = {f.check: f.title for f in findings if f.severity == PASS}
    passed = [CheckLine(c.id, c.title, pass_titles.get(c.id, "")) for c in passed]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    src = result.source
    inv = result.inventory
    host = str(src.get("hostname") or (inv.get("host") or {}).get("hostname") or "unknown host")
    tool_obj = data.get("tool")
    tool: dict[str, Any] = tool_obj if isinstance(tool_obj, dict) else {}
    return View(
        data=data, host=host, source_kind=str(src.get("kind") or "?"), source_path=str(src.get("path") or ""),
        collected_at=str(src.get("collected_at") or ""), generated_at=result.generated_at,
        tool_version=str(tool.get("version") or "?"), redacted=bool(data.get("redacted")),
        counts=counts, problems=problems, infos=infos, unknowns=unknowns, top=problems[:TOP],
        passed=passed, not_evaluated=not_evaluated,
        not_applicable=_check_lines(checks, "not_applicable"), inventory=inv, omitted=omitted,
    )
