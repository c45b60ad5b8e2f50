"""Markdown report for pasting into a ticket: summary, then ranked findings with fix commands.

Host data is untrusted: control characters (terminal escapes, bidi overrides) are neutralised,
prose is backslash-escaped (so ``<script>`` and link syntax stay text), inline code uses a backtick run longer than any inside it, and every command block is fenced
with more backticks than the longest run in its content, so a value holding ````` cannot end
the block early.
"""

from __future__ import annotations

import re
from typing import Any

from doctor.findings import SEVERITIES, Finding
from doctor.i18n import _, actor_name, ngettext, severity_counts, severity_name
from doctor.lazyre import lazy
from doctor.runner import Result
from doctor.textsafe import clean
from reports.view import SUMMARY_SUBJECT, SUMMARY_TITLE, View, build_view, short

#: characters that act anywhere on a line (emphasis, code, links, HTML, tables, strikethrough, entities)
_SPECIAL = lazy(r"([\\`*_\[\]<>|~&])")
#: characters that act only at the start of a line (headings, lists, quotes, ordered lists)
_LEADING = lazy(r"^([#+\->=])")
_LEADING_NUMBER = lazy(r"^(\d+)([.)])")
MAX_EVIDENCE = 12


def text(value: object) -> str:
    """Prose: one line, control characters neutralised, Markdown/HTML punctuation escaped."""
    flat = _SPECIAL.sub(r"\\\1", clean(" ".join(str(value).split())))
    return _LEADING_NUMBER.sub(r"\1\\\2", _LEADING.sub(r"\\\1", flat))


def code(value: object) -> str:
    """An inline code span that no backtick inside ``value`` can close."""
    flat = clean(" ".join(str(value).split()))
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def fence(lines: list[str] | tuple[str, ...], lang: str = "sh") -> str:
    """A fenced block that its content cannot close."""
    body = "\n".join(clean(line) for line in lines)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _finding(f: Finding) -> list[str]:
    out = [f"### {f.rank}. " + _("{severity}: {title}").format(severity=severity_name(f.severity).upper(),
                                                                 title=text(f.title)), "",
           _("Check {check}, subject {subject}").format(check=code(f.check), subject=code(f.subject))
           + (_(", who acts: {actor}").format(actor=actor_name(f.acts)) if f.acts else "")
           + (_(", confidence {percent} %").format(percent=f"{f.confidence * 100:.0f}") if f.confidence < 1 else ""),
           ""]
    if f.detail:
        out += [text(f.detail), ""]
    rows = [(_("Expected"), f.expected), (_("Observed"), f.observed),
            (_("Impact"), f.impact.line),
            (_("Related"), ", ".join(f.related[:MAX_EVIDENCE])
             + (" " + _("… {n} more (--format json)").format(n=len(f.related) - MAX_EVIDENCE)
                if len(f.related) > MAX_EVIDENCE else ""))]
    for label, value in rows:
        if value.strip():
            out.append("- " + _("**{label}:** {value}").format(label=label, value=text(value)))
    if any(v.strip() for _l, v in rows):
        out.append("")
    if f.evidence:
        out.append(f"**{_('Evidence')}**")
        out.append("")
        for e in f.evidence[:MAX_EVIDENCE]:
            out.append(f"- {code(e.source)}: {code(e.value)}")
        if len(f.evidence) > MAX_EVIDENCE:
            out.append("- " + _("… {n} more in the JSON result").format(n=len(f.evidence) - MAX_EVIDENCE))
        out.append("")
    for label, cmds in ((_("Fix now (runtime)"), f.fix.runtime), (_("Make it persistent"), f.fix.persistent),
                        (_("Roll back"), f.fix.rollback)):
        if cmds:
            out += [f"**{label}**", "", fence(cmds), ""]
    if f.fix.notes:
        out += [_("Note:") + f" {text(f.fix.notes)}", ""]
    if f.references:
        out += [_("References:") + " " + " · ".join(f"<{r}>" if _safe_url(r) else text(r) for r in f.references), ""]
    return out


