"""The report's stylesheet as the PDF applies it: ``templates/report.css`` plus the page margin texts.

Small on purpose (it imports only :mod:`doctor.i18n`): the PDF renderer's forked child parses this
stylesheet while it waits for the report, without loading the HTML report's modules.
"""

from __future__ import annotations

from pathlib import Path

from doctor.i18n import _

STYLESHEET = Path(__file__).resolve().parent / "templates" / "report.css"


def _css_string(text: str) -> str:
    """``text`` as a CSS string literal (quotes, backslashes and line breaks escaped)."""
    return '"' + "".join(f"\\{ord(ch):x} " if ch in '"\\\n\r<>' else ch for ch in text) + '"'


def page_margin_css() -> str:
    """Print page margin boxes (``generated …``, ``page N of M``) in the current language."""
    before, _sep, rest = _("page {page} of {pages}").partition("{page}")
    middle, _sep, after = rest.partition("{pages}")
    page = " ".join(part for part in (_css_string(before) if before else "", "counter(page)",
                                      _css_string(middle) if middle else "", "counter(pages)",
                                      _css_string(after) if after else "") if part)
    generated = _css_string(_("generated") + " ")
    return ("@media print { @page { @top-right { content: " + generated + " string(generated); }"
            " @bottom-right { content: " + page + "; } } }")


def report_css() -> str:
    """What the HTML report's ``<style>`` holds, in the current language: the stylesheet, then the margin texts."""
    return STYLESHEET.read_text(encoding="utf-8") + "\n" + page_margin_css()
