"""A self-contained HTML page (inline CSS, no scripts, every value escaped) for diff and fleet reports.

It shares the HTML report's stylesheet (``templates/report.css``), so every HTML output looks alike.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from pathlib import Path

#: The report stylesheet (colours, fonts, headings) is the base of every page...
STYLESHEET = Path(__file__).resolve().parent / "templates" / "report.css"
#: ...plus what diff and fleet pages add: bordered tables, severity cells, change colours.
PAGE_CSS = """
/* diff and fleet pages */
table{margin:.5em 0;font-size:13px}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top}
th{background:var(--code-bg)}td.c,th.c{text-align:center}
.mono{font-family:"DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.critical,.high,.medium,.low,.unknown,.info,.pass{color:#fff}
.critical{background:var(--critical)}.high{background:var(--high)}.medium{background:var(--medium)}
.low{background:var(--low)}.unknown{background:var(--unknown)}.info{background:var(--info)}.pass{background:var(--pass)}
.new,.worse{color:var(--critical);font-weight:600}.fixed,.better{color:var(--pass);font-weight:600}
.err{color:var(--critical)}
"""


def stylesheet() -> str:
    """The one stylesheet of the HTML outputs, as inlined into a diff or fleet page."""
    return STYLESHEET.read_text(encoding="utf-8") + PAGE_CSS


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
            f"<style>{stylesheet()}</style></head><body><h1>{esc(title)}</h1>\n{body}\n</body></html>\n")
