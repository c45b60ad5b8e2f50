"""Text and HTML views of a fleet report: groups, check matrix, outliers, fleet-wide findings."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TextIO

from doctor.findings import severity_order
from doctor.fleet.fleet import STATUS_LETTER, FindingGroup, FleetReport
from doctor.i18n import _, ljust, ngettext, severity_name, tr
from doctor.textsafe import clean as c

#: Text output shows at most this many groups as matrix columns, names per list, and lines per section.
MAX_GROUP_COLUMNS = 12
MAX_NAMES = 6
MAX_LINES = 40
#: HTML shows the node-by-check matrix for at most this many nodes.
MAX_HTML_NODES = 2000


def _names(report: FleetReport, nodes: Sequence[int], limit: int = MAX_NAMES) -> str:
    shown = [c(report.rows[i].name) for i in nodes[:limit]]
    more = len(nodes) - len(shown)
    return ", ".join(shown) + (f" … +{more}" if more > 0 else "")


def _worst(statuses: Sequence[str]) -> str:
    present = [s for s in statuses if s]
    if not present:
        return ""
    return min(present, key=lambda s: (severity_order(s) if s != "not_applicable" else 99))


def group_statuses(report: FleetReport, nodes: Sequence[int]) -> list[str]:
    """Worst status of each check over a group's nodes."""
    return [_worst([report.rows[i].statuses[j] if j < len(report.rows[i].statuses) else "" for i in nodes])
            for j in range(len(report.checks))]


def _finding_lines(report: FleetReport, items: list[FindingGroup], out: TextIO, with_nodes: bool) -> None:
    for f in items[:MAX_LINES]:
        where = "  [" + ngettext("{n} node: {names}", "{n} nodes: {names}", len(f.nodes)).format(
            n=len(f.nodes), names=_names(report, f.nodes)) + "]" if with_nodes else ""
        out.write(f"  {ljust(c(severity_name(f.severity).upper()), 8)} {c(f.check)}  {c(tr(f.subject))} — "
                  f"{c(tr(f.title))}{where}\n")
    _more(out, len(items))


def _node_lines(report: FleetReport, nodes: Sequence[int], out: TextIO) -> None:
    """Each node (name, path) with its reasons, the first :data:`MAX_LINES`."""
    for i in nodes[:MAX_LINES]:
        out.write(f"  {c(report.rows[i].name)}  ({c(report.rows[i].path)})\n")
        for line in report.reasons(i)[:8]:
            out.write(f"      {c(tr(line))}\n")
    _more(out, len(nodes))


def _more(out: TextIO, total: int) -> None:
    """How many of ``total`` lines past :data:`MAX_LINES` were left out."""
    if total > MAX_LINES:
        out.write("  " + _("… {n} more (--format json)").format(n=total - MAX_LINES) + "\n")


def render_text(report: FleetReport, **_options: object) -> str:
    out = io.StringIO()
    s = report.to_dict()["summary"]
    out.write("gnd fleet: " + _("{sources} sources, {analysed} analysed, {unreadable} unreadable; {groups} "
                                "configuration group(s), {outliers} outlier node(s) ({seconds} s, {jobs} job(s))").format(
        sources=s['sources'], analysed=s['analysed'], unreadable=s['unreadable'], groups=s['groups'],
        outliers=s['outlier_nodes'], seconds=f"{report.duration_s:.1f}", jobs=report.jobs) + "\n")
    if not report.ok:
        out.write("\n" + _("No source could be analysed.") + "\n")
    # groups
    if report.groups:
        out.write("\n" + _("Configuration groups (nodes with identical facts; hostnames, serials and addresses "
                           "aside):") + "\n")
        for label, nodes, keys in report.groups[:MAX_LINES]:
            diff = "" if not keys else "  " + _("differs in:") + " " + c(", ".join(keys[:4])) + (
                f" (+{len(keys) - 4})" if len(keys) > 4 else "")
            tag = "  " + _("(majority)") if not keys and len(report.groups) > 1 else ""
            count = ngettext("{n:>5} node ", "{n:>5} nodes", len(nodes)).format(n=len(nodes))
            out.write(f"  {c(label):<3} {count}  {_names(report, nodes, 3)}{tag}{diff}\n")
        if len(report.groups) > MAX_LINES:
            out.write("  " + _("… {n} more groups (--format json)").format(n=len(report.groups) - MAX_LINES) + "\n")
    # matrix: checks down, groups across
    if report.checks and report.groups:
        cols = report.groups[:MAX_GROUP_COLUMNS]
        width = max(len(c) for c in report.checks)
        out.write("\n" + _("Check matrix (worst status per group: C critical, H high, M medium, L low, ? unknown, "
                           "i info, . pass, - not applicable):") + "\n")
        out.write(f"  {'':<{width}}  " + " ".join(f"{c(label):>3}" for label, _, _ in cols) + "\n")
        per_group = [group_statuses(report, nodes) for _, nodes, _ in cols]
        for j, check in enumerate(report.checks):
            cells = " ".join(f"{STATUS_LETTER.get(g[j], ' '):>3}" for g in per_group)
            out.write(f"  {c(check):<{width}}  {cells}\n")
        if len(report.groups) > MAX_GROUP_COLUMNS:
            out.write("  " + _("({n} more groups in --format json/html)").format(
                n=len(report.groups) - MAX_GROUP_COLUMNS) + "\n")
    # outliers
    outliers = report.outlier_nodes
    rule = _("a finding at or above {level} that fewer than half of the nodes have").format(level=severity_name(report.fail_on))
    out.write("\n" + (_("Outlier nodes ({n}; {rule}):").format(n=len(outliers), rule=rule) if outliers
                       else _("Outlier nodes: none ({rule})").format(rule=rule)) + "\n")
    _node_lines(report, outliers, out)
    drift = [i for i in report.drift_nodes if i not in set(outliers)]
    if drift:
        out.write("\n" + _("Configuration drift, no outlier finding ({n}; a fact at most 5 % of the nodes hold):").format(
            n=len(drift)) + "\n")
        _node_lines(report, drift, out)
    if report.common:
        out.write("\n" + _("Fleet-wide findings (on every node: a fleet setting, fix it everywhere) ({n}):").format(
            n=len(report.common)) + "\n")
        _finding_lines(report, report.common, out, with_nodes=False)
    if report.partial:
        out.write("\n" + _("Findings on some nodes ({n}):").format(n=len(report.partial)) + "\n")
        _finding_lines(report, report.partial, out, with_nodes=True)
    bad = report.unreadable
    if bad:
        out.write("\n" + _("Unreadable sources ({n}):").format(n=len(bad)) + "\n")
        for r in bad[:MAX_LINES]:
            out.write(f"  {c(r.path)}: {c(r.error)}\n")
        _more(out, len(bad))
    return out.getvalue()


