"""HTML report: self-contained, every finding in rank order, hostile host data inert."""

from __future__ import annotations

import re
import shlex
from html.parser import HTMLParser
from typing import Any

import pytest
from markupsafe import escape

from doctor.findings import cmd
from doctor.result_io import to_result
from reports.html import render_html
from tests.reports.conftest import EVIL


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ranks: list[int] = []
        self.pre: list[str] = []
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "article" and a.get("data-rank"):
            self.ranks.append(int(a["data-rank"] or 0))
        if tag == "pre":
            self._in_pre = True
            self.pre.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        if self._in_pre:
            self.pre[-1] += data


def _joined(block: str) -> str:
    """A command block with its `` \\``-continued lines joined back (the layout of reports/view.py shell_lines)."""
    return re.sub(r" \\\n {4}", " ", block)


def _parse(text: str) -> _Collect:
    p = _Collect()
    p.feed(text)
    p.close()
    return p


def test_sick_report_holds_every_finding_in_rank_order(sick_data: dict[str, Any]) -> None:
    page = render_html(to_result(sick_data))
    parsed = _parse(page)
    shown = [f for f in sick_data["findings"] if f["severity"] not in ("pass", "unknown")]
    assert shown, "the sick fixture must produce findings"
    assert parsed.ranks == [f["rank"] for f in shown]
    for f in shown:
        assert str(escape(f["title"])) in page
    top = shown[0]
    # the top finding's runtime fix is in a copyable <pre> block
    if top["fix"]["runtime"]:
        assert any("\n".join(top["fix"]["runtime"]) == _joined(block) for block in parsed.pre)


def test_report_is_self_contained(sick_data: dict[str, Any]) -> None:
    page = render_html(to_result(sick_data))
    parsed = _parse(page)
    names = {t for t, _a in parsed.tags}
    assert "script" not in names and "img" not in names and "link" not in names and "iframe" not in names
    assert "svg" in names  # the topology picture is inline
    for tag, attrs in parsed.tags:
        if tag != "a":  # hyperlinks to references are fine; nothing loads by itself
            assert not any(k in ("src", "href") for k in attrs), (tag, attrs)
    assert "@import" not in page and "url(" not in page


def test_header_and_summary(sick_data: dict[str, Any]) -> None:
    page = render_html(to_result(sick_data))
    assert "gpu-node-13" in page  # host
    assert "snapshot" in page and sick_data["tool"]["version"] in page
    assert "at stake" not in page  # no combined figure without a basis ...
    assert "Basis: PCIe bandwidth = transfer rate x lanes" in page  # ... each impact says where it comes from
    assert re.search(r"\d+ critical|\d+ high", page)


def test_topology_marks_the_degraded_gpu_link(sick_data: dict[str, Any]) -> None:
    page = render_html(to_result(sick_data))
    svg = page[page.index("<svg"): page.index("</svg>")]
    # GPU 3 runs x8 of x16 in the sick fixture: drawn with the degraded marker and its numbers
    assert "\u25bc 32 GT/s x8 (max x16)" in svg
    assert "NUMA node 0" in svg and "NUMA node 1" in svg


def test_healthy_report_says_no_degraded_link(healthy_data: dict[str, Any]) -> None:
    page = render_html(to_result(healthy_data))
    svg = page[page.index("<svg"): page.index("</svg>")]
    assert "\u25bc" not in svg.split("Labels:")[0].replace("\u25bc degraded", "")


def test_hostile_values_render_inert_and_quoted(hostile_data: dict[str, Any]) -> None:
    page = render_html(to_result(hostile_data))
    assert "<script>" not in page
    assert "<img" not in page
    parsed = _parse(page)
    assert not any(t in ("script", "img") for t, _a in parsed.tags)
    assert not any(v and v.startswith("javascript:") for _t, a in parsed.tags for v in a.values())
    # the command is shown exactly as the check quoted it: one argv word holding the whole value
    expected = cmd("ip", "link", "set", "dev", EVIL, "mtu", "9000")
    block = next(b for b in parsed.pre if "ip link set" in b)
    assert expected in _joined(block).splitlines()
    assert shlex.split(expected)[4] == EVIL


def test_report_renders_alike_from_jinjas_bytecode_cache(sick_data: dict[str, Any], hostile_data: dict[str, Any],
                                                         monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """The compiled template is kept in the user's cache folder ($XDG_CACHE_HOME/gnd); pages rendered from it
    equal those rendered with no cache at all."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # each data set, language and switch once (the template is one: every variant reads the same cache entry)
    pages = [(sick_data, "en", True, True), (sick_data, "zh-CN", False, False),
             (hostile_data, "zh-CN", True, False), (hostile_data, "en", False, True)]
    first = [_render(*page) for page in pages]
    cached = list((tmp_path / "cache" / "gnd" / "jinja").iterdir())
    assert cached and all(entry.stat().st_mode & 0o077 == 0 for entry in cached)
    assert [_render(*page) for page in pages] == first
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))  # no folder can be made there
    assert [_render(*page) for page in pages] == first
    assert "<script>" not in "".join(first) and "&lt;script&gt;" in first[-1]


def _render(data: dict[str, Any], lang: str, links: bool, style: bool) -> str:
    from doctor import i18n
    from reports.html import render_html_view
    from reports.view import build_view

    with i18n.use(lang):
        return render_html_view(build_view(to_result(data)), links=links, style=style)


@pytest.mark.parametrize("damage", ["file in the way", "shared folder", "damaged entry", "read-only folder"])
def test_unusable_cache_never_fails_the_report(damage: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                              healthy_data: dict[str, Any]) -> None:
    """A cache folder that cannot be made, is writable by others, is read-only, or holds a damaged entry: the
    report is rendered as without a cache (and a shared folder's entries are never read)."""
    import os

    from reports import html

    expected = html.render_html(to_result(healthy_data))
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    folder = cache / "gnd" / "jinja"
    if damage == "file in the way":
        cache.mkdir()
        (cache / "gnd").write_text("not a folder")
    else:
        html.render_html(to_result(healthy_data))  # writes the entry
        entry = next(folder.iterdir())
        if damage == "shared folder":
            entry.write_bytes(entry.read_bytes().replace(b"gpu-node-doctor", b"SHARED-COPY-ZZ"))
            folder.chmod(0o777)
            assert html._bytecode_cache() is None
        elif damage == "damaged entry":
            entry.write_bytes(entry.read_bytes()[:40] + b"\xff" * 64)
        else:
            for old in folder.iterdir():
                old.unlink()
            folder.chmod(0o500)
    try:
        assert html.render_html(to_result(healthy_data)) == expected
    finally:
        os.chmod(folder, 0o700) if folder.is_dir() else None
