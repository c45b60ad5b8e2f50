"""Terminal output: ranked findings, coloured by severity, with their fix commands."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from doctor.findings import CRITICAL, HIGH, INFO, LOW, MEDIUM, PASS, SEVERITIES, UNKNOWN, Finding
from doctor.runner import Result

_COLOURS = {CRITICAL: "1;97;41", HIGH: "1;31", MEDIUM: "33", LOW: "36", INFO: "2", UNKNOWN: "35", PASS: "32"}


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set."""
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class _Painter:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text


def _clean(text: str) -> str:
    """Drop control characters so data from a host cannot drive the terminal."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "\ufffd" for ch in text)


def _header(result: Result, paint: _Painter) -> list[str]:
    src = result.source
    inv: dict[str, Any] = result.inventory or {}
    host = (inv.get("host") or {})
    lines = [paint(f"gpu-node-doctor — {src.get('kind')} {src.get('path')}", "1")
             + f"  host {src.get('hostname') or '?'}, collected {src.get('collected_at') or '?'}"]
    gpus = inv.get("gpus") or []
    names = sorted({g.get("name") or "unknown model" for g in gpus})
    parts = [f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}" + (f" ({', '.join(names)})" if gpus else "")]
    parts.append(f"{len(inv.get('nics') or [])} NICs")
    parts.append(f"{len(inv.get('numa') or [])} NUMA nodes")
    if host.get("kernel"):
        parts.append(f"kernel {host['kernel']}")
    driver = (inv.get("driver") or {}).get("nvidia")
    if driver:
        parts.append(f"driver {driver}")
    if host.get("virtual_machine"):
        parts.append("virtual machine")
    lines.append("; ".join(parts))
    return lines


def _finding(f: Finding, paint: _Painter, verbose: bool) -> list[str]:
    sev = paint(f"{f.severity.upper():8}", _COLOURS.get(f.severity, "0"))
    lines = [f"{f.rank:>3} {sev} {paint(f.check, '1')}  {_clean(f.subject)} — {_clean(f.title)}"]
    pad = " " * 13
    if f.severity in (INFO, PASS) and not verbose:
        return lines
    if f.detail:
        lines.append(pad + _clean(f.detail))
    if f.expected or f.observed:
        lines.append(pad + f"expected: {_clean(f.expected)}  observed: {_clean(f.observed)}")
    if f.related:
        lines.append(pad + "related: " + ", ".join(_clean(r) for r in f.related))
    if f.impact.line:
        lines.append(pad + "impact: " + _clean(f.impact.line))
    for ev in f.evidence[: (None if verbose else 4)]:
        lines.append(pad + paint(f"evidence: {_clean(ev.source)}: {_clean(ev.value)}", "2"))
    if len(f.evidence) > 4 and not verbose:
        lines.append(pad + paint(f"evidence: … {len(f.evidence) - 4} more (--verbose or --format json)", "2"))
    for label, cmds in (("fix", f.fix.runtime), ("persist", f.fix.persistent), ("undo", f.fix.rollback)):
        for c in cmds:
            lines.append(pad + f"{label + ':':9}" + paint(_clean(c), "32" if label == "fix" else "0"))
    if f.fix.notes:
        lines.append(pad + "note: " + _clean(f.fix.notes))
    return lines


def render_text(result: Result, stream: TextIO | None = None, verbose: bool = False,
                colour: bool | None = None) -> str:
    """The whole report as text (also written to ``stream`` when given)."""
    out = stream or sys.stdout
    paint = _Painter(use_colour(out) if colour is None else colour)
    lines = _header(result, paint)
    problems = [f for f in result.findings if f.severity not in (PASS, UNKNOWN, INFO)]
    infos = [f for f in result.findings if f.severity == INFO]
    unknowns = [f for f in result.findings if f.severity == UNKNOWN]
    lines.append("")
    if problems:
        for f in problems:
            lines.extend(_finding(f, paint, verbose))
            lines.append("")
    else:
        lines.append(paint("No problem found at low severity or above.", "32"))
        lines.append("")
    if infos:
        lines.append(paint("Information:", "1"))
        for f in infos:
            lines.extend(_finding(f, paint, verbose))
        lines.append("")
    if unknowns:
        lines.append(paint("Could not evaluate:", "1"))
        for f in unknowns:
            lines.append(f"    {paint(f.check, '35')}  {_clean(f.subject)} — {_clean(f.title)}"
                         + (f": {_clean(f.detail)}" if f.detail else ""))
        lines.append("")
    counts = {s: sum(1 for f in result.findings if f.severity == s) for s in SEVERITIES}
    passed = [c["id"] for c in result.checks if c.get("status") == PASS]
    na = [c["id"] for c in result.checks if c.get("status") == "not_applicable"]
    if passed:
        lines.append(paint("Checked, nothing found: ", "1") + paint(", ".join(passed), "32"))
    if na:
        lines.append(paint("Did not apply here: ", "1") + ", ".join(na))
    if passed or na:
        lines.append("")
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n and s != PASS)
    lines.append(paint("Summary: ", "1") + (summary or "nothing to report")
                 + f"; {len(passed)} checks passed, {len(na)} did not apply"
                 + f" ({result.duration_s:.2f} s)")
    text = "\n".join(lines) + "\n"
    out.write(text)
    return text
