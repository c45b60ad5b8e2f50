"""Rich ``Text`` for the TUI. Host data is appended as plain text, never parsed as markup.

Colours come from the Textual theme's variables (``error``, ``warning``, ...), so the screen reads
the same in a light or a dark terminal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from doctor.findings import CRITICAL, HIGH, INFO, LOW, MEDIUM, PASS, SEVERITIES, UNKNOWN, Finding
from doctor.i18n import N_, _, ljust, ngettext, severity_name
from doctor.tui.model import CATEGORY_FILTERS, SEVERITY_FILTERS, RunDiff, category_label, clean
from doctor.tui.topology import BAD, IDLE, TopoNode, walk

#: severity -> (theme variable, extra style)
_SEVERITY_STYLE = {CRITICAL: ("error", "bold reverse"), HIGH: ("error", "bold"), MEDIUM: ("warning", ""),
                   LOW: ("primary", ""), UNKNOWN: ("secondary", "italic"), INFO: ("foreground", "dim"),
                   PASS: ("success", "")}


class Palette:
    """Rich styles derived from the current theme's CSS variables."""

    def __init__(self, variables: Mapping[str, str]) -> None:
        self.vars = variables

    def colour(self, name: str) -> str:
        value = self.vars.get(name, "")
        return value if value.startswith("#") else ""

    def severity(self, severity: str) -> str:
        var, extra = _SEVERITY_STYLE.get(severity, ("foreground", ""))
        return f"{extra} {self.colour(var)}".strip()

    @property
    def muted(self) -> str:
        return "dim"

    @property
    def heading(self) -> str:
        return f"bold {self.colour('accent')}".strip()

    @property
    def command(self) -> str:
        return self.colour("success") or "bold"


#: source kinds as shown in the header
SOURCE_KINDS = {"snapshot": N_("snapshot"), "live": N_("live"), "json": N_("saved result")}


def severity_label(severity: str) -> str:
    """``HIGH`` (English, upper case) / ``高``: the severity column's word."""
    return severity_name(severity).upper()


def severity_cell(severity: str, pal: Palette) -> Text:
    return Text(severity_label(severity), style=pal.severity(severity))


def counts_text(findings: Sequence[Finding], pal: Palette, counts: Mapping[str, int] | None = None) -> Text:
    """``2 CRITICAL  3 HIGH  1 MEDIUM ...`` with every severity present, passes last; ``counts``: the
    result's (:meth:`~doctor.runner.Result.summary`: ``pass`` counts the checks that passed)."""
    out = Text()
    for sev in SEVERITIES:
        n = counts.get(sev, 0) if counts is not None else sum(1 for f in findings if f.severity == sev)
        if n or sev in (CRITICAL, HIGH):
            out.append(f" {n} {severity_name(sev)} ", style=pal.severity(sev) if n else pal.muted)
    return out


def header_text(result_source: Mapping[str, Any], inventory: Mapping[str, Any], findings: Sequence[Finding],
                pal: Palette, status: str = "", counts: Mapping[str, int] | None = None) -> Text:
    """Line 1: source and host, line 2: counts per severity (and what the app is doing)."""
    host = clean(result_source.get("hostname") or "?")
    raw_kind = str(result_source.get("kind") or "")
    kind = clean(_(SOURCE_KINDS[raw_kind]) if raw_kind in SOURCE_KINDS else raw_kind)
    where = clean(result_source.get("path") or "")
    gpus = len(inventory.get("gpus") or [])
    t = Text()
    t.append("gnd ", style="bold")
    t.append(host, style="bold")
    t.append(f"  {kind} {where}".rstrip() + "  " + ngettext("{n} GPU", "{n} GPUs", gpus).format(n=gpus),
             style=pal.muted)
    t.append("\n")
    t.append_text(counts_text(findings, pal, counts))
    if status:
        t.append("  " + clean(status), style=pal.heading)
    return t


def filter_text(severity: int, category: int, shown: int, total: int, pal: Palette) -> Text:
    sev = _(SEVERITY_FILTERS[severity % len(SEVERITY_FILTERS)][0])
    cat = _(CATEGORY_FILTERS[category % len(CATEGORY_FILTERS)][0])
    t = Text()
    t.append(_("{shown} of {total} shown").format(shown=shown, total=total), style="bold")
    t.append("  " + _("severity:") + " ", style=pal.muted)
    t.append(sev, style="bold" if severity else "")
    t.append(" (s)", style=pal.muted)
    t.append("  " + _("area:") + " ", style=pal.muted)
    t.append(cat, style="bold" if category else "")
    t.append(" (f)", style=pal.muted)
    return t


def _section(t: Text, title: str, pal: Palette) -> None:
    t.append("\n")
    t.append(title, style=pal.heading)
    t.append("\n")


def _commands(t: Text, cmds: Sequence[str], pal: Palette) -> None:
    for c in cmds:
        for i, line in enumerate(clean(c).splitlines() or [""]):
            t.append("  $ " if i == 0 else "    ", style=pal.muted)
            t.append(line, style=pal.command)
            t.append("\n")