def _safe_url(url: str) -> bool:
    return bool(re.fullmatch(r"https?://[^\s<>`]+", url))


def render_markdown_view(view: View) -> str:
    """The Markdown report for a built view."""
    out = ["# " + _("GPU node report: {host}").format(host=text(view.host))
           + (" " + _("(redacted)") if view.redacted else ""), "",
           _("Source {kind} {path}, collected {collected}, generated {generated}, gpu-node-doctor {version}.").format(
               kind=text(view.source_kind), path=code(view.source_path),
               collected=text(view.collected_at or _("(time not recorded)")), generated=text(view.generated_at or "?"),
               version=code(view.tool_version)), ""]
    inv: dict[str, Any] = view.inventory
    gpus = inv.get("gpus") or []
    host = inv.get("host") or {}
    nics, numa = len(inv.get("nics") or []), len(inv.get("numa") or [])
    facts = [ngettext("{n} GPU", "{n} GPUs", len(gpus)).format(n=len(gpus)),
             ngettext("{n} NIC", "{n} NICs", nics).format(n=nics),
             ngettext("{n} NUMA node", "{n} NUMA nodes", numa).format(n=numa)]
    if isinstance(host, dict) and host.get("kernel"):
        facts.append(_("kernel {version}").format(version=host["kernel"]))
    driver = (inv.get("driver") or {}).get("nvidia") if isinstance(inv.get("driver"), dict) else None
    if driver:
        facts.append(_("driver {version}").format(version=driver))
    out += [text(_("; ").join(facts)), "", "## " + _("Summary"), ""]
    counts = severity_counts((s, n) for s, n in view.counts.items() if s in SEVERITIES and s != "pass")
    out.append((counts or _("no findings")) + _("; ") + _("{passed} checks passed, {unknown} could not be evaluated.").format(
        passed=len(view.passed), unknown=len(view.not_evaluated)))
    out.append("")
    if view.problems:
        # one line per problem, the hardware's and firmware's first within a severity (what the vendor acts on)
        out += ["| # | " + " | ".join((_("Severity"), _("Subject"), _("Finding"), _("Who acts"))) + " |",
                "|---:|---|---|---|---|"]
        for f in view.first_page:
            out.append(f"| {f.rank} | **{text(severity_name(f.severity).upper())}** | "
                       f"{text(short(f.subject, SUMMARY_SUBJECT))} | {text(short(f.title, SUMMARY_TITLE))} | "
                       f"{text(actor_name(f.acts))} |")
        out.append("")
    else:
        out += [_("No problem found at low severity or above."), ""]
    if view.unknowns:
        out += [_("Could not be evaluated:") + " " + ", ".join(code(f.check) for f in view.unknowns), ""]
    out += ["## " + _("Findings, worst first"), ""]
    for f in view.findings:
        out += _finding(f)
    if view.omitted:
        out += [(_("… {n} more findings are not shown (a report shows the worst {shown} and the unevaluated checks); "
                   "the JSON result holds them all.") if view.unknowns else
                 _("… {n} more findings are not shown (a report shows the worst {shown}); "
                   "the JSON result holds them all.")).format(n=view.omitted, shown=len(view.findings)), ""]
    if view.not_evaluated:
        out += ["## " + _("Could not be evaluated"), ""]
        out += [f"- {code(c.id)} " + (_("{title}: {detail}").format(title=text(c.title), detail=text(c.why)) if c.why
                                      else text(c.title)) for c in view.not_evaluated]
        out.append("")
    if view.passed:
        out += ["## " + _("Passed"), ""]
        out += [f"- {code(c.id)} {text(_(c.title))}" for c in view.passed]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_markdown(result: Result, **_options: Any) -> str:
    """The Markdown report for a result."""
    return render_markdown_view(build_view(result))
