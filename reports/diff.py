"""Text and HTML views of ``gnd diff``: findings fixed, new and changed, and the facts that changed."""

from __future__ import annotations

import io
from typing import TextIO

from doctor.diff import LABEL, UNCHANGED, Diff
from reports.page import badge, esc, page, table


def _sev_change(before: str | None, after: str | None) -> str:
    if before and after and before != after:
        return f"{before} -> {after}"
    return after or before or ""


def render_text(d: Diff, verbose: bool = False, **_options: object) -> str:
    out = io.StringIO()
    _write_text(d, out, verbose)
    return out.getvalue()


def _write_text(d: Diff, out: TextIO, verbose: bool) -> None:
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


def render_html(d: Diff, **_options: object) -> str:
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
