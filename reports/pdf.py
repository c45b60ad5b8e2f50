"""PDF report: WeasyPrint renders the HTML report with its print stylesheet.

WeasyPrint is imported only here, inside :func:`render_pdf`. Its URL fetcher refuses every URL
(http, https, file, data), so an ``<img src>`` or stylesheet smuggled in through host data can
neither reach the network nor read a local file; the report has no assets of its own.

The PDF carries, as embedded files, the fix script and its rollback (what ``gnd fix-script``
writes for the same result) and the JSON result (what ``gnd check --format json`` writes): see
:func:`embedded_files`. They are handed to WeasyPrint as bytes, never as URLs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

from doctor.errors import DoctorError
from doctor.i18n import N_, _
from doctor.record import record

if TYPE_CHECKING:
    from doctor.facts import Facts
    from doctor.runner import Result

#: Debian/Ubuntu packages WeasyPrint needs besides its Python wheel
DEBIAN_PACKAGES = "libpango-1.0-0 libpangoft2-1.0-0"


#: What the Chinese PDF needs for its glyphs (listed first in the stylesheet's font stack)
CJK_FONT = "Noto Sans CJK SC"
CJK_HINT = ("no CJK font found (fontconfig has no font for zh); the zh-CN PDF will show boxes for Chinese text. "
            "Debian/Ubuntu: apt-get install fonts-noto-cjk")


def cjk_font_found() -> bool:
    """Whether fontconfig (``fc-list :lang=zh``) knows a font with Chinese glyphs."""
    import shutil
    import subprocess

    fc_list = shutil.which("fc-list")
    if not fc_list:
        return False
    try:
        out = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, timeout=10,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.strip())


#: the names of the embedded files (the fix script's is ``gnd fix-script``'s default output)
FIX_SCRIPT_NAME = "gnd-fix.sh"
ROLLBACK_NAME = "gnd-fix.rollback.sh"
RESULT_NAME = "result.json"


@record
class Embedded:
    """A file the PDF carries (PDF viewers list it as an attachment; ``pdfdetach -saveall`` saves it).

    ``created``: the ISO 8601 time written as its creation and modification date (the result's
    generation time, so that the same result gives the same PDF bytes).
    """

    name: str
    data: bytes
    description: str = ""
    created: str = ""


#: files to embed, or a function making them (called once the page is laid out: the forked renderer lays out
#: while its caller makes them)
Files: TypeAlias = tuple[Embedded, ...] | Callable[[], tuple[Embedded, ...]]


def embedded_files(result: Result, facts: Facts | None = None, **_options: Any) -> tuple[Embedded, ...]:
    """The files the PDF of ``result`` carries: the fix script and its rollback, exactly as ``gnd fix-script``
    writes them for ``result`` (runnable against ``facts``, the host's own; for review only without), and the
    JSON result exactly as ``gnd check --format json`` writes it.

    ``result`` as the command has it, before the report translates and sanitises it (the JSON is never
    translated; the scripts' comments are in the current language, as ``gnd fix-script --lang`` writes them).
    """
    from reports.fixscript import fix_scripts
    from reports.formats import FORMATS

    scripts = fix_scripts(result, facts)
    stamp = result.generated_at
    return (
        Embedded(FIX_SCRIPT_NAME, scripts.fix.encode(), _(_FIX_DESCRIPTION), stamp),
        Embedded(ROLLBACK_NAME, scripts.rollback.encode(), _(_ROLLBACK_DESCRIPTION), stamp),
        Embedded(RESULT_NAME, str(FORMATS["json"].render(result)).encode(), _(_RESULT_DESCRIPTION), stamp),
    )


_FIX_DESCRIPTION = N_("The fix script gnd fix-script writes for this result; read it before running it")
_ROLLBACK_DESCRIPTION = N_("The rollback script that undoes what the fix script runs")
_RESULT_DESCRIPTION = N_("The JSON result this report was rendered from (gnd check --format json)")


def _when(stamp: str) -> Any:
    """``stamp`` (ISO 8601) as a UTC datetime; 1970-01-01 when it is none (a hand-made result)."""
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return datetime(1970, 1, 1)
    return when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def _attachments(weasyprint: Any, files: tuple[Embedded, ...]) -> list[Any]:
    """WeasyPrint attachments of ``files``, given as bytes (nothing fetched)."""
    out = []
    for f in files:
        when = _when(f.created)
        out.append(weasyprint.Attachment(string=f.data, name=f.name, description=f.description, created=when,
                                         modified=when, url_fetcher=_fetcher_class()()))
    return out


class FetchRefused(ValueError):
    """Raised for every URL the PDF renderer is asked to fetch."""


def _fetcher_class() -> Any:
    from weasyprint.urls import URLFetcher

    class RefusingFetcher(URLFetcher):  # type: ignore[misc]
        """Refuses every fetch; records what was asked for (tests read ``refused``)."""

        def __init__(self) -> None:
            super().__init__(allowed_protocols=())
            self.refused: list[str] = []

        def fetch(self, url: str, headers: object = None) -> Any:
            self.refused.append(url)
            raise FetchRefused(f"gnd reports fetch nothing: {url}")

    return RefusingFetcher


def _import_weasyprint() -> Any:
    try:
        import weasyprint
    except ImportError as exc:
        raise DoctorError("PDF output needs WeasyPrint (pip install weasyprint) and its system libraries "
                          f"(Debian/Ubuntu: apt install {DEBIAN_PACKAGES}): {exc}") from None
    except OSError as exc:  # pango/harfbuzz shared libraries not found
        raise DoctorError(f"PDF output needs Pango for WeasyPrint (Debian/Ubuntu: apt install {DEBIAN_PACKAGES}): "
                          f"{exc}") from None
    return weasyprint


def import_weasyprint_single_threaded() -> Any:
    """Import WeasyPrint as :func:`_import_weasyprint` does, ~0.4 s sooner: for a single-threaded process only.

    WeasyPrint's import opens its shared libraries by several names each, most of them missing on Linux
    (``libgobject-2.0-0``, all of the optional ``harfbuzz-vector``'s); cffi asks ``ctypes.util.find_library``
    about each, which runs ``ldconfig -p``, then ``gcc`` and ``ld`` (22 lookups, ~0.5 s). With ``PATH`` naming
    no directory while it imports, the ``gcc`` and ``ld`` attempts fail at once (``/dev/null/ld`` is never a
    program, so nothing in the working directory can run either); ``ldconfig -p`` (an absolute path) and the
    loader still find every library that is there. ``PATH`` is restored before it returns; another thread
    would see it changed meanwhile, hence single-threaded (the forked renderer).
    """
    import os

    saved = os.environ.get("PATH")
    os.environ["PATH"] = os.devnull
    try:
        return _import_weasyprint()
    finally:
        if saved is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = saved


def refusing_fetcher() -> Any:
    """A fresh WeasyPrint URL fetcher that refuses every URL."""
    _import_weasyprint()
    return _fetcher_class()()


def html_to_pdf(html: str, fetcher: Any = None, font_config: Any = None, css: str | None = None,
                files: Files = ()) -> bytes:
    """PDF bytes for ``html`` (print media) with every URL fetch refused.

    ``font_config``: a WeasyPrint ``FontConfiguration`` whose fonts are already loaded (see :func:`warm_fonts`);
    ``css``: a stylesheet applied after the page's own (parsed once, see :func:`stylesheet`); ``files``: embedded
    as attachments (a function making them is called after the layout).
    """
    weasyprint = _import_weasyprint()
    import logging

    logging.getLogger("weasyprint").setLevel(logging.ERROR)  # refused fetches are expected, not news
    fetcher = fetcher or _fetcher_class()()
    document = weasyprint.HTML(string=html, base_url="about:blank", url_fetcher=fetcher, media_type="print")
    sheets = [stylesheet(css)] if css else None
    pages = document.render(font_config=font_config, stylesheets=sheets)
    data = pages.write_pdf(attachments=_attachments(weasyprint, files() if callable(files) else files) or None)
    return bytes(data or b"")


#: the last stylesheet parsed, by its text
_parsed: dict[str, Any] = {}


def stylesheet(css: str) -> Any:
    """``css`` as a WeasyPrint ``CSS`` (print media, every URL refused), parsed once and kept for the next report.

    WeasyPrint applies it as a user stylesheet, after the user-agent one; a page without a ``<style>`` of its
    own gets exactly the styles it would get with ``css`` inline.
    """
    sheet = _parsed.get(css)
    if sheet is None:
        weasyprint = _import_weasyprint()
        _parsed.clear()
        sheet = _parsed[css] = weasyprint.CSS(string=css, base_url="about:blank", url_fetcher=_fetcher_class()(),
                                              media_type="print")
    return sheet


def warm_fonts() -> Any:
    """A ``FontConfiguration`` that has loaded the report's fonts (regular, bold, monospace), for :func:`html_to_pdf`."""
    weasyprint = _import_weasyprint()
    from weasyprint.text.fonts import FontConfiguration

    from reports.print_css import STYLESHEET  # not reports.html: importing that module costs the worker 0.1 s

    font_config = FontConfiguration()
    css = STYLESHEET.read_text(encoding="utf-8")
    families = sorted(set(re.findall(r"font-family:\s*([^;}]+)", css)))  # each stack, regular and bold
    page = "".join(f'<p style="font-family: {family}">gnd <b>gnd</b></p>' for family in families)
    weasyprint.HTML(string=page, base_url="about:blank", url_fetcher=_fetcher_class()(),
                    media_type="print").render(font_config=font_config)
    return font_config


def render_pdf(result: Result, pdf_worker: Any = None, attachments: Files | None = None, **_options: Any) -> bytes:
    """The PDF report for a result; ``pdf_worker``: a started :class:`reports.pdf_worker.PdfWorker` to render it;
    ``attachments``: the files it carries, or the function making them (:func:`embedded_files`, which
    :mod:`reports.formats` gives for the result as the command has it; made from ``result`` when not given)."""
    from functools import partial

    from reports.html import render_html_view
    from reports.print_css import report_css
    from reports.view import build_view

    files = partial(embedded_files, result) if attachments is None else attachments
    html = render_html_view(build_view(result), links=False, style=False)  # the stylesheet comes parsed
    if pdf_worker is not None:
        return bytes(pdf_worker.render(html, report_css(), files))
    return html_to_pdf(html, css=report_css(), files=files)
