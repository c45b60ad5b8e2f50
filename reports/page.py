"""A self-contained HTML page (inline CSS, no scripts, every value escaped) for diff and fleet reports."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;color:#1d1d1f;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.c,th.c{text-align:center}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.critical{background:#7a0010;color:#fff}.high{background:#d92d20;color:#fff}.medium{background:#f79009}
.low{background:#fde68a}.unknown{background:#d0d5dd}.info{background:#e0f2fe}.pass{background:#d1fadf}
.new,.worse{color:#b42318;font-weight:600}.fixed,.better{color:#067647;font-weight:600}
.muted{color:#667085}.err{color:#b42318}
"""


def esc(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw`` (the caller escaped them already)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def badge(severity: str | None) -> str:
    sev = severity or "-"
    return f'<span class="{esc(sev)}">&nbsp;{esc(sev)}&nbsp;</span>'


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1>\n{body}\n</body></html>\n")
