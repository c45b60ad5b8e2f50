"""Terminal output: ranked findings, coloured by severity, with their fix commands."""

from __future__ import annotations

from typing import Any

from doctor.findings import CRITICAL, HIGH, INFO, LOW, MEDIUM, PASS, UNKNOWN, Finding
from doctor.i18n import _, actor_name, ngettext, severity_counts, severity_name, width
from doctor.i18n import ljust as _ljust
from doctor.runner import Result
from doctor.textsafe import clean
from reports.view import PROBLEMS, SUMMARY_SUBJECT, SUMMARY_TITLE, first_page, short

#: ``related`` ids printed per finding (a finding merged over 2,000 processes relates to all of them)
MAX_RELATED = 10
_COLOURS = {CRITICAL: "1;97;41", HIGH: "1;31", MEDIUM: "33", LOW: "36", INFO: "2", UNKNOWN: "35", PASS: "32"}


class _Painter:
    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text


def _block(text: object, pad: str) -> str:
    """Multi-line prose, every line indented under its finding (a newline cannot forge a finding line)."""
    return clean(text, multiline=True).replace("\n", "\n" + pad)


def _header(result: Result, paint: _Painter) -> list[str]:
    src = result.source
    inv: dict[str, Any] = result.inventory or {}
    host = (inv.get("host") or {})
    lines = [paint(f"gpu-node-doctor — {clean(src.get('kind'))} {clean(src.get('path'))}", "1")
             + "  " + _("host {host}, collected {when}").format(host=clean(src.get("hostname") or "?"),
                                                           when=clean(src.get("collected_at") or "?"))]
    gpus = [g for g in inv.get("gpus") or [] if isinstance(g, dict)]
    names = sorted({clean(g.get("name") or _("unknown model")) for g in gpus})
    parts = [ngettext("{n} GPU", "{n} GPUs", len(gpus)).format(n=len(gpus))
             + (_(" ({models})").format(models=", ".join(names)) if gpus else "")]
    nics, numa = len(inv.get("nics") or []), len(inv.get("numa") or [])
    parts.append(ngettext("{n} NIC", "{n} NICs", nics).format(n=nics))
    parts.append(ngettext("{n} NUMA node", "{n} NUMA nodes", numa).format(n=numa))
    if host.get("kernel"):
        parts.append(_("kernel {version}").format(version=clean(host["kernel"])))
    driver = (inv.get("driver") or {}).get("nvidia")
    if driver:
        parts.append(_("driver {version}").format(version=clean(driver)))
    if host.get("virtual_machine"):
        parts.append(_("virtual machine"))
    lines.append(_("; ").join(parts))
    return lines


def _finding(f: Finding, paint: _Painter, verbose: bool) -> list[str]:
    sev = paint(_ljust(severity_name(f.severity).upper(), 8), _COLOURS.get(f.severity, "0"))
    lines = [f"{f.rank:>3} {sev} {paint(clean(f.check), '1')}  {clean(f.subject)} — {clean(f.title)}"]
    pad = " " * 13
    if f.severity in (INFO, PASS) and not verbose:
        return lines
    if f.detail:
        lines.append(pad + _block(f.detail, pad))
    if f.expected or f.observed:
        lines.append(pad + _("expected:") + f" {clean(f.expected)}  " + _("observed:") + f" {clean(f.observed)}")
    if f.related:
        shown = ", ".join(clean(r) for r in f.related[:MAX_RELATED])
        more = len(f.related) - MAX_RELATED
        lines.append(pad + _("related:") + " " + shown + (" " + _("… {n} more (--format json)").format(n=more) if more > 0 else ""))
    if f.impact.line:
        lines.append(pad + _("impact:") + " " + clean(f.impact.line))
    for ev in f.evidence[: (None if verbose else 4)]:
        lines.append(pad + paint(_("evidence:") + f" {clean(ev.source)}: {clean(ev.value)}", "2"))
    if len(f.evidence) > 4 and not verbose:
        lines.append(pad + paint(_("evidence:") + " " + _("… {n} more (--verbose or --format json)").format(
            n=len(f.evidence) - 4), "2"))
    for kind, label, cmds in (("fix", _("fix:"), f.fix.runtime), ("persist", _("persist:"), f.fix.persistent),
                              ("undo", _("undo:"), f.fix.rollback)):
        for c in cmds:
            lines.append(pad + _ljust(label, 9) + paint(clean(c), "32" if kind == "fix" else "0"))
    if f.fix.notes:
        lines.append(pad + _("note:") + " " + _block(f.fix.notes, pad))
    return lines


