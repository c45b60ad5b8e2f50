"""Markdown report: summary, ranked findings, fences a value cannot break out of."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from doctor.findings import cmd
from doctor.result_io import to_result
from reports.markdown import code, fence, render_markdown
from tests.reports.conftest import EVIL


def test_sick_markdown_lists_findings_in_rank_order(sick_data: dict[str, Any]) -> None:
    md = render_markdown(to_result(sick_data))
    ranks = [int(m) for m in re.findall(r"^### (\d+)\. ", md, re.MULTILINE)]
    shown = [f["rank"] for f in sick_data["findings"] if f["severity"] not in ("pass", "unknown")]
    assert ranks == shown
    assert md.startswith("# GPU node report: gpu-node-13")
    assert "## Summary" in md and "at stake" not in md
    assert "(basis: a published measurement: vLLM TP4 decode step 203 ms eager" in md


def test_fence_cannot_be_closed_by_content() -> None:
    block = fence(["echo '```'", "echo '````'"])
    opening = block.splitlines()[0]
    ticks = len(opening) - len(opening.lstrip("`"))
    assert ticks == 5
    inner = block.splitlines()[1:-1]
    assert all(not line.startswith("`" * ticks) for line in inner)
    assert code("a`b") == "``a`b``"


def test_hostile_values_stay_text(hostile_data: dict[str, Any]) -> None:
    md = render_markdown(to_result(hostile_data))
    expected = cmd("ip", "link", "set", "dev", EVIL, "mtu", "9000")
    assert expected in md.splitlines()  # verbatim on its own line inside a fenced block
    markdown_it = pytest.importorskip("markdown_it")
    # rendered by a CommonMark renderer that passes raw HTML through: still no live tag
    page = markdown_it.MarkdownIt("commonmark", {"html": True}).render(md)
    assert "<script>" not in page and "<img" not in page
    assert 'href="javascript:' not in page
    assert expected in html.unescape(page)  # the command survives as code text
