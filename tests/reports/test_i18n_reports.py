"""The sick node's reports in both languages: every finding shown, chrome translated, data untouched."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

from doctor import i18n
from doctor.cli import main
from doctor.result_io import to_result
from reports.html import render_html
from reports.markdown import render_markdown, text

HAN = re.compile(r"[\u4e00-\u9fff]")
SHOWN = ("critical", "high", "medium", "low", "info")


@pytest.fixture(autouse=True)
def _english_after() -> Any:
    yield
    i18n.set_language("en")


def _shown(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["severity"] in SHOWN]


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_html_shows_every_finding_in_both_languages(sick_data: dict[str, Any], lang: str) -> None:
    from markupsafe import escape

    with i18n.use(lang):
        page = render_html(to_result(sick_data))
    assert f'<html lang="{lang}">' in page
    findings = _shown(sick_data)
    assert findings
    for f in findings:
        assert f'data-check="{f["check"]}"' in page
        from doctor.findings import Finding

        with i18n.use(lang):  # finding titles in the report's language (the JSON keeps them in English)
            title = i18n.tr(Finding.from_dict(f).title)
        assert escape(title) in page
        assert (title != f["title"]) == (lang == "zh-CN") or not f.get("i18n"), f["title"]
    if lang == "zh-CN":
        for heading in ("摘要", "问题列表（最严重的在前）", "PCIe 拓扑", "附录：硬件清单", "证据", "立即修复（运行时）"):
            assert heading in page
        for english in ("Findings, worst first", "Appendix: inventory", "<h4>Evidence</h4>", ">Summary<"):
            assert english not in page
        assert "第 " in page and "counter(pages)" in page  # page numbers in Chinese when printed
    else:
        assert "Findings, worst first" in page and HAN.search(page) is None


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_markdown_shows_every_finding_in_both_languages(sick_data: dict[str, Any], lang: str) -> None:
    with i18n.use(lang):
        md = render_markdown(to_result(sick_data))
    for f in _shown(sick_data):
        assert re.search(rf"^### {f['rank']}\. ", md, re.M), f["check"]
        assert f"`{f['check']}`" in md
    if lang == "zh-CN":
        assert md.startswith("# GPU 节点报告：") and "## 摘要" in md and "**证据**" in md
        assert "## Summary" not in md and "**Evidence**" not in md
        passed = [c for c in sick_data["checks"] if c.get("status") == "pass"]
        zh = i18n.load("zh-CN")
        assert passed and all(text(zh.gettext(c["title"])) in md for c in passed)
    else:
        assert md.startswith("# GPU node report") and HAN.search(md.split("## Findings", 1)[0]) is None


def test_hostile_values_stay_escaped_in_chinese(hostile_data: dict[str, Any]) -> None:
    from tests.reports.conftest import EVIL

    with i18n.use("zh-CN"):
        page = render_html(to_result(hostile_data))
        md = render_markdown(to_result(hostile_data))
    md_en = render_markdown(to_result(hostile_data))
    assert EVIL not in page and "<script>" not in page
    # the same escaping as in English: raw markup only inside code spans, everywhere else backslashed
    assert md.count("<script>") == md_en.count("<script>") and md.count("\\<script\\>") == md_en.count("\\<script\\>")
    assert md.count("\\<script\\>") > 0


def test_report_command_lang_option(tmp_path: Path, sick_data: dict[str, Any]) -> None:
    import json

    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(sick_data))
    out = tmp_path / "r.md"
    assert main(["report", "--from-json", str(saved), "-o", str(out), "--lang", "zh-CN"]) == 0
    assert out.read_text(encoding="utf-8").startswith("# GPU 节点报告：")
    out_json = tmp_path / "again.json"
    assert main(["report", "--from-json", str(saved), "-o", str(out_json), "--lang", "zh-CN"]) == 0
    assert HAN.search(out_json.read_text(encoding="utf-8")) is None  # the JSON is never translated


def test_chinese_pdf_without_cjk_font_says_how_to_get_one(tmp_path: Path, sick_data: dict[str, Any],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import reports.pdf

    monkeypatch.setattr(reports.pdf, "cjk_font_found", lambda: False)
    monkeypatch.setattr(reports.pdf, "render_pdf", lambda result, **options: b"%PDF-1.7 stub")
    saved = tmp_path / "r.json"
    saved.write_text(json.dumps(sick_data))
    assert main(["report", "--from-json", str(saved), "-o", str(tmp_path / "r.pdf"), "--lang", "zh-CN"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "apt-get install fonts-noto-cjk" in warnings[0]
    assert main(["report", "--from-json", str(saved), "-o", str(tmp_path / "e.pdf"), "--lang", "en"]) == 0
    assert "fonts-noto-cjk" not in capsys.readouterr().err  # English needs no CJK font


def test_chinese_pdf_embeds_a_cjk_font(sick_data: dict[str, Any]) -> None:
    pypdf = pytest.importorskip("pypdf")
    pytest.importorskip("weasyprint")
    from reports.pdf import cjk_font_found, render_pdf

    if not cjk_font_found():
        pytest.skip("no CJK font installed (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
    with i18n.use("zh-CN"):
        pdf = render_pdf(to_result(sick_data))
    reader = pypdf.PdfReader(io.BytesIO(pdf))
    fonts: set[str] = set()
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            fonts.add(str(font.get_object().get("/BaseFont")).partition("+")[2])
    assert any("CJK" in f for f in fonts), fonts
    if _fontconfig_knows("Noto Sans CJK SC"):  # the edition's one family: text, headings, topology labels, margins
        assert {f for f in fonts if "Mono" not in f} == {"Noto-Sans-CJK-SC", "Noto-Sans-CJK-SC-Bold"}, fonts
    first = " ".join((reader.pages[0].extract_text() or "").split())
    assert "摘要" in first and "gpu-node-13" in first
    last = " ".join((reader.pages[-1].extract_text() or "").split())
    assert f"第 {len(reader.pages)} 页，共 {len(reader.pages)} 页" in last


def _fontconfig_knows(family: str) -> bool:
    import shutil
    import subprocess

    fc_list = shutil.which("fc-list")
    return bool(fc_list and subprocess.run([fc_list, family, "family"], capture_output=True, text=True,
                                           check=False).stdout.strip())


def _chrome_texts(page: str) -> list[str]:
    """Text of the report's own headings, table headers and chips (never host data)."""
    from html.parser import HTMLParser

    out: list[str] = []

    class P(HTMLParser):
        depth = 0
        buf: list[str] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            cls = dict(attrs).get("class") or ""
            if tag in ("h2", "h4", "th") or (tag == "li" and "chip" in cls):
                self.depth, self.buf = 1, []

        def handle_endtag(self, tag: str) -> None:
            if self.depth and tag in ("h2", "h4", "th", "li"):
                out.append(" ".join("".join(self.buf).split()))
                self.depth = 0

        def handle_data(self, data: str) -> None:
            if self.depth:
                self.buf.append(data)

    P().feed(page)
    return out


def test_no_untranslated_heading_or_label_in_the_chinese_html(sick_data: dict[str, Any]) -> None:
    """Catches a heading or label added to the template without _(): every one must carry Chinese."""
    with i18n.use("zh-CN"):
        page = render_html(to_result(sick_data))
    texts = _chrome_texts(page)
    assert len(texts) > 30
    allowed = {"#", "NUMA", "RDMA", "CPU", "GPU"}  # terms Chinese writes in Latin letters too
    english = [t for t in texts if t not in allowed and not HAN.search(t)]
    assert english == []


def test_no_untranslated_heading_or_label_in_the_chinese_markdown(sick_data: dict[str, Any]) -> None:
    with i18n.use("zh-CN"):
        md = render_markdown(to_result(sick_data))
    labels = re.findall(r"^(?:#{1,2} .*|\*\*[^*]+\*\*|- \*\*[^*]+:\*\*)", md, re.M)
    assert len(labels) > 10
    assert [label for label in labels if not HAN.search(label)] == []
