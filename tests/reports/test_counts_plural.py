"""The host line counts GPUs, NICs and NUMA nodes in the grammatical number of the count (``1 NUMA node``,
``0 NICs``), in text, Markdown and HTML, and in zh-CN with the measure word."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from doctor.i18n import use
from doctor.result_io import to_result
from reports.markdown import render_markdown
from reports.text import render_text


def _with_counts(data: dict[str, Any], nics: int, numa: int) -> dict[str, Any]:
    data = copy.deepcopy(data)
    inv = data["inventory"]
    inv["nics"] = (inv.get("nics") or [])[:nics]
    inv["numa"] = (inv.get("numa") or [])[:numa]
    assert len(inv["nics"]) == nics and len(inv["numa"]) == numa
    return data


@pytest.mark.parametrize(("nics", "numa", "want"), [(1, 1, "1 NIC; 1 NUMA node;"), (0, 2, "0 NICs; 2 NUMA nodes;")])
def test_host_line_counts_agree_with_their_number(sick_data: dict[str, Any], nics: int, numa: int, want: str) -> None:
    result = to_result(_with_counts(sick_data, nics, numa))
    assert want in render_text(result)
    assert want in render_markdown(result)


def test_html_and_zh_cn_counts(sick_data: dict[str, Any]) -> None:
    from reports.html import render_html

    result = to_result(_with_counts(sick_data, 1, 1))
    assert "1 NIC · 1 NUMA node" in " ".join(render_html(result).split())
    with use("zh-CN"):
        assert "1 块网卡；1 个 NUMA 节点" in render_text(result)
