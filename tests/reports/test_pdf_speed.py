"""The PDF's speed shortcuts: a forked renderer (reports/pdf_worker.py) and WeasyPrint shortcuts
(reports/weasyprint_speed.py) give the report a plain in-process render gives, and fall back to it."""

from __future__ import annotations

import io
import os
import signal
import sys
from typing import Any

import pytest

from doctor.result_io import to_result

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from doctor.errors import DoctorError  # noqa: E402
from reports import pdf, pdf_worker, weasyprint_speed  # noqa: E402

#: Tests that need the shortcuts on: they are fingerprinted for the versions in TUNED_FOR and stay off with others
#: (WeasyPrint's own code runs, so a newer WeasyPrint, pydyf, cffi or tinyhtml5 renders the same, only slower).
tuned = pytest.mark.skipif(bool(weasyprint_speed.untuned_versions()),
                           reason=f"shortcuts are tuned for {weasyprint_speed.TUNED_FOR}; installed: "
                                  f"{', '.join(weasyprint_speed.untuned_versions())}")
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


@tuned
def test_cffi_type_shortcut_builds_the_declared_types() -> None:
    pdf.refusing_fetcher()  # imports WeasyPrint and installs the shortcuts
    from weasyprint.text.ffi import ffi

    cffi_own = ffi._parser.parse_type.original
    for cdecl in ("PangoRectangle *", "PangoFcFontMap *", "hb_codepoint_t[7]", "char[]", "char[4]",
                  "unsigned int *", "PangoLogAttr[]", "PangoGlyphInfo", "PangoGlyph", "int", "unsigned int"):
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


#: text that takes each branch of WeasyPrint's glyph loop: kerning pairs, right-to-left runs, CJK and
#: monospace fonts, combining marks, a glyph no font has (.notdef), an ellipsis, page margin boxes
GLYPH_PAGE = """<style>@page { @top-left { content: "AVAWAY Te To" } } p.cut { width: 4em; overflow: hidden;
white-space: nowrap; text-overflow: ellipsis } code { font-family: "DejaVu Sans Mono", monospace }</style>
<h1>AVAWAY Te To Ta fi ffl</h1><p>mixed שלום עולם and مرحبا بالعالم text, 中文报告 检查</p>
<p>cafe\u0301 n\u0303 a\u0308\u0301 <code>0000:15:01.0 x16 32 GT/s</code> <b>bold</b> <i>italic</i></p>
<p>private \ue000 glyph</p><p class="cut">a line too long for its box</p>"""


@tuned
def test_text_lines_are_drawn_as_weasyprint_draws_them(sick_data: dict[str, Any]) -> None:
    """The glyph-array shortcut writes the very bytes WeasyPrint's own ``draw_first_line`` writes."""
    from reports.html import render_html

    pdf.refusing_fetcher()  # imports WeasyPrint and installs the shortcuts
    from weasyprint.draw import text as draw_text

    fast = draw_text.draw_first_line
    assert fast.original is not fast  # installed for this WeasyPrint
    for html in (GLYPH_PAGE, render_html(to_result(sick_data), links=False)):
        try:
            draw_text.draw_first_line = fast.original
            plain = pdf.html_to_pdf(html)
        finally:
            draw_text.draw_first_line = fast
        assert pdf.html_to_pdf(html) == plain
    assert "AVAWAY" in _text(plain) or "AVAWAY" in _text(pdf.html_to_pdf(GLYPH_PAGE))


@tuned
def test_shortcut_stays_off_for_another_draw_first_line() -> None:
    from reports import weasyprint_speed

    pdf.refusing_fetcher()
    from weasyprint.draw import text as draw_text

    assert weasyprint_speed.code_fingerprint(draw_text.draw_first_line.original) == weasyprint_speed._DRAW_FIRST_LINE
    assert weasyprint_speed.code_fingerprint(draw_text.draw_text) != weasyprint_speed._DRAW_FIRST_LINE