def render_html(report: FleetReport, **_options: object) -> str:
    from reports.page import badge, esc, page, table

    s = report.to_dict()["summary"]
    parts = ["<p>" + esc(_("{sources} sources, {analysed} analysed, {unreadable} unreadable; {groups} configuration "
                           "groups; {outliers} outlier nodes ({seconds} s, {jobs} jobs).").format(
        sources=s['sources'], analysed=s['analysed'], unreadable=s['unreadable'], groups=s['groups'],
        outliers=s['outlier_nodes'], seconds=f"{report.duration_s:.1f}", jobs=report.jobs)) + "</p>"]
    none = "<p>" + esc(_("None.")) + "</p>"
    parts.append(f"<h2>{esc(_('Outlier nodes'))}</h2>")
    parts.append("<p class='muted'>" + esc(_("Nodes with a finding at or above {level} that fewer than half of the "
                                             "nodes have; configuration drift is under Fact outliers.").format(
        level=severity_name(report.fail_on))) + "</p>")
    rows = [[f"<b>{esc(report.rows[i].name)}</b><br><span class='muted mono'>{esc(report.rows[i].path)}</span>",
             "<br>".join(esc(tr(x)) for x in report.reasons(i))] for i in report.outlier_nodes]
    parts.append(table([_("node"), _("why")], rows, raw=True) if rows else none)
    parts.append(f"<h2>{esc(_('Configuration groups'))}</h2>")
    parts.append(table([_("group"), _("nodes"), _("members"), _("differs from the majority in")],
                       [[label, str(len(nodes)), _names(report, nodes, 20), ", ".join(keys)]
                        for label, nodes, keys in report.groups]))

    def fg_rows(items: list[FindingGroup]) -> list[list[str]]:
        return [[badge(f.severity), f"<code>{esc(f.check)}</code>", esc(tr(f.subject)), esc(tr(f.title)), str(len(f.nodes)),
                 esc(_names(report, f.nodes, 20))] for f in items]

    for title, items in ((_("Fleet-wide findings (every node)"), report.common),
                         (_("Outlier findings (a few nodes)"), report.outlier_findings),
                         (_("Findings on some nodes"), report.partial)):
        parts.append(f"<h2>{esc(title)}</h2>")
        parts.append(table([_("severity"), _("check"), _("subject"), _("title"), _("nodes"), _("which")],
                           fg_rows(items), raw=True) if items else none)
    if report.fact_outliers:
        parts.append(f"<h2>{esc(_('Fact outliers'))}</h2>")
        parts.append(table([_("fact"), _("majority value"), _("majority nodes"), _("outlier value"),
                            _("outlier nodes")],
                           [[o.key, o.majority, str(o.majority_nodes), o.value, _names(report, o.nodes, 20)]
                            for o in report.fact_outliers]))
    parts.append(f"<h2>{esc(_('Node-by-check matrix'))}</h2>")
    group_of = report.group_of()
    shown = sorted(report.ok, key=lambda i: (report.rows[i].name, report.rows[i].path))[:MAX_HTML_NODES]
    head = [_("node"), _("group"), *report.checks]
    body = []
    for i in shown:
        r = report.rows[i]
        cells = [f'<td class="c {esc(st)}" title="{esc(st)}">{esc(STATUS_LETTER.get(st, ""))}</td>'
                 for st in r.statuses]
        body.append(f"<tr><td>{esc(r.name)}</td><td>{esc(group_of.get(i, ''))}</td>{''.join(cells)}</tr>")
    parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
                 + "".join(body) + "</tbody></table>")
    if len(report.ok) > MAX_HTML_NODES:
        parts.append("<p class='muted'>" + esc(_("{n} more nodes in --format json.").format(
            n=len(report.ok) - MAX_HTML_NODES)) + "</p>")
    if report.unreadable:
        parts.append(f"<h2>{esc(_('Unreadable sources'))}</h2>")
        parts.append(table([_("source"), _("reason")], [[r.path, r.error or ""] for r in report.unreadable]))
    return page(_("gpu-node-doctor fleet report"), "\n".join(parts))
