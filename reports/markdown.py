"""Markdown report for pasting into a ticket: summary, then ranked findings with fix commands.

Host data is untrusted: prose is backslash-escaped (so ``<script>`` and link syntax stay text),
inline code uses a backtick run longer than any inside it, and every command block is fenced
with more backticks than the longest run in its content, so a value holding ````` cannot end
the block early.
"""

from __future__ import annotations

import re
from typing import Any

from doctor.findings import SEVERITIES, Finding
from reports.view import View, build_view, sentence

#: characters that act anywhere on a line (emphasis, code, links, HTML, tables, strikethrough, entities)
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
#: characters that act only at the start of a line (headings, lists, quotes, ordered lists)
_LEADING = re.compile(r"^([#+\->=])")
_LEADING_NUMBER = re.compile(r"^(\d+)([.)])")
MAX_EVIDENCE = 12


def text(value: object) -> str:
    """Prose: one line, Markdown/HTML punctuation escaped."""
    flat = _SPECIAL.sub(r"\\\1", " ".join(str(value).split()))
    return _LEADING_NUMBER.sub(r"\1\\\2", _LEADING.sub(r"\\\1", flat))


def code(value: object) -> str:
    """An inline code span that no backtick inside ``value`` can close."""
    flat = " ".join(str(value).split())
    longest = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def fence(lines: list[str] | tuple[str, ...], lang: str = "sh") -> str:
    """A fenced block that its content cannot close."""
    body = "\n".join(lines)
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{body}\n{ticks}"


def _finding(f: Finding) -> list[str]:
    out = [f"### {f.rank}. {f.severity.upper()}: {text(f.title)}", "",
           f"Check {code(f.check)}, subject {code(f.subject)}"
           + (f", confidence {f.confidence * 100:.0f} %" if f.confidence < 1 else ""), ""]
    if f.detail:
        out += [text(f.detail), ""]
    rows = [("Expected", f.expected), ("Observed", f.observed),
            ("Impact", f.impact.line),
            ("Related", ", ".join(f.related))]
    for label, value in rows:
        if value.strip():
            out.append(f"- **{label}:** {text(value)}")
    if any(v.strip() for _l, v in rows):
        out.append("")
    if f.evidence:
        out.append("**Evidence**")
        out.append("")
        for e in f.evidence[:MAX_EVIDENCE]:
            out.append(f"- {code(e.source)}: {code(e.value)}")
        if len(f.evidence) > MAX_EVIDENCE:
            out.append(f"- … {len(f.evidence) - MAX_EVIDENCE} more in the JSON result")
        out.append("")
    for label, cmds in (("Fix now (runtime)", f.fix.runtime), ("Make it persistent", f.fix.persistent),
                        ("Roll back", f.fix.rollback)):
        if cmds:
            out += [f"**{label}**", "", fence(cmds), ""]
    if f.fix.notes:
        out += [f"Note: {text(f.fix.notes)}", ""]
    if f.references:
        out += ["References: " + " · ".join(f"<{r}>" if _safe_url(r) else text(r) for r in f.references), ""]
    return out


def _safe_url(url: str) -> bool:
    return bool(re.fullmatch(r"https?://[^\s<>`]+", url))


def render_markdown_view(view: View) -> str:
    """The Markdown report for a built view."""
    out = [f"# GPU node report: {text(view.host)}" + (" (redacted)" if view.redacted else ""), "",
           f"Source {text(view.source_kind)} {code(view.source_path)}, collected {text(view.collected_at or '(time not recorded)')}, "
           f"generated {text(view.generated_at or '?')}, gpu-node-doctor {code(view.tool_version)}.", ""]
    inv: dict[str, Any] = view.inventory
    gpus = inv.get("gpus") or []
    host = inv.get("host") or {}
    facts = [f"{len(gpus)} GPUs", f"{len(inv.get('nics') or [])} NICs", f"{len(inv.get('numa') or [])} NUMA nodes"]
    if isinstance(host, dict) and host.get("kernel"):
        facts.append(f"kernel {host['kernel']}")
    driver = (inv.get("driver") or {}).get("nvidia") if isinstance(inv.get("driver"), dict) else None
    if driver:
        facts.append(f"driver {driver}")
    out += [text("; ".join(facts)), "", "## Summary", ""]
    counts = ", ".join(f"{n} {s}" for s, n in view.counts.items() if n and s in SEVERITIES and s != "pass")
    out.append(f"{counts or 'no findings'}; {len(view.passed)} checks passed, "
               f"{len(view.not_evaluated)} could not be evaluated.")
    out.append("")
    if view.problems:
        for i, f in enumerate(view.top, 1):
            out.append(f"{i}. **{f.severity.upper()}** {text(sentence(f))}")
        out.append("")
    else:
        out += ["No problem found at low severity or above.", ""]
    out += ["## Findings, worst first", ""]
    for f in view.findings:
        out += _finding(f)
    if view.not_evaluated:
        out += ["## Could not be evaluated", ""]
        out += [f"- {code(c.id)} {text(c.title)}" + (f": {text(c.why)}" if c.why else "") for c in view.not_evaluated]
        out.append("")
    if view.passed:
        out += ["## Passed", ""]
        out += [f"- {code(c.id)} {text(c.title)}" for c in view.passed]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_markdown(data: dict[str, Any]) -> str:
    """The Markdown report for a result dict."""
    return render_markdown_view(build_view(data))
