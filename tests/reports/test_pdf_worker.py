"""The forked PDF renderer (reports/pdf_worker.py) gives the report an in-process render gives, and falls back to
it; the stylesheet parsed once gives the inline one; every finding keeps its PDF anchor."""

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
from doctor.result_io import to_result  # noqa: E402
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
    forked = pdf.render_pdf(to_result(healthy_data), worker)
    assert _reaped(pid)
    here = pdf.render_pdf(to_result(healthy_data))
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

    monkeypatch.setattr(pdf, "import_weasyprint_single_threaded", missing)  # the forked child inherits this
    worker = pdf_worker.start()
    assert worker is not None
    with pytest.raises(DoctorError, match="needs Pango"):
        worker.render(PAGE + "<p>more than a pipe holds</p>" * 10_000)  # the child reads none of it


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


def test_parsed_stylesheet_gives_the_inline_one(healthy_data: dict[str, Any]) -> None:
    """The PDF's page has no ``<style>``; the same stylesheet, parsed once and applied to it, gives the same bytes
    (the healthy report: the stylesheet is the same for every report, and this one renders fastest)."""
    from doctor import i18n
    from reports.html import render_html, render_html_view
    from reports.print_css import report_css
    from reports.view import build_view

    with i18n.use("zh-CN"):  # the margin texts are translated
        inline = pdf.html_to_pdf(render_html(to_result(healthy_data), links=False))
        bare = render_html_view(build_view(to_result(healthy_data)), links=False, style=False)
        css = report_css()
    assert "<style" not in bare and "string(generated)" in css
    assert pdf.html_to_pdf(bare, css=css) == inline
    assert pdf.stylesheet(css) is pdf.stylesheet(css)  # kept for the next report...
    assert pdf.html_to_pdf(bare, css=css) == inline  # ...and giving it the same pages


@linux_only
def test_worker_applies_the_stylesheet_it_is_sent() -> None:
    """The child parses the English stylesheet while it waits; another text sent with the page is the one applied."""
    worker = pdf_worker.start()
    assert worker is not None
    red = worker.render(PAGE, "p { color: #ff0000 }")
    assert red == pdf.html_to_pdf(PAGE, css="p { color: #ff0000 }")
    assert red != pdf.html_to_pdf(PAGE)


def test_every_finding_keeps_its_anchor_and_the_summary_links_reach_them(sick_data: dict[str, Any]) -> None:
    """The PDF anchors each finding at its heading's label (so that alike findings share computed styles):
    every finding still has its named destination, on the page that shows its heading, and the summary's
    links lead there."""
    from reports.html import render_html

    html = render_html(to_result(sick_data), links=False)
    assert 'id="finding-1" class="sev-text' in html and '<article class="finding sev-critical first" data-rank' in html
    assert '<article class="finding sev-critical first" id="finding-1"' in render_html(to_result(sick_data))  # HTML unchanged
    reader = pypdf.PdfReader(io.BytesIO(pdf.render_pdf(to_result(sick_data))))
    from reports.view import build_view

    ranks = [f.rank for f in build_view(to_result(sick_data)).findings]
    assert len(ranks) > 20
    destinations = reader.named_destinations
    for rank in ranks:
        page = reader.get_destination_page_number(destinations[f"finding-{rank}"])
        assert f"#{rank} " in reader.pages[page].extract_text(), rank
    linked = {a.get_object().get("/Dest") for a in reader.pages[0].get("/Annots") or []}
    problems = {f"finding-{f.rank}" for f in build_view(to_result(sick_data)).problems}
    assert len(problems) > 20 and problems <= linked <= set(destinations)  # every summary line leads to its details


@linux_only
def test_worker_embeds_the_files_made_while_it_lays_out() -> None:
    """The files are made after the page is sent (the child lays it out meanwhile) and the child embeds them."""
    worker = pdf_worker.start()
    assert worker is not None
    files = (pdf.Embedded("notes.txt", b"alpha\n", "first", "2026-01-02T03:04:05+00:00"),)
    made: list[bool] = []

    def make() -> tuple[pdf.Embedded, ...]:
        made.append(True)
        return files

    forked = worker.render(PAGE, None, make)
    assert made == [True]
    assert pypdf.PdfReader(io.BytesIO(forked)).attachments == {"notes.txt": [b"alpha\n"]}
    assert forked == pdf.html_to_pdf(PAGE, files=files)


@linux_only
def test_failure_making_the_files_reaches_the_caller_and_the_worker_is_reaped() -> None:
    worker = pdf_worker.start()
    assert worker is not None
    pid = worker.pid

    def broken() -> tuple[pdf.Embedded, ...]:
        raise DoctorError("no files (test)")

    with pytest.raises(DoctorError, match="no files"):
        worker.render(PAGE, None, broken)
    assert _reaped(pid)


def test_quick_import_restores_path_finds_the_libraries_and_runs_nothing_from_the_working_directory(
        tmp_path: Any) -> None:
    import subprocess

    marker = tmp_path / "ran"
    for name in ("ld", "gcc", "cc", "ldconfig"):  # what ctypes.util.find_library may start
        tool = tmp_path / name
        tool.write_text(f"#!/bin/sh\necho {name} >> {marker}\n", encoding="utf-8")
        tool.chmod(0o755)
    code = ("import os, sys; before = os.environ.get('PATH'); from reports import pdf; "
            "pdf.import_weasyprint_single_threaded(); from weasyprint.text import ffi; "
            "plain = ffi.harfbuzz_subset is not None; "
            "print(os.environ.get('PATH') == before, ffi.pango is not None, plain)")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out[:2] == ["True", "True"]
    expected = subprocess.run([sys.executable, "-c", "from weasyprint.text import ffi; "
                               "print(ffi.harfbuzz_subset is not None)"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out[2:] == expected  # the optional subsetting library is found as by a plain import
    assert not marker.exists()
