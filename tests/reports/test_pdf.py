"""PDF report: opens, every finding on page one, no URL is ever fetched (WeasyPrint is slow: few tests)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from doctor.result_io import to_result

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from reports.pdf import FetchRefused, html_to_pdf, refusing_fetcher, render_pdf  # noqa: E402


def _pages(data: bytes) -> list[str]:
    reader = pypdf.PdfReader(io.BytesIO(data))
    return [" ".join((p.extract_text() or "").split()) for p in reader.pages]


@pytest.fixture(scope="module")
def sick_pdf(sick_data: dict[str, Any]) -> list[str]:
    return _pages(render_pdf(to_result(sick_data)))


def _flat(text: str) -> str:
    return "".join(text.split())  # table cells wrap: compare without the line breaks


def test_sick_pdf_page_one_lists_every_finding_hardware_first_and_the_details_follow(
        sick_data: dict[str, Any], sick_pdf: list[str]) -> None:
    """The vendor's first page: every finding at low or above in one line each (severity, subject, title,
    who acts), within a severity the hardware's and firmware's first; the unevaluated checks after; then
    the details, starting with the top finding's evidence and fix."""
    from doctor.findings import actor_order, severity_order

    first = sick_pdf[0]
    assert "gpu-node-13" in first and "page 1 of" in first
    problems = [f for f in sick_data["findings"] if f["severity"] in ("critical", "high", "medium", "low")]
    assert len(problems) >= 20  # the sick fixture's ~22 findings all fit
    flat = _flat(first)
    for f in problems:
        assert _flat(f["title"]) in flat, f["title"]
    for f in (f for f in sick_data["findings"] if f["severity"] == "unknown"):
        assert f["check"] in first
    ordered = sorted(problems, key=lambda f: (severity_order(f["severity"]), actor_order(f["acts"]), f["rank"]))
    places = [flat.index(_flat(f["title"])) for f in ordered]
    assert places == sorted(places)  # severity, then hardware/firmware, operating system, application
    assert {f["acts"] for f in problems} == {"hardware", "os", "application"}
    assert "hardware/firmware" in first and "operating system" in first and "application" in first
    top = problems[0]
    details = _flat(" ".join(sick_pdf[:2]))  # the details begin right after the summary
    assert "EVIDENCE" in " ".join(sick_pdf[:2]).upper()
    assert top["fix"]["runtime"] and _flat(top["fix"]["runtime"][0]) in details
    assert any("PCIe topology" in p for p in sick_pdf)


def test_pdf_prints_every_reference_url_and_the_html_links_them(sick_data: dict[str, Any],
                                                                sick_pdf: list[str]) -> None:
    """The PDF writes reference URLs as text (viewers link them), the HTML as links; both show each one."""
    from reports.html import render_html

    text = "".join("".join(p.split()) for p in sick_pdf)
    html = render_html(to_result(sick_data))
    urls = [r for f in sick_data["findings"] for r in f.get("references") or [] if r.startswith("https://")]
    assert urls
    for url in urls:
        assert url in text, url
        assert f'<a href="{url}"' in html
    assert "<a href=\"https://" not in render_html(to_result(sick_data), links=False)


def test_healthy_pdf_renders(healthy_data: dict[str, Any]) -> None:
    pages = _pages(render_pdf(to_result(healthy_data)))
    assert "gpu-node-07" in pages[0] and "Summary" in pages[0]


def test_renderer_refuses_every_url() -> None:
    fetcher = refusing_fetcher()
    page = ('<html><head><link rel="stylesheet" href="https://example.invalid/a.css"></head><body>'
            '<p>marker</p><img src="http://127.0.0.1:9/x.png"><img src="file:///etc/passwd">'
            '<p style="background: url(file:///etc/hostname)">x</p></body></html>')
    pages = _pages(html_to_pdf(page, fetcher))
    assert "marker" in pages[0]
    assert "http://127.0.0.1:9/x.png" in fetcher.refused and "file:///etc/passwd" in fetcher.refused
    assert "https://example.invalid/a.css" in fetcher.refused
    with pytest.raises(FetchRefused):
        fetcher.fetch("https://example.invalid/")


def test_hostile_report_requests_nothing() -> None:
    from reports.html import render_html
    from tests.reports.conftest import hostile_finding

    finding = hostile_finding().to_dict() | {"rank": 1}
    data = {"schema_version": "1.0", "tool": {"name": "gpu-node-doctor", "version": "0"}, "source": {},
            "findings": [finding], "checks": [], "inventory": {}}
    fetcher = refusing_fetcher()
    html_to_pdf(render_html(to_result(data)), fetcher)
    assert fetcher.refused == []  # the injected <img> tags were escaped text, so nothing was asked for


def test_pdf_outline_lists_sections_and_findings(sick_data: dict[str, Any]) -> None:
    reader = pypdf.PdfReader(io.BytesIO(render_pdf(to_result(sick_data))))

    def titles(items: list[Any]) -> list[str]:
        out: list[str] = []
        for item in items:
            out.extend(titles(item) if isinstance(item, list) else [str(item.title)])
        return out

    outline = titles(reader.outline)
    shown = [f for f in sick_data["findings"] if f["severity"] not in ("pass", "unknown")]
    assert sum(t.startswith("#") for t in outline) == len(shown)
    assert "PCIe topology" in outline
    assert not any(t.strip().lower() in ("evidence", "roll back", "fix now (runtime)") for t in outline)