def _first_lines(problems: list[Finding], unknowns: list[Finding], paint: _Painter) -> list[str]:
    """The summary at the top: one line per problem (rank, severity, who acts, subject, title), by severity
    and, within one, the hardware's and firmware's first; then the checks that could not be evaluated."""
    if not problems and not unknowns:
        return []
    lines = [paint(_("Summary, one line per finding (details below):"), "1")]
    ordered = first_page(problems)
    actors = [actor_name(f.acts) for f in ordered]
    column = max((width(a) for a in actors), default=0)
    for f, actor in zip(ordered, actors):
        sev = paint(_ljust(severity_name(f.severity).upper(), 8), _COLOURS.get(f.severity, "0"))
        lines.append(f"{'#' + str(f.rank):>4} {sev} {_ljust(actor, column)}  {clean(short(f.subject, SUMMARY_SUBJECT))} — "
                     f"{clean(short(f.title, SUMMARY_TITLE))}")
    if unknowns:
        lines.append(paint(_("Could not be evaluated:"), "35") + " " + "; ".join(
            clean(f.check) for f in unknowns))
    lines.append("")
    return lines


def render_text(result: Result, verbose: bool = False, colour: bool = False, **_options: Any) -> str:
    """The whole report as text (``colour``: ANSI colours by severity, see :func:`doctor.output.use_colour`)."""
    paint = _Painter(colour)
    lines = _header(result, paint)
    problems = [f for f in result.findings if f.severity in PROBLEMS]
    infos = [f for f in result.findings if f.severity == INFO]
    unknowns = [f for f in result.findings if f.severity == UNKNOWN]
    lines.append("")
    lines.extend(_first_lines(problems, unknowns, paint))
    if problems:
        for f in problems:
            lines.extend(_finding(f, paint, verbose))
            lines.append("")
    else:
        lines.append(paint(_("No problem found at low severity or above."), "32"))
        lines.append("")
    if infos:
        lines.append(paint(_("Information:"), "1"))
        for f in infos:
            lines.extend(_finding(f, paint, verbose))
        lines.append("")
    if unknowns:  # numbered too, in rank order (after the information), so the numbering never skips
        lines.append(paint(_("Could not evaluate:"), "1"))
        for f in unknowns:
            title = f"{clean(f.subject)} — {clean(f.title)}"
            lines.append(f"{f.rank:>3} {paint(clean(f.check), '35')}  "
                         + (_("{title}: {detail}").format(title=title, detail=clean(f.detail)) if f.detail else title))
        lines.append("")
    counts = result.summary()
    passed = [str(c["id"]) for c in result.passed_checks()]
    na = [c["id"] for c in result.checks if c.get("status") == "not_applicable"]
    if passed:
        lines.append(paint(_("Checked, nothing found:") + " ", "1") + paint(clean(", ".join(passed)), "32"))
    if na:
        lines.append(paint(_("Did not apply here:") + " ", "1") + clean(", ".join(na)))
    if passed or na:
        lines.append("")
    summary = severity_counts((s, n) for s, n in counts.items() if s != PASS)
    lines.append(paint(_("Summary:") + " ", "1") + (summary or _("nothing to report"))
                 + _("; ") + _("{passed} checks passed, {na} did not apply").format(passed=counts[PASS], na=len(na))
                 + _(" ({seconds} s)").format(seconds=f"{result.duration_s:.2f}"))
    return "\n".join(lines) + "\n"
