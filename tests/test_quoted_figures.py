"""Every figure a finding quotes from elsewhere names its source (issue 25): an impact whose basis cites a
published or measured figure carries the URL, and every output shows it beside the figure."""

from __future__ import annotations

import re

import pytest

from doctor.findings import Finding
from reports.markdown import render_markdown
from reports.text import render_text
from tests.helpers import HEALTHY, SICK, facts, run

#: a basis that quotes a figure measured elsewhere: a number with a unit, and words that say it was measured
QUOTED = re.compile(r"(?i)\b(published|measured|measurement|benchmark|field report)\b.*?\d+(\.\d+)?\s?"
                    r"(ms|µs|us|s|tok/s|GB/s|Gb/s|%|x)\b")


def _quoting(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if QUOTED.search(f.impact.basis) or QUOTED.search(f.detail)]


@pytest.mark.parametrize("base", [SICK, HEALTHY], ids=["sick", "healthy"])
def test_every_quoted_figure_names_its_source(base: object) -> None:
    result = run(facts(base=base))  # type: ignore[arg-type]
    quoting = _quoting(result.findings)
    if base == SICK:
        assert quoting, "the sick fixture quotes the published CUDA Graphs measurement"
    text, md = render_text(result), render_markdown(result)
    for f in quoting:
        assert f.impact.source.startswith("https://"), (f.check, f.impact.basis)
        assert f.impact.source in text and f.impact.source in md, f.check
        assert f.impact.source in f.impact.line


def test_the_source_survives_a_saved_result() -> None:
    from doctor.result_io import to_result

    result = run(facts(base=SICK))
    [quoted] = [f for f in result.findings if f.impact.source][:1]
    again = to_result(result.to_dict())
    assert {f.impact.source for f in again.findings if f.check == quoted.check} >= {quoted.impact.source}