def test_font_tools_load_only_when_used(tmp_path: Any) -> None:
    """WeasyPrint's fontTools and Pillow imports are deferred: a report needs none, and a first use loads the real
    module, with the settings WeasyPrint made on it."""
    import subprocess

    script = (
        "import sys\n"
        "from reports import pdf\n"
        "data = pdf.html_to_pdf('<p>deferred 中文</p>')\n"
        "assert data.startswith(b'%PDF-')\n"
        "assert type(sys.modules['fontTools.subset']).__name__ == '_Deferred'\n"
        "assert not any(n.startswith('fontTools.varLib') and n != 'fontTools.varLib.instancer' for n in sys.modules)\n"
        "from fontTools import subset\n"
        "assert subset.Options().__class__.__module__ == 'fontTools.subset'\n"
        "assert type(sys.modules['fontTools.subset']).__name__ == 'module'\n"
        "import weasyprint.pdf.fonts as fonts\n"
        "assert callable(fonts.instantiateVariableFont)\n"
        "from fontTools.varLib.instancer import instantiateVariableFont\n"
        "assert instantiateVariableFont.__module__ == 'fontTools.varLib.instancer'\n"
        "assert all(type(sys.modules[f'PIL.{name}']).__name__ == '_Deferred' for name in ('Image', 'ImageCms'))\n"
        "import io, PIL.EpsImagePlugin, PIL.ImageFile\n"
        "assert PIL.EpsImagePlugin.EpsImageFile.format == 'EPS' and PIL.ImageFile.ImageFile  # the real ones\n"
        "assert type(sys.modules['PIL.EpsImagePlugin']).__name__ == 'module'\n"
        "assert sys.modules['PIL.EpsImagePlugin'].gs_binary is False  # WeasyPrint's settings, made when loaded\n"
        "assert sys.modules['PIL.ImageFile'].LOAD_TRUNCATED_IMAGES is True\n"
        "from PIL import Image\n"
        "png = io.BytesIO()\n"
        "Image.new('RGB', (3, 2)).save(png, 'PNG')\n"
        "assert Image.open(io.BytesIO(png.getvalue())).size == (3, 2)\n"
        "print('ok')\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120,
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_parsed_stylesheet_gives_the_inline_one(sick_data: dict[str, Any]) -> None:
    """The PDF's page has no ``<style>``; the same stylesheet, parsed once and applied to it, gives the same bytes."""
    from doctor import i18n
    from reports.html import render_html, render_html_view
    from reports.print_css import report_css
    from reports.view import build_view

    with i18n.use("zh-CN"):  # the margin texts are translated
        inline = pdf.html_to_pdf(render_html(to_result(sick_data), links=False))
        bare = render_html_view(build_view(to_result(sick_data)), links=False, style=False)
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


def test_html_parser_builds_each_pattern_once(sick_data: dict[str, Any]) -> None:
    """tinyhtml5's pattern cache, fixed, gives the same tree and keeps one pattern per character set."""
    from xml.etree import ElementTree

    import tinyhtml5
    from tinyhtml5 import inputstream

    from reports import weasyprint_speed
    from reports.html import render_html

    pdf.refusing_fetcher()  # installs the shortcuts
    page = render_html(to_result(sick_data), links=False) + "<p title='single' data-x=unquoted>&amp; &lt;tail</p><!-- c -->"
    patterns = inputstream.characters_until_regex
    assert isinstance(patterns, weasyprint_speed._UntilPatterns)
    fixed = ElementTree.tostring(tinyhtml5.parse(page, namespace_html_elements=False))
    assert 0 < len(patterns) < 20  # one per character set, not one per call
    inputstream.characters_until_regex = {}  # tinyhtml5's own (never hit) cache
    try:
        plain = ElementTree.tostring(tinyhtml5.parse(page, namespace_html_elements=False))
    finally:
        inputstream.characters_until_regex = patterns
    assert fixed == plain


def test_streams_deflated_faster_hold_the_same_pages(sick_data: dict[str, Any]) -> None:
    """Level-6 streams decompress to exactly what pydyf's level 9 gives, for a file a few per cent larger."""
    import zlib

    import pydyf

    from reports.html import render_html

    pdf.refusing_fetcher()  # installs the shortcuts
    html = render_html(to_result(sick_data), links=False)
    shim = pydyf.zlib
    assert shim is not zlib
    faster = pdf.html_to_pdf(html)
    pydyf.zlib = zlib
    try:
        smallest = pdf.html_to_pdf(html)
    finally:
        pydyf.zlib = shim
    assert faster != smallest and len(smallest) < len(faster) < len(smallest) * 1.05

    def contents(data: bytes) -> list[bytes]:
        return [page.get_contents().get_data() for page in pypdf.PdfReader(io.BytesIO(data)).pages]

    assert contents(faster) == contents(smallest)


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
    assert {"finding-1", "finding-2", "finding-3"} <= linked <= set(destinations)


#: text the line memo must answer as WeasyPrint does: repeats in styles that differ only in colour (shared) or in
#: a value Pango reads (letter and word spacing, weight, language, decoration, wrapping), ellipses drawn from a
#: shared line, justified lines (WeasyPrint sets a spacing on the layout it drew), soft hyphens, tabs, a narrow box
REPEATS_PAGE = """<style>p { width: 9em } .r { color: #c00 } .s { letter-spacing: 0.2em } .w { word-spacing: 1em }
.b { font-weight: bold } .u { text-decoration: underline } .n { white-space: nowrap } .j { text-align: justify }
.cut { overflow: hidden; white-space: nowrap; text-overflow: ellipsis } .pre { white-space: pre-wrap; tab-size: 3 }
.any { overflow-wrap: anywhere; width: 3em }</style>
""" + "".join(f'<p class="{cls}">Expected value</p><p class="{cls}">Expected value and a longer tail that wraps</p>'
              f'<p class="{cls}" lang="tr">Expected value</p>'
              for cls in ("", "r", "s", "w", "b", "u", "n", "j", "cut", "pre", "any")) + """
<p style="width: 4em">hyphen&shy;ated hyphen&shy;ated words</p><p class="pre">tab\there\tand\tthere</p><p class="j">Expected value and a
longer tail that wraps in a justified paragraph</p><p class="j">Expected value and a longer tail that wraps in a
justified paragraph</p>"""


#: margin boxes that differ by page (first, left and right, the third, a named page) and a page counter
MARGINS_PAGE = """<style>@page { @bottom-right { content: "p" counter(page) "/" counter(pages) }
@top-left { content: "any" } } @page :first { @top-left { content: "first"; color: #ff0000 } }
@page :left { @top-right { content: "left" } } @page :nth(3) { @top-center { content: "third" } }
@page wide { size: A4 landscape; @top-left { content: "wide" } } .wide { page: wide }
h1 { break-before: page }</style>""" + "".join(f"<h1>part {n}</h1>" for n in range(1, 6)) + \
    "<div class='wide'><h1>part 6</h1></div><h1>part 7</h1>"


@tuned
def test_pages_get_their_own_margin_boxes() -> None:
    """Pages sharing margin box styles still show each page's own margin texts and counters."""
    pdf.refusing_fetcher()
    from weasyprint.layout import page

    assert page.set_page_type_computed_styles.original is not page.set_page_type_computed_styles
    texts = [" ".join((p.extract_text() or "").split())
             for p in pypdf.PdfReader(io.BytesIO(pdf.html_to_pdf(MARGINS_PAGE))).pages]
    assert len(texts) == 7
    for number, text in enumerate(texts, start=1):
        assert f"part {number}" in text and f"p{number}/7" in text, text
        assert ("first" in text) == (number == 1) and ("third" in text) == (number == 3)
        assert ("left" in text) == (number % 2 == 0) and ("wide" in text) == (number == 6)
        assert ("any" in text) == (number not in (1, 6))


def _switched_off(*names: str) -> Any:
    """A context in which the named WeasyPrint functions are WeasyPrint's own (the shortcuts' ``original``)."""
    import contextlib
    import importlib

    @contextlib.contextmanager
    def off() -> Any:
        swapped = []
        for module_name in ("weasyprint.text.line_break", "weasyprint.layout.inline", "weasyprint.layout.preferred",
                            "weasyprint.css.units", "weasyprint.css.computed_values", "weasyprint.draw.text",
                            "weasyprint.draw", "weasyprint.layout.page", "weasyprint.layout.percent",
                            *(f"weasyprint.layout.{name}" for name in ("float", "grid", "absolute", "block",
                                                                       "column", "table")),
                            "weasyprint.formatting_structure.boxes", "pydyf"):
            module = importlib.import_module(module_name)
            for holder in (module, getattr(module, "Layout", None), getattr(module, "Box", None)):  # methods
                for name in names:
                    fast = getattr(holder, name, None)
                    if fast is not None and hasattr(fast, "original"):
                        swapped.append((holder, name, fast))
                        setattr(holder, name, fast.original)
        try:
            yield swapped
        finally:
            for module, name, fast in swapped:
                setattr(module, name, fast)

    return off()


@tuned
def test_line_memo_caches_and_replayed_text_give_weasyprints_pages(sick_data: dict[str, Any],
                                                                  hostile_data: dict[str, Any]) -> None:
    """Line breaks answered from the memo, struts from the tuple-keyed cache, shared font descriptions, Pango
    contexts and margin box styles, used lengths resolved in one loop, text drawn again from recorded
    operators, lines drawn from the Pango layouts they were laid out with, the one-read flow test and the kept
    float operands give the very bytes WeasyPrint's and pydyf's own functions give,
    for the sick report (both languages, topology labels included), a hostile one, and repeats that differ in
    what Pango reads."""
    from doctor import i18n
    from reports.html import render_html

    pdf.refusing_fetcher()  # installs the shortcuts
    unknown = "<p>unknown \ue000 glyph</p>" * 2 + "<p style='color: red'>unknown \ue000 glyph</p>"  # WeasyPrint's own
    lengths = ("<div style='width: 50%; padding: 2% 1em; margin: calc(1em + 2%) auto; min-height: 10%; "
               "max-width: calc(100% - 3em); box-sizing: content-box; border: 3px solid red'>percent</div>"
               "<div style='height: 20%; max-height: 40px; box-sizing: padding-box; padding: 5%'>auto height</div>"
               "<table style='border-collapse: collapse; width: 80%'><tr><td style='width: 30%; padding: 1%; "
               "border: 2px solid'>cell</td><td>other</td></tr></table>"
               + "".join(f"<div style='font-size: {size}px; padding-left: calc(1em + 2%); width: 60%'>em {size}</div>"
                         for size in (10, 20, 10)))
    pages = [REPEATS_PAGE, GLYPH_PAGE, unknown, MARGINS_PAGE, lengths, render_html(to_result(sick_data), links=False),
             render_html(to_result(hostile_data), links=False)]
    with i18n.use("zh-CN"):
        pages.append(render_html(to_result(sick_data), links=False))
    names = {"split_first_line", "strut", "get_font_description", "draw_text", "setup", "set_page_type_computed_styles",
             "resolve_percentages", "deactivate", "reactivate", "set_text", "is_in_normal_flow", "_to_bytes"}
    for html in pages:
        with _switched_off(*names) as swapped:
            assert {name for _module, name, _fast in swapped} == names
            plain = pdf.html_to_pdf(html)
        assert pdf.html_to_pdf(html) == plain
        if html is REPEATS_PAGE:
            assert "Expected value and a" in _text(plain) and "hyphen\u2010" in _text(plain)


@tuned
def test_flow_test_and_operand_shortcuts_are_on() -> None:
    """The flow test and operand shortcuts are on for this WeasyPrint and pydyf, and answer as the originals do."""
    pdf.refusing_fetcher()
    import pydyf
    from weasyprint.formatting_structure import boxes

    flow, to_bytes = boxes.Box.is_in_normal_flow, pydyf._to_bytes
    assert flow.original is not flow and to_bytes.original is not to_bytes
    for value in (0.0, -0.0, 1.5, -2.25, 3.0, 1e-7, 12345.678, 7, True, b"x", "name", float("nan"), 2.5):
        assert to_bytes(value) == to_bytes.original(value) == to_bytes(value), value

    for float_ in ("none", "left", "right", "inline-start", "inline-end", "footnote"):
        for position in ("static", "relative", "absolute", "fixed", ("running()", "header"), ("note()", "n")):
            box = object.__new__(boxes.BlockBox)
            box.style = {"float": float_, "position": position}
            assert flow(box) == flow.original(box), (float_, position)


@tuned
def test_used_lengths_are_kept_for_alike_boxes() -> None:
    """The used lengths memo is on for this WeasyPrint, and boxes alike but for their ``calc()`` font sizes get
    their own lengths (the byte comparison above covers the pages)."""
    from reports import weasyprint_speed

    pdf.refusing_fetcher()
    from weasyprint.layout import percent

    assert weasyprint_speed.code_fingerprint(percent.adjust_box_sizing) == weasyprint_speed._BOX_SIZING_CODE
    assert percent.resolve_percentages.original is not percent.resolve_percentages
    widths: dict[int, float] = {}  # per paragraph
    page = "".join(f"<p style='font-size: {size}px; width: calc(10em + 10%)'>w{size}</p>" for size in (10, 20, 10, 20))
    pdf.html_to_pdf(page + "<p style='width: 50%'>a</p>" * 3)  # warms the memo with these styles
    fast = percent.resolve_percentages

    def recording(box: Any, containing_block: Any) -> None:
        fast(box, containing_block)
        if box.element_tag == "p":
            widths[id(box.element)] = box.width

    percent.resolve_percentages = recording
    from weasyprint.layout import block

    block_fast, block.resolve_percentages = block.resolve_percentages, recording
    try:
        pdf.html_to_pdf(page + "<p style='width: 50%'>a</p>" * 3)
    finally:
        percent.resolve_percentages, block.resolve_percentages = fast, block_fast
    found = list(widths.values())
    assert len(found) == 7 and found[0] == found[2] != found[1] == found[3] and found[4] == found[5] == found[6], found


@tuned
def test_line_memo_answers_repeats(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memo is on for this WeasyPrint, and a label repeated in alike paragraphs is laid out by Pango once."""
    from reports import weasyprint_speed

    pdf.refusing_fetcher()
    from weasyprint.layout import inline
    from weasyprint.text import line_break

    assert weasyprint_speed.line_code_fingerprint() == weasyprint_speed._LINE_CODE
    memo = line_break.split_first_line
    assert inline.split_first_line is memo and memo.original is not memo
    assert inline.strut is line_break.strut and line_break.strut.original is not line_break.strut
    texts: list[str] = []
    monkeypatch.setattr(line_break, "create_layout", _counting_layouts(line_break.create_layout, texts))
    pdf.html_to_pdf("<p>Impact label</p>" * 40 + "<p style='color: red'>Impact label</p>")
    assert texts.count("Impact label") == 1  # one Pango layout for 41 alike lines (the colour does not matter)


def _counting_layouts(create_layout: Any, texts: list[str]) -> Any:
    def counting(text: str, *args: Any, **kwargs: Any) -> Any:
        texts.append(text)
        return create_layout(text, *args, **kwargs)

    return counting


@tuned
def test_repeated_text_is_drawn_without_pango_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A text drawn before in the document is drawn from its recorded operators, at its own place and colour;
    underlined text always goes through WeasyPrint."""
    pdf.refusing_fetcher()
    from weasyprint.draw import text as draw_text
    from weasyprint.text import line_break

    assert draw_text.draw_text.original is not draw_text.draw_text
    drawn: list[str] = []
    reactivate = line_break.Layout.reactivate

    def counting(self: Any, style: Any) -> None:
        drawn.append(self.text)
        reactivate(self, style)

    monkeypatch.setattr(line_break.Layout, "reactivate", counting)
    page = ("<p>Evidence label</p>" * 30 + "<p style='color: #ff0000'>Evidence label</p>"
            + "<p style='text-decoration: underline'>Underlined label</p>" * 3)
    data = pdf.html_to_pdf(page)
    assert drawn.count("Evidence label") == 1 and drawn.count("Underlined label") == 3
    contents = b"".join(p.get_contents().get_data() for p in pypdf.PdfReader(io.BytesIO(data)).pages)
    assert contents.count(b" Tm") == 34  # each label at its own place
    assert b"1 0 0 rg" in contents  # the red one in red


@tuned
def test_shortcut_caches_let_a_document_and_its_fonts_go() -> None:
    """What the shortcuts keep lives on the font configuration, the layout and the document: once a report is
    written, nothing holds them (a long-running TUI exports many)."""
    import gc
    import weakref

    pdf.refusing_fetcher()
    from weasyprint.text.fonts import FontConfiguration

    config = FontConfiguration()
    assert pdf.html_to_pdf(REPEATS_PAGE + MARGINS_PAGE, font_config=config).startswith(b"%PDF-")
    assert config.__dict__.get("_gnd_contexts") and config.__dict__.get("_gnd_struts")  # the shortcuts ran
    gone = weakref.ref(config)
    del config
    pdf.html_to_pdf("<p>another document</p>")  # the draw memo keeps the last document only
    gc.collect()
    assert gone() is None


def test_documents_drawn_in_two_threads_keep_their_own_recorded_text() -> None:
    """The draw memo records and replays per thread: two documents drawn at once give what each gives alone."""
    import threading

    pdf.refusing_fetcher()
    pages = ["<p>Evidence label</p>" * 40 + "<p><b>bold label</b></p>" * 20,
             "<p style='font-family: monospace'>Evidence label</p>" * 40 + "<p>plain label</p>" * 20]
    alone = [pdf.html_to_pdf(page) for page in pages]
    results: dict[int, list[bytes]] = {0: [], 1: []}

    def draw(index: int) -> None:
        for _round in range(3):
            results[index].append(pdf.html_to_pdf(pages[index]))

    threads = [threading.Thread(target=draw, args=(index,)) for index in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {0: [alone[0]] * 3, 1: [alone[1]] * 3}


@tuned
def test_lines_are_drawn_from_the_layouts_they_were_laid_out_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawing a laid-out line sets no Pango layout up again, unless it is decorated, justified or holds a line
    separator (WeasyPrint's own set-up draws those); the pages are WeasyPrint's (see the byte comparison above)."""
    from reports import weasyprint_speed

    pdf.refusing_fetcher()
    from weasyprint.text import line_break

    layout_class = line_break.Layout
    assert [weasyprint_speed.code_fingerprint(getattr(layout_class, name).original)
            for name in ("deactivate", "reactivate", "set_text")] == list(weasyprint_speed._KEPT_CODE[:3])
    set_up_again: list[str] = []
    own = layout_class.reactivate.original

    def counting(self: Any, style: Any) -> None:
        set_up_again.append(self.text)
        own(self, style)

    _deactivate, reactivate, _set_text = weasyprint_speed._keep_layouts(
        layout_class.deactivate.original, counting, layout_class.set_text.original,
        line_break.pango.pango_layout_set_single_paragraph_mode)
    monkeypatch.setattr(layout_class, "reactivate", reactivate)  # the installed one, WeasyPrint's own counted
    page = ("<p>first plain line</p><p>second plain line, longer and wrapped " + "filler " * 60 + "</p>"
            "<p style='text-decoration: underline'>underlined line</p>"
            "<p style='text-align: justify; width: 20em'>" + "justified words here " * 8 + "</p>")
    data = pdf.html_to_pdf(page)
    assert "first plain line" in _text(data) and "underlined line" in _text(data)
    assert not any("plain" in text or "filler" in text for text in set_up_again), set_up_again
    assert "underlined line" in set_up_again
    assert any("justified" in text for text in set_up_again)


def _run_script(script: str) -> str:
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


@tuned
def test_stored_cffi_declarations_are_current_and_equal_a_parse() -> None:
    """WeasyPrint's cffi declarations come from templates/weasyprint-cdef.pickle (regenerate it with
    ``python -m reports.weasyprint_speed`` after upgrading WeasyPrint or cffi), equal to what cffi parses from the
    same text, and pycparser is not imported for a report."""
    script = (
        "import sys, cffi\n"
        "from reports import pdf, weasyprint_speed as w\n"
        "pdf.refusing_fetcher()\n"
        "assert w.restored_declarations == [True], 'stale: python -m reports.weasyprint_speed'\n"
        "assert pdf.html_to_pdf('<p>declared 中文 <b>bold</b></p><pre>mono</pre>').startswith(b'%PDF-')\n"
        "assert type(sys.modules['pycparser']).__name__ == '_Deferred'\n"
        "from weasyprint.text.ffi import ffi\n"
        "fresh = cffi.FFI()\n"
        "fresh.cdef(w.weasyprint_csource())\n"
        "def shape(parser):\n"
        "    c_name = lambda tp: tp._get_c_name() if hasattr(tp, '_get_c_name') else repr(tp)\n"
        "    return {name: (type(tp).__name__, c_name(tp), getattr(tp, 'fldnames', None),\n"
        "                   [c_name(t) for t in getattr(tp, 'fldtypes', None) or ()], quals)\n"
        "            for name, (tp, quals) in parser._declarations.items()}, parser._int_constants\n"
        "assert shape(ffi._parser) == shape(fresh._parser)\n"
        "assert ffi.sizeof('PangoGlyphInfo') == fresh.sizeof('PangoGlyphInfo') == 20\n"
        "assert ffi.offsetof('PangoRectangle', 'height') == 12\n"
        "print('ok')\n")
    assert _run_script(script) == "ok"


def test_damaged_stored_declarations_are_parsed_instead(tmp_path: Any) -> None:
    """A stored state whose key is another text's, or that does not load, leaves cffi to parse WeasyPrint's text."""
    for content in (b"# gnd cffi declarations: cffi 0 0\n" + b"x" * 40, b""):
        damaged = tmp_path / "cdef.pickle"
        damaged.write_bytes(content)
        script = (
            "from pathlib import Path\n"
            "from reports import pdf, weasyprint_speed as w\n"
            f"w.DECLARATIONS = Path({str(damaged)!r})\n"
            "assert pdf.html_to_pdf('<p>parsed</p>').startswith(b'%PDF-')\n"
            "assert w.restored_declarations == []\n"
            "print('ok')\n")
        assert _run_script(script) == "ok"


def test_untuned_versions_name_what_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newer WeasyPrint (or pydyf, cffi, tinyhtml5, Python) is named, so the tests needing the shortcuts skip."""
    monkeypatch.setitem(weasyprint_speed.TUNED_FOR, "weasyprint", "0.1")
    monkeypatch.setitem(weasyprint_speed.TUNED_FOR, "tinyhtml5", "99.0")
    untuned = weasyprint_speed.untuned_versions()
    assert [v.split()[0] for v in untuned] == ["weasyprint", "tinyhtml5"]
    assert all(v.split()[1] not in ("0.1", "99.0") for v in untuned)
