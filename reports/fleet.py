"""Text and HTML views of a fleet report: groups, check matrix, outliers, fleet-wide findings."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TextIO

from doctor.findings import severity_order
from doctor.fleet.fleet import STATUS_LETTER, FindingGroup, FleetReport
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
        where = f"  [{len(f.nodes)} node{'s' if len(f.nodes) != 1 else ''}: {_names(report, f.nodes)}]" \
            if with_nodes else ""
        out.write(f"  {c(f.severity.upper()):<8} {c(f.check)}  {c(f.subject)} — {c(f.title)}{where}\n")
    if len(items) > MAX_LINES:
        out.write(f"  … {len(items) - MAX_LINES} more (--format json)\n")


def render_text(report: FleetReport, **_options: object) -> str:
    out = io.StringIO()
    _write_text(report, out)
    return out.getvalue()


def _write_text(report: FleetReport, out: TextIO) -> None:
    s = report.to_dict()["summary"]
    out.write(f"gnd fleet: {s['sources']} sources, {s['analysed']} analysed, {s['unreadable']} unreadable; "
              f"{s['groups']} configuration group(s), {s['outlier_nodes']} outlier node(s) "
              f"({report.duration_s:.1f} s, {report.jobs} job(s))\n")
    if not report.ok:
        out.write("\nNo source could be analysed.\n")
    # groups
    if report.groups:
        out.write("\nConfiguration groups (nodes with identical facts; hostnames, serials and addresses aside):\n")
        for label, nodes, keys in report.groups[:MAX_LINES]:
            diff = "" if not keys else "  differs in: " + c(", ".join(keys[:4])) + (f" (+{len(keys) - 4})"
                                                                               if len(keys) > 4 else "")
            tag = "  (majority)" if not keys and len(report.groups) > 1 else ""
            out.write(f"  {c(label):<3} {len(nodes):>5} node{'s' if len(nodes) != 1 else ' '}  "
                      f"{_names(report, nodes, 3)}{tag}{diff}\n")
        if len(report.groups) > MAX_LINES:
            out.write(f"  … {len(report.groups) - MAX_LINES} more groups (--format json)\n")
    # matrix: checks down, groups across
    if report.checks and report.groups:
        cols = report.groups[:MAX_GROUP_COLUMNS]
        width = max(len(c) for c in report.checks)
        out.write("\nCheck matrix (worst status per group: C critical, H high, M medium, L low, ? unknown, "
                  "i info, . pass, - not applicable):\n")
        out.write(f"  {'':<{width}}  " + " ".join(f"{c(label):>3}" for label, _, _ in cols) + "\n")
        per_group = [group_statuses(report, nodes) for _, nodes, _ in cols]
        for j, check in enumerate(report.checks):
            cells = " ".join(f"{STATUS_LETTER.get(g[j], ' '):>3}" for g in per_group)
            out.write(f"  {c(check):<{width}}  {cells}\n")
        if len(report.groups) > MAX_GROUP_COLUMNS:
            out.write(f"  ({len(report.groups) - MAX_GROUP_COLUMNS} more groups in --format json/html)\n")
    # outliers
    outliers = report.outlier_nodes
    rule = f"a finding at or above {report.fail_on} that fewer than half of the nodes have"
    out.write(f"\nOutlier nodes ({len(outliers)}; {rule}):\n" if outliers else f"\nOutlier nodes: none ({rule})\n")
    for i in outliers[:MAX_LINES]:
        row = report.rows[i]
        out.write(f"  {c(row.name)}  ({c(row.path)})\n")
        for line in report.reasons(i)[:8]:
            out.write(f"      {c(line)}\n")
    if len(outliers) > MAX_LINES:
        out.write(f"  … {len(outliers) - MAX_LINES} more (--format json)\n")
    drift = [i for i in report.drift_nodes if i not in set(outliers)]
    if drift:
        out.write(f"\nConfiguration drift, no outlier finding ({len(drift)}; a fact at most 5 % of the nodes hold):\n")
        for i in drift[:MAX_LINES]:
            out.write(f"  {c(report.rows[i].name)}  ({c(report.rows[i].path)})\n")
            for line in report.reasons(i)[:8]:
                out.write(f"      {c(line)}\n")
        if len(drift) > MAX_LINES:
            out.write(f"  … {len(drift) - MAX_LINES} more (--format json)\n")
    if report.common:
        out.write(f"\nFleet-wide findings (on every node: a fleet setting, fix it everywhere) ({len(report.common)}):\n")
        _finding_lines(report, report.common, out, with_nodes=False)
    if report.partial:
        out.write(f"\nFindings on some nodes ({len(report.partial)}):\n")
        _finding_lines(report, report.partial, out, with_nodes=True)
    bad = report.unreadable
    if bad:
        out.write(f"\nUnreadable sources ({len(bad)}):\n")
        for r in bad[:MAX_LINES]:
            out.write(f"  {c(r.path)}: {c(r.error)}\n")
        if len(bad) > MAX_LINES:
            out.write(f"  … {len(bad) - MAX_LINES} more (--format json)\n")


def render_html(report: FleetReport, **_options: object) -> str:
    from reports.page import badge, esc, page, table

    s = report.to_dict()["summary"]
    parts = [f"<p>{s['sources']} sources, {s['analysed']} analysed, {s['unreadable']} unreadable; "
             f"{s['groups']} configuration groups; {s['outlier_nodes']} outlier nodes "
             f"({report.duration_s:.1f} s, {report.jobs} jobs).</p>"]
    parts.append("<h2>Outlier nodes</h2>")
    parts.append(f"<p class='muted'>Nodes with a finding at or above {esc(report.fail_on)} that fewer than half "
                 "of the nodes have; configuration drift is under Fact outliers.</p>")
    rows = [[f"<b>{esc(report.rows[i].name)}</b><br><span class='muted mono'>{esc(report.rows[i].path)}</span>",
             "<br>".join(esc(x) for x in report.reasons(i))] for i in report.outlier_nodes]
    parts.append(table(["node", "why"], rows, raw=True) if rows else "<p>None.</p>")
    parts.append("<h2>Configuration groups</h2>")
    parts.append(table(["group", "nodes", "members", "differs from the majority in"],
                       [[label, str(len(nodes)), _names(report, nodes, 20), ", ".join(keys)]
                        for label, nodes, keys in report.groups]))

    def fg_rows(items: list[FindingGroup]) -> list[list[str]]:
        return [[badge(f.severity), f"<code>{esc(f.check)}</code>", esc(f.subject), esc(f.title), str(len(f.nodes)),
                 esc(_names(report, f.nodes, 20))] for f in items]

    for title, items in (("Fleet-wide findings (every node)", report.common),
                         ("Outlier findings (a few nodes)", report.outlier_findings),
                         ("Findings on some nodes", report.partial)):
        parts.append(f"<h2>{esc(title)}</h2>")
        parts.append(table(["severity", "check", "subject", "title", "nodes", "which"], fg_rows(items), raw=True)
                     if items else "<p>None.</p>")
    if report.fact_outliers:
        parts.append("<h2>Fact outliers</h2>")
        parts.append(table(["fact", "majority value", "majority nodes", "outlier value", "outlier nodes"],
                           [[o.key, o.majority, str(o.majority_nodes), o.value, _names(report, o.nodes, 20)]
                            for o in report.fact_outliers]))
    parts.append("<h2>Node-by-check matrix</h2>")
    group_of = report.group_of()
    shown = sorted(report.ok, key=lambda i: (report.rows[i].name, report.rows[i].path))[:MAX_HTML_NODES]
    head = ["node", "group", *report.checks]
    body = []
    for i in shown:
        r = report.rows[i]
        cells = [f'<td class="c {esc(st)}" title="{esc(st)}">{esc(STATUS_LETTER.get(st, ""))}</td>'
                 for st in r.statuses]
        body.append(f"<tr><td>{esc(r.name)}</td><td>{esc(group_of.get(i, ''))}</td>{''.join(cells)}</tr>")
    parts.append("<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"
                 + "".join(body) + "</tbody></table>")
    if len(report.ok) > MAX_HTML_NODES:
        parts.append(f"<p class='muted'>{len(report.ok) - MAX_HTML_NODES} more nodes in --format json.</p>")
    if report.unreadable:
        parts.append("<h2>Unreadable sources</h2>")
        parts.append(table(["source", "reason"], [[r.path, r.error or ""] for r in report.unreadable]))
    return page("gpu-node-doctor fleet report", "\n".join(parts))
