"""The PDF's speed shortcuts: a forked renderer (reports/pdf_worker.py) and WeasyPrint shortcuts
(reports/weasyprint_speed.py) give the report a plain in-process render gives, and fall back to it."""

from __future__ import annotations

import io
import os
import signal
import sys
from typing import Any

import pytest

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from doctor.errors import DoctorError  # noqa: E402
from reports import pdf, pdf_worker  # noqa: E402

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the worker forks on Linux only")
PAGE = "<h1>gnd worker</h1><p>marker text</p>"


def _text(data: bytes) -> str:
    return " ".join(" ".join((p.extract_text() or "") for p in pypdf.PdfReader(io.BytesIO(data)).pages).split())


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@linux_only
def test_worker_renders_what_the_process_renders(healthy_data: dict[str, Any]) -> None:
    worker = pdf_worker.start()
    assert worker is not None
    pid = worker.pid
    forked = pdf.render_pdf(healthy_data, worker)
    assert _reaped(pid)
    here = pdf.render_pdf(healthy_data)
    assert forked.startswith(b"%PDF-")
    assert _text(forked).replace(" ", "") == _text(here).replace(" ", "")  # only the generation time may differ


@linux_only
def test_unused_worker_is_reaped() -> None:
    worker = pdf_worker.start()
    assert worker is not None
    pid = worker.pid
    worker.close()
    assert _reaped(pid)


@linux_only
def test_dead_worker_falls_back_to_rendering_here() -> None:
    worker = pdf_worker.start()
    assert worker is not None
    os.kill(worker.pid, signal.SIGKILL)
    assert "marker text" in _text(worker.render(PAGE))


@linux_only
def test_worker_error_reaches_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise DoctorError("PDF output needs Pango for WeasyPrint (test)")

    monkeypatch.setattr(pdf, "warm_fonts", missing)  # the forked child inherits this
    worker = pdf_worker.start()
    assert worker is not None
    with pytest.raises(DoctorError, match="needs Pango"):
        worker.render(PAGE + "<p>more than a pipe holds</p>" * 10_000)  # the child reads none of it


def test_svg_text_is_drawn_as_one_run() -> None:
    """WeasyPrint places SVG text letter by letter (a text matrix per letter); the shortcut draws a label
    as one run, and a label with per-letter placement still goes through WeasyPrint's own code."""
    label = "Root port 0000:15:01.0"

    def page(text: str) -> Any:
        svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="400" height="80">{text}</svg>'
        return pypdf.PdfReader(io.BytesIO(pdf.html_to_pdf(svg))).pages[0]

    one = page(f'<text x="10" y="20" font-size="11">{label}</text>')
    assert label in (one.extract_text() or "")
    assert one.get_contents().get_data().count(b" Tm") == 1
    spaced = page('<text x="10" y="20" dx="0 2 2 2" font-size="11">SPACED</text>')
    assert spaced.get_contents().get_data().count(b" Tm") == len("SPACED")


def test_cffi_type_shortcut_builds_the_declared_types() -> None:
    pdf.refusing_fetcher()  # imports WeasyPrint and installs the shortcuts
    from weasyprint.text.ffi import ffi

    cffi_own = ffi._parser.parse_type.original
    for cdecl in ("PangoRectangle *", "PangoFcFontMap *", "hb_codepoint_t[7]", "char[]", "char[4]",
                  "unsigned int *", "PangoLogAttr[]"):
        with ffi._lock:
            built = ffi._get_cached_btype(cffi_own(cdecl))
        assert ffi.typeof(cdecl) is built, cdecl  # the very type cffi's own parser gives
    assert len(ffi.new("hb_codepoint_t[5]")) == 5
    assert ffi.typeof("int(*)(int)").kind == "function"  # anything else: cffi's own parser


def test_lean_user_agent_sheet_keeps_list_markers() -> None:
    """The lean user-agent sheet drops footnote and note pseudo-elements, not the markers lists show."""
    weasyprint = pdf._import_weasyprint()
    from reports.weasyprint_speed import report_html_class

    lean = report_html_class(weasyprint)
    assert lean is not weasyprint.HTML
    page = ("<ol><li>first step</li><li>second step</li></ol><ul><li>bullet item</li></ul>"
            "<details open><summary>folded title</summary><p>body</p></details>")

    def text(cls: Any) -> str:
        doc = cls(string=page, base_url="about:blank", url_fetcher=pdf.refusing_fetcher(), media_type="print")
        return " ".join((pypdf.PdfReader(io.BytesIO(doc.write_pdf())).pages[0].extract_text() or "").split())

    plain = text(weasyprint.HTML)
    assert all(word in plain.split() for word in ("1.", "2.", "•", "first", "folded"))
    assert text(lean) == plain


def test_no_fork_while_other_threads_run() -> None:
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert pdf_worker.start() is None  # the caller renders in-process
    finally:
        stop.set()
        thread.join()