def finding_text(f: Finding, pal: Palette, full: bool = False) -> Text:
    """Everything about one finding, worst-first reading order: what, why, proof, cost, fix."""
    t = Text()
    t.append(f" {severity_label(f.severity)} ", style=pal.severity(f.severity) + (" reverse" if f.severity != CRITICAL else ""))
    t.append(f"  #{f.rank}  ", style="bold")
    t.append(clean(f.check), style=pal.muted)
    t.append(f"  {_(category_label(f.category))}\n", style=pal.muted)
    t.append(clean(f.subject), style="bold")
    t.append(" — ")
    t.append(clean(f.title), style="bold")
    t.append("\n")
    if f.detail:
        t.append("\n" + clean(f.detail) + "\n")
    if f.expected or f.observed:
        t.append("\n")
        t.append(ljust(_("Expected"), 10), style=pal.heading)
        t.append(clean(f.expected or "—") + "\n")
        t.append(ljust(_("Observed"), 10), style=pal.heading)
        t.append(clean(f.observed or "—") + "\n")
    if f.impact.line:
        t.append(ljust(_("Impact"), 10), style=pal.heading)
        t.append(clean(f.impact.line) + "\n")
    if f.evidence:
        _section(t, _("Evidence"), pal)
        for ev in f.evidence:
            t.append("  " + clean(ev.source) + ": ", style=pal.muted)
            t.append(clean(ev.value) + "\n")
    if f.fix.runtime:
        _section(t, _("Fix now") + "  " + _("(press c to copy)"), pal)
        _commands(t, f.fix.runtime, pal)
    if f.fix.persistent:
        _section(t, _("Make it persistent") + ("" if f.fix.runtime else "  " + _("(press c to copy)")), pal)
        _commands(t, f.fix.persistent, pal)
    if f.fix.rollback:
        _section(t, _("Undo"), pal)
        _commands(t, f.fix.rollback, pal)
    if f.fix.notes:
        _section(t, _("Note"), pal)
        t.append("  " + clean(f.fix.notes) + "\n")
    if f.related:
        _section(t, _("Related"), pal)
        t.append("  " + ", ".join(clean(r) for r in f.related) + "\n")
    if f.references:
        _section(t, _("References"), pal)
        for r in f.references:
            t.append("  " + clean(r) + "\n")
    if f.confidence < 1.0:
        t.append("\n" + _("Confidence {percent}").format(percent=f"{f.confidence:.0%}") + "\n", style=pal.muted)
    return t


def topo_label(node: TopoNode, pal: Palette, finding_count: int = 0, worst: str = "") -> Text:
    t = Text()
    style = {BAD: f"bold {pal.colour('error')}".strip(), IDLE: pal.colour("warning")}.get(node.link, "")
    if node.kind == "numa":
        style = pal.heading
    t.append(clean(node.head), style=style)
    if node.link == BAD:
        t.append(" ◀ " + _("degraded"), style=f"bold {pal.colour('error')}".strip())
    if finding_count:
        t.append("  " + ngettext("{n} finding", "{n} findings", finding_count).format(n=finding_count),
                 style=pal.severity(worst))
    if node.tail:
        t.append("  " + clean(node.tail), style=pal.muted if node.kind != "numa" else pal.heading)
    return t


def device_text(node: TopoNode, findings: Sequence[Finding], pal: Palette) -> Text:
    """The topology side pane: the selected device and the findings about it."""
    t = Text()
    t.append(clean(node.label) + "\n", style="bold")
    if node.kind == "numa":
        below = walk(node.children)
        gpus, nics = sum(n.kind == "gpu" for n in below), sum(n.kind == "nic" for n in below)
        bad = [n for n in below if n.link == BAD]
        t.append(_("{roots} root ports, {gpus} GPUs, {nics} NICs on this node").format(
            roots=sum(n.kind == 'root' for n in below), gpus=gpus, nics=nics) + "\n")
        if bad:
            t.append(ngettext("{n} degraded link: ", "{n} degraded links: ", len(bad)).format(n=len(bad)),
                     style=pal.colour("error"))
            t.append(", ".join(clean(n.head) for n in bad) + "\n")
        return t
    dev = node.device or {}
    if dev:
        for label, value in ((N_("link"), node.link_text), (N_("port type"), dev.get("port_type")),
                             (N_("driver"), dev.get("driver")), (N_("NUMA node"), dev.get("numa_node")),
                             (N_("IOMMU group"), dev.get("iommu_group")), (N_("name"), dev.get("name"))):
            if value not in (None, ""):
                t.append(ljust(_(label), 12), style=pal.muted)
                t.append(clean(value) + "\n", style=f"bold {pal.colour('error')}".strip()
                         if label == "link" and node.link == BAD else "")
    if node.link == BAD:
        t.append(_("The link trained below what both ends support.") + "\n", style=pal.colour("error"))
    problems = [f for f in findings if f.severity != PASS]
    _section(t, _("Findings about this device ({n})").format(n=len(problems)), pal)
    if not problems:
        t.append("  " + _("none") + "\n", style=pal.muted)
    for f in problems:
        t.append("  " + ljust(severity_label(f.severity), 8) + " ", style=pal.severity(f.severity))
        t.append(clean(f.title) + "\n")
    return t


def diff_text(diff: RunDiff, pal: Palette) -> Text:
    t = Text()
    t.append(_("Compared with the previous run:") + " " + diff.summary + "\n", style="bold")
    groups: list[tuple[str, str, Sequence[Finding]]] = [
        (_("Fixed"), "success", diff.fixed), (_("New"), "error", diff.new),
        (_("Changed severity"), "warning", [a for _b, a in diff.changed]),
        (_("Unchanged"), "foreground", diff.unchanged)]
    before = {(b.check, b.subject): b.severity for b, _a in diff.changed}
    for title, var, items in groups:
        _section(t, f"{title} ({len(items)})", pal)
        if not items:
            t.append("  " + _("none") + "\n", style=pal.muted)
        for f in items:
            t.append("  ")
            if (f.check, f.subject) in before:
                t.append(f"{severity_name(before[(f.check, f.subject)])} → ", style=pal.muted)
            t.append(ljust(severity_label(f.severity), 8) + " ", style=pal.severity(f.severity))
            t.append(clean(f.check), style=pal.colour(var))
            t.append("  " + clean(f.subject) + " — " + clean(f.title) + "\n")
    return t
