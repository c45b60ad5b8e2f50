"""The numbers a reader sees never skip (issue 25): findings are numbered in the order every output lists
them, problems, then information, then what could not be evaluated."""

from __future__ import annotations

import re
from typing import Any

import pytest

from doctor.result_io import to_result
from reports.markdown import render_markdown
from reports.text import render_text


@pytest.mark.parametrize("data", ["sick_data", "healthy_data"])
def test_text_and_markdown_number_findings_one_to_n(data: str, request: pytest.FixtureRequest) -> None:
    result = to_result(request.getfixturevalue(data))
    shown = [f for f in result.findings if f.severity != "pass"]
    assert {f.severity for f in shown} >= ({"info", "unknown"} if data == "sick_data" else {"info"})
    text = render_text(result)
    numbers = [int(m) for m in re.findall(r"^ {0,2}(\d+) [A-Za-z]", text.split("\n", 2)[2], re.M)]
    assert numbers == list(range(1, len(shown) + 1)), numbers
    md = render_markdown(result)
    headed = [int(n) for n in re.findall(r"^### (\d+)\. ", md, re.M)]
    listed = [f for f in shown if f.severity != "unknown"]  # Markdown tables what could not be evaluated
    assert headed == list(range(1, len(listed) + 1)), headed


def test_information_is_numbered_before_what_could_not_be_evaluated(sick_data: dict[str, Any]) -> None:
    ranks = {f.severity: f.rank for f in to_result(sick_data).findings}
    assert ranks["low"] < ranks["info"] < ranks["unknown"]
