"""The HTML report in a real browser (headless Chromium through Playwright).

Playwright's own Chromium is used when it is downloaded; otherwise the distribution's ``chromium``
(Debian: ``apt-get install chromium``). The tests skip, saying why, when neither can start.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doctor import i18n
from doctor.result_io import to_result
from reports.html import render_html

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")

#: Where a distribution installs Chromium
SYSTEM_CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        reasons: list[str] = []
        try:
            b = p.chromium.launch()
        except sync_api.Error as exc:
            reasons.append("Playwright's Chromium: " + str(exc).strip().splitlines()[0])
            b = None
        if b is None:
            for name in SYSTEM_CHROMIUMS:
                exe = shutil.which(name)
                if not exe:
                    continue
                try:
                    b = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
                    break
                except sync_api.Error as exc:
                    reasons.append(f"{exe}: " + str(exc).strip().splitlines()[0])
            else:
                reasons.append("no chromium on PATH (Debian: apt-get install chromium)")
        if b is None:
            pytest.skip("no browser can start: " + "; ".join(reasons))
        yield b
        b.close()


def _write(tmp_path: Path, data: dict[str, Any], lang: str = "en", name: str = "report.html") -> Path:
    with i18n.use(lang):
        page = render_html(to_result(data))
    path = tmp_path / name
    path.write_text(page, encoding="utf-8")
    return path


def _open(browser: Any, path: Path, js: bool = True) -> tuple[Any, Any, list[str], list[str]]:
    """A page on ``path`` that records console errors and aborts (and records) every non-local request."""
    context = browser.new_context(java_script_enabled=js)
    errors: list[str] = []
    remote: list[str] = []

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith(("file:", "data:")):
            r.continue_()
        else:
            remote.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"failed: {r.url}"))
    page.goto(path.as_uri(), wait_until="load")
    return context, page, errors, remote


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_report_renders_without_errors_or_requests(browser: Any, tmp_path: Path, sick_data: dict[str, Any],
                                                   lang: str) -> None:
    context, page, errors, remote = _open(browser, _write(tmp_path, sick_data, lang))
    try:
        assert page.title()
        assert errors == [] and remote == []
        svg = page.locator(".svg-wrap svg")
        assert svg.is_visible()
        box = svg.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 100
        shown = [f for f in sick_data["findings"] if f["severity"] not in ("pass", "unknown")]
        assert page.locator("article.finding").count() == len(shown)
        assert page.locator("article.finding details[open]").count() == len(shown)  # all expanded
    finally:
        context.close()


def test_hostile_report_requests_nothing(browser: Any, tmp_path: Path, hostile_data: dict[str, Any]) -> None:
    context, page, errors, remote = _open(browser, _write(tmp_path, hostile_data))
    try:
        page.wait_for_load_state("networkidle")
        assert remote == [] and errors == []
        assert page.evaluate("window.__pwned === undefined")
    finally:
        context.close()


def test_findings_fold_and_unfold_without_javascript(browser: Any, tmp_path: Path,
                                                     sick_data: dict[str, Any]) -> None:
    context, page, errors, remote = _open(browser, _write(tmp_path, sick_data), js=False)
    try:
        first = page.locator("article.finding").first
        detail = first.locator("pre.ev")
        assert detail.is_visible()
        first.locator("summary").click()
        assert not detail.is_visible() and first.locator("summary h3").is_visible()
        assert page.locator("article.finding").nth(1).locator("pre.ev").is_visible()  # only that one folded
        first.locator("summary").click()
        assert detail.is_visible()
        assert errors == [] and remote == []
    finally:
        context.close()


def _weasyprint_pages(data: dict[str, Any], lang: str) -> list[str]:
    pypdf = pytest.importorskip("pypdf")
    pytest.importorskip("weasyprint")
    from reports.pdf import render_pdf

    with i18n.use(lang):
        pdf = render_pdf(to_result(data))
    return [(p.extract_text() or "") for p in pypdf.PdfReader(io.BytesIO(pdf)).pages]


def test_printing_gives_the_pdf_pages(browser: Any, tmp_path: Path, sick_data: dict[str, Any]) -> None:
    """Chromium's print of the HTML and WeasyPrint's PDF come from the same print stylesheet (A4, the
    topology on its own landscape page): same page count within 1 (the two engines break long
    evidence lines and tables slightly differently), and the same finding starts each page's
    first title within one page. The engines' small differences add up along the report, so the total
    may drift by one page per ten."""
    pypdf = pytest.importorskip("pypdf")
    weasy = _weasyprint_pages(sick_data, "en")
    context, page, _errors, _remote = _open(browser, _write(tmp_path, sick_data))
    try:
        pdf = page.pdf(prefer_css_page_size=True, print_background=True)
    finally:
        context.close()
    chrome = [(p.extract_text() or "") for p in pypdf.PdfReader(io.BytesIO(pdf)).pages]
    assert abs(len(chrome) - len(weasy)) <= max(1, -(-len(weasy) // 10)), (len(chrome), len(weasy))

    def page_of(pages: list[str], needle: str) -> int:
        flat = [" ".join(p.split()) for p in pages]
        return next(i for i, p in enumerate(flat) if needle in p)

    shown = [f for f in sick_data["findings"] if f["severity"] not in ("pass", "unknown")]
    for f in shown:
        needle = f"#{f['rank']} "
        assert abs(page_of(chrome, needle) - page_of(weasy, needle)) <= 1, f["check"]
    assert abs(page_of(chrome, "PCIe topology") - page_of(weasy, "PCIe topology")) <= 1
