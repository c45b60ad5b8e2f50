"""``gnd diff BEFORE AFTER``: prove that a change fixed what it was meant to, and broke nothing."""

from __future__ import annotations

import argparse
import io
import json
from typing import TYPE_CHECKING, TextIO

from doctor.errors import DoctorError
from doctor.findings import FAIL_LEVELS

if TYPE_CHECKING:
    from doctor.fleet.diff import Diff

HELP = "compare two snapshots or saved results of one node (findings fixed/new/changed, fact changes)"
DESCRIPTION = """\
Compare BEFORE and AFTER (each a snapshot dir/tarball, a sosreport, or a saved
`gnd check --format json` result) of the same node: findings fixed, new, unchanged or changed in
severity, keyed by (check, subject), and the facts that changed (PCIe link speed and width per
device, driver bindings, sysctls, GID tables, inference process flags, kernel command line).

Refuses (exit 2) when the two come from different hosts (machine-id, hostname or board serial)
unless --cross-host is given.

exit status: 0 no new or worsened finding at or above --fail-on; 1 some; 2 could not run."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("before", metavar="BEFORE", help="snapshot, sosreport or JSON result taken before the change")
    p.add_argument("after", metavar="AFTER", help="snapshot, sosreport or JSON result taken after the change")
    p.add_argument("--format", choices=("text", "json", "html"), default="text", help="output format")
    p.add_argument("--cross-host", action="store_true", help="compare even when BEFORE and AFTER are different hosts")
    p.add_argument("--fail-on", choices=FAIL_LEVELS, default="high", metavar="LEVEL",
                   help="exit 1 if a new or worsened finding is at or above LEVEL (default high)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="also list unchanged findings one by one")


def _sev_change(before: str | None, after: str | None) -> str:
    if before and after and before != after:
        return f"{before} -> {after}"
    return after or before or ""


def render_text(d: Diff, out: TextIO, verbose: bool = False) -> None:
    from doctor.fleet.diff import LABEL, UNCHANGED
    from doctor.textsafe import clean as c

    b, a = d.before, d.after
    out.write(f"gnd diff  before: {c(b['path'])} ({c(b['kind'])}, host {c(b.get('hostname') or '?')}, "
              f"collected {c(b.get('collected_at') or '?')})\n")
    out.write(f"          after:  {c(a['path'])} ({c(a['kind'])}, host {c(a.get('hostname') or '?')}, "
              f"collected {c(a.get('collected_at') or '?')})\n")
    if d.identity_mismatch:
        out.write(f"  different hosts (--cross-host): {c('; '.join(d.identity_mismatch))}\n")
    n = d.counts
    out.write(f"\nFindings: {n['fixed']} fixed, {n['new']} new, {n['worse'] + n['better']} changed severity "
              f"({n['worse']} worse, {n['better']} better), {n['unchanged']} unchanged\n")
    for f in d.findings:
        if f.change == UNCHANGED and not verbose:
            continue
        line = f"  {LABEL[f.change]:<7} {c(_sev_change(f.before, f.after)):<17} {c(f.check)}  {c(f.subject)} — {c(f.title)}"
        out.write(line + "\n")
        for key in f.related_facts[:4]:
            out.write(f"{'':27}fact {c(key)}\n")
    if n["unchanged"] and not verbose:
        out.write(f"  ({n['unchanged']} unchanged; -v lists them)\n")
    out.write(f"\nFacts: {len(d.facts)} changed\n")
    width = min(max((len(x.key) for x in d.facts), default=0), 60)
    for x in d.facts:
        out.write(f"  {c(x.key):<{width}}  {c(x.before) if x.before is not None else '(absent)'}  ->  "
                  f"{c(x.after) if x.after is not None else '(absent)'}\n")


def render_html(d: Diff) -> str:
    from doctor.fleet.html import badge, esc, page, table

    b, a = d.before, d.after
    parts = [f"<p>Before: <code>{esc(b['path'])}</code> ({esc(b['kind'])}, host {esc(b.get('hostname'))}, "
             f"collected {esc(b.get('collected_at'))})<br>After: <code>{esc(a['path'])}</code> "
             f"({esc(a['kind'])}, host {esc(a.get('hostname'))}, collected {esc(a.get('collected_at'))})</p>"]
    if d.identity_mismatch:
        parts.append(f'<p class="err">Different hosts: {esc("; ".join(d.identity_mismatch))}</p>')
    c = d.counts
    parts.append(f"<h2>Findings</h2><p>{c['fixed']} fixed, {c['new']} new, {c['worse']} worse, "
                 f"{c['better']} better, {c['unchanged']} unchanged</p>")
    rows = [[f'<span class="{esc(f.change)}">{esc(f.change)}</span>', badge(f.before), badge(f.after),
             f"<code>{esc(f.check)}</code>", esc(f.subject), esc(f.title),
             "<br>".join(f"<code>{esc(k)}</code>" for k in f.related_facts)] for f in d.findings]
    parts.append(table(["change", "before", "after", "check", "subject", "title", "facts"], rows, raw=True))
    parts.append(f"<h2>Facts</h2><p>{len(d.facts)} changed</p>")
    parts.append(table(["fact", "before", "after"],
                       [[x.key, x.before if x.before is not None else "(absent)",
                         x.after if x.after is not None else "(absent)"] for x in d.facts]))
    return page("gpu-node-doctor diff", "\n".join(parts))


def run(args: argparse.Namespace) -> int:
    from doctor.cli import _write
    from doctor.fleet.diff import diff_nodes
    from doctor.fleet.load import load_node
    from doctor.registry import load_checks

    checks, _ = load_checks()
    before = load_node(args.before, checks)
    after = load_node(args.after, checks)
    d = diff_nodes(before, after)
    if d.identity_mismatch and not args.cross_host:
        raise DoctorError(f"BEFORE and AFTER come from different hosts ({'; '.join(d.identity_mismatch)}); "
                          "pass --cross-host to compare them anyway")
    if args.format == "json":
        text = json.dumps(d.to_dict(), indent=2) + "\n"
    elif args.format == "html":
        text = render_html(d)
    else:
        buf = io.StringIO()
        render_text(d, buf, verbose=args.verbose)
        text = buf.getvalue()
    _write(text, args.output)
    return 1 if d.regressions(args.fail_on) else 0
