"""The summary every report opens with: one line per finding at low or above (severity, subject, title,
who acts), by severity and, within one, the hardware's and firmware's first, then the operating system's,
then the application's; the unevaluated checks named after it; the details below. (The PDF's page 1:
tests/reports/test_pdf.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from doctor.findings import actor_order, severity_order
from doctor.i18n import use as use_language
from doctor.result_io import to_result
from reports.html import render_html
from reports.markdown import render_markdown
from reports.text import render_text

PROBLEMS = ("critical", "high", "medium", "low")
LABELS = {"en": {"hardware": "hardware/firmware", "os": "operating system", "application": "application"},
          "zh-CN": {"hardware": "硬件/固件", "os": "操作系统", "application": "应用"}}


def _problems(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["severity"] in PROBLEMS]


def _summary_order(data: dict[str, Any]) -> list[int]:
    """The ranks of the problems in the order the summary must list them."""
    ordered = sorted(_problems(data), key=lambda f: (severity_order(f["severity"]), actor_order(f["acts"]), f["rank"]))
    return [f["rank"] for f in ordered]


def test_the_sick_node_has_findings_of_every_owner_in_one_severity(sick_data: dict[str, Any]) -> None:
    """What the ordering tests below rest on: a severity holding findings of different owners whose impact
    alone would order them otherwise, so listing them hardware first is a real reordering; the ranking
    is that order, so the summary and the details number the findings alike (1 to N, no jump)."""
    high = [f for f in sick_data["findings"] if f["severity"] == "high"]
    assert {f["acts"] for f in high} == {"hardware", "os", "application"}
    by_impact = sorted(_problems(sick_data), key=lambda f: (severity_order(f["severity"]), -f["impact"]["score"]))
    assert [f["rank"] for f in by_impact] != _summary_order(sick_data)
    assert _summary_order(sick_data) == sorted(_summary_order(sick_data))


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_html_summary_is_one_row_per_finding_hardware_first(sick_data: dict[str, Any], lang: str) -> None:
    with use_language(lang):
        page = render_html(to_result(sick_data))
    table = page[page.index('<table class="first-page">'):page.index("</table>", page.index('<table class="first-page">'))]
    rows = re.findall(r'<tr class="acts-(\w+)"><td><a href="#finding-(\d+)">', table)
    assert [int(rank) for _acts, rank in rows] == _summary_order(sick_data)
    by_rank = {f["rank"]: f for f in sick_data["findings"]}
    for acts, rank in rows:
        assert acts == by_rank[int(rank)]["acts"]
        assert f'id="finding-{rank}"' in page  # each line leads to its details
    for acts, label in LABELS[lang].items():
        assert table.count(f"<td>{label}</td>") == sum(1 for f in _problems(sick_data) if f["acts"] == acts)
    summary = page[page.index('id="summary"'):page.index('id="findings"')]
    for f in (f for f in sick_data["findings"] if f["severity"] == "unknown"):
        assert f["check"] in summary


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_text_output_opens_with_one_line_per_finding(sick_data: dict[str, Any], lang: str) -> None:
    with use_language(lang):
        lines = render_text(to_result(sick_data)).splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"\s*#\d+ ", line))  # "#6": the finding's number
    problems = _problems(sick_data)
    block = lines[start:start + len(problems)]
    assert [int(line.split()[0][1:]) for line in block] == _summary_order(sick_data)
    by_rank = {f["rank"]: f for f in problems}
    for line in block:
        f = by_rank[int(line.split()[0][1:])]
        assert LABELS[lang][f["acts"]] in line and f["subject"] in line
    details = "\n".join(lines[start + len(problems):])
    assert all(f["check"] in details for f in problems)  # the details follow, in rank order as before
    assert all(f["check"] in lines[start + len(problems)] for f in sick_data["findings"] if f["severity"] == "unknown")


def test_markdown_summary_is_a_table_of_every_finding(sick_data: dict[str, Any]) -> None:
    text = render_markdown(to_result(sick_data))
    summary = text[text.index("## Summary"):text.index("## Findings")]
    rows = re.findall(r"^\| (\d+) \| \*\*(\w+)\*\* \|.*\| ([^|]+) \|$", summary, re.M)
    assert [int(rank) for rank, _sev, _acts in rows] == _summary_order(sick_data)
    by_rank = {f["rank"]: f for f in sick_data["findings"]}
    for rank, sev, acts in rows:
        assert sev == by_rank[int(rank)]["severity"].upper() and acts == LABELS["en"][by_rank[int(rank)]["acts"]]


def test_a_result_from_before_who_acts_still_renders(sick_data: dict[str, Any]) -> None:
    """A 2.1 result has no ``acts``: its findings are listed by severity and rank, marked ``?``."""
    old = {**sick_data, "schema_version": "2.1",
           "findings": [{k: v for k, v in f.items() if k != "acts"} for f in sick_data["findings"]]}
    result = to_result(old)
    assert all(f.acts is None for f in result.findings)
    page = render_html(result)
    table = page[page.index('<table class="first-page">'):]
    ranks = [int(r) for r in re.findall(r'<tr class="acts-unknown"><td><a href="#finding-(\d+)">', table)]
    assert ranks == [f["rank"] for f in _problems(sick_data)]
    assert "<td>?</td>" in table
