"""Text and HTML views of ``gnd diff``: findings fixed, new and changed, and the facts that changed."""

from __future__ import annotations

from typing import TextIO

from doctor.diff import LABEL, UNCHANGED, Diff
from reports.page import badge, esc, page, table


def _sev_change(before: str | None, after: str | None) -> str:
    if before and after and before != after:
        return f"{before} -> {after}"
    return after or before or ""


def render_text(d: Diff, out: TextIO, verbose: bool = False) -> None:
    b, a = d.before, d.after
    out.write(f"gnd diff  before: {b['path']} ({b['kind']}, host {b.get('hostname') or '?'}, "
              f"collected {b.get('collected_at') or '?'})\n")
    out.write(f"          after:  {a['path']} ({a['kind']}, host {a.get('hostname') or '?'}, "
              f"collected {a.get('collected_at') or '?'})\n")
    if d.identity_mismatch:
        out.write(f"  different hosts (--cross-host): {'; '.join(d.identity_mismatch)}\n")
    c = d.counts
    out.write(f"\nFindings: {c['fixed']} fixed, {c['new']} new, {c['worse'] + c['better']} changed severity "
              f"({c['worse']} worse, {c['better']} better), {c['unchanged']} unchanged\n")
    for f in d.findings:
        if f.change == UNCHANGED and not verbose:
            continue
        line = f"  {LABEL[f.change]:<7} {_sev_change(f.before, f.after):<17} {f.check}  {f.subject} — {f.title}"
        out.write(line + "\n")
        for key in f.related_facts[:4]:
            out.write(f"{'':27}fact {key}\n")
    if c["unchanged"] and not verbose:
        out.write(f"  ({c['unchanged']} unchanged; -v lists them)\n")
    out.write(f"\nFacts: {len(d.facts)} changed\n")
    width = min(max((len(x.key) for x in d.facts), default=0), 60)
    for x in d.facts:
        out.write(f"  {x.key:<{width}}  {x.before if x.before is not None else '(absent)'}  ->  "
                  f"{x.after if x.after is not None else '(absent)'}\n")


def render_html(d: Diff) -> str:
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
