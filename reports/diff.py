"""Text and HTML views of ``gnd diff``: findings fixed, new and changed, and the facts that changed."""

from __future__ import annotations

import io

from doctor.diff import BETTER, FIXED, NEW, UNCHANGED, WORSE, Diff
from doctor.i18n import N_, _, ljust, severity_name, tr
from reports.page import badge, esc, page, table

#: the change column's words (``gnd diff``'s text view)
LABELS = {NEW: N_("NEW"), WORSE: N_("WORSE"), FIXED: N_("FIXED"), BETTER: N_("BETTER"), UNCHANGED: N_("same")}
#: the HTML view's change words
CHANGES = {NEW: N_("new"), WORSE: N_("worse"), FIXED: N_("fixed"), BETTER: N_("better"), UNCHANGED: N_("unchanged")}


def _sev(severity: str | None) -> str:
    return severity_name(severity) if severity else ""


def _sev_change(before: str | None, after: str | None) -> str:
    if before and after and before != after:
        return f"{_sev(before)} -> {_sev(after)}"
    return _sev(after or before)


def _absent(value: str | None) -> str:
    return _("(absent)") if value is None else value


def render_text(d: Diff, verbose: bool = False, **_options: object) -> str:
    from doctor.textsafe import clean as c

    out = io.StringIO()
    b, a = d.before, d.after
    def side(label: str, s: dict[str, object]) -> str:
        return _("{label} {path} ({kind}, host {host}, collected {collected})").format(
            label=label, path=c(str(s['path'])), kind=c(str(s['kind'])), host=c(str(s.get('hostname') or '?')),
            collected=c(str(s.get('collected_at') or '?')))

    out.write("gnd diff  " + side(ljust(_("before:"), 7), b) + "\n")
    out.write("          " + side(ljust(_("after:"), 7), a) + "\n")
    if d.identity_mismatch:
        out.write("  " + _("different hosts (--cross-host): {hosts}").format(hosts=c('; '.join(d.identity_mismatch)))
                  + "\n")
    n = d.counts
    out.write("\n" + _("Findings: {fixed} fixed, {new} new, {changed} changed severity ({worse} worse, {better} "
                       "better), {unchanged} unchanged").format(fixed=n['fixed'], new=n['new'],
                                                                changed=n['worse'] + n['better'], worse=n['worse'],
                                                                better=n['better'], unchanged=n['unchanged']) + "\n")
    for f in d.findings:
        if f.change == UNCHANGED and not verbose:
            continue
        line = (f"  {ljust(_(LABELS[f.change]), 7)} {ljust(c(_sev_change(f.before, f.after)), 17)} {c(f.check)}  "
                f"{c(tr(f.subject))} — {c(tr(f.title))}")
        out.write(line + "\n")
        for key in f.related_facts[:4]:
            out.write(f"{'':27}" + _("fact {key}").format(key=c(key)) + "\n")
    if n["unchanged"] and not verbose:
        out.write("  " + _("({n} unchanged; -v lists them)").format(n=n['unchanged']) + "\n")
    out.write("\n" + _("Facts: {n} changed").format(n=len(d.facts)) + "\n")
    width = min(max((len(x.key) for x in d.facts), default=0), 60)
    for x in d.facts:
        out.write(f"  {c(x.key):<{width}}  {c(_absent(x.before))}  ->  {c(_absent(x.after))}\n")
    return out.getvalue()


def render_html(d: Diff, **_options: object) -> str:
    b, a = d.before, d.after
    def side(label: str, s: dict[str, object]) -> str:
        return _("{label} {path} ({kind}, host {host}, collected {collected})").format(
            label=esc(label), path=f"<code>{esc(s['path'])}</code>", kind=esc(s['kind']), host=esc(s.get('hostname')),
            collected=esc(s.get('collected_at')))

    parts = [f"<p>{side(_('Before:'), b)}<br>{side(_('After:'), a)}</p>"]
    if d.identity_mismatch:
        parts.append(f'<p class="err">{esc(_("Different hosts:"))} {esc("; ".join(d.identity_mismatch))}</p>')
    c = d.counts
    parts.append(f"<h2>{esc(_('Findings'))}</h2><p>" + esc(_("{fixed} fixed, {new} new, {worse} worse, {better} better, "
                                                           "{unchanged} unchanged").format(**c)) + "</p>")
    rows = [[f'<span class="{esc(f.change)}">{esc(_(CHANGES.get(f.change, f.change)))}</span>', badge(f.before),
             badge(f.after), f"<code>{esc(f.check)}</code>", esc(tr(f.subject)), esc(tr(f.title)),
             "<br>".join(f"<code>{esc(k)}</code>" for k in f.related_facts)] for f in d.findings]
    parts.append(table([_("change"), _("before"), _("after"), _("check"), _("subject"), _("title"), _("facts")], rows,
                       raw=True))
    parts.append(f"<h2>{esc(_('Facts'))}</h2><p>" + esc(_("{n} changed").format(n=len(d.facts))) + "</p>")
    parts.append(table([_("fact"), _("before"), _("after")],
                       [[x.key, _absent(x.before), _absent(x.after)] for x in d.facts]))
    return page(_("gpu-node-doctor diff"), "\n".join(parts))
