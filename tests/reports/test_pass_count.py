"""One count of passed checks in every output: text, JSON, Prometheus, HTML, Markdown, PDF and the TUI.

The count is :meth:`doctor.runner.Result.passed_checks`: checks whose status is ``pass``. A check that
reported the subjects that were fine as a pass finding and a problem on another subject did not pass
(the sick fixture has four: 15 PCIe paths fine and GPU 3 at x8), so the number of pass findings is
larger than the count; every output must show the count, none the number of pass findings.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from doctor.findings import PASS
from doctor.runner import Result
from reports.formats import FORMATS
from tests import helpers


@pytest.fixture(scope="module", params=["sick", "healthy"])
def result(request: pytest.FixtureRequest) -> Result:
    base = helpers.SICK if request.param == "sick" else helpers.HEALTHY
    if not base.is_dir():
        pytest.skip(f"{base} is not generated")
    return helpers.run(helpers.facts(base=base))


def _expected(result: Result) -> int:
    n = sum(1 for c in result.checks if c["status"] == PASS)
    assert n == len(result.passed_checks()) == result.summary()[PASS]
    return n


def test_the_sick_fixture_has_checks_that_passed_for_some_subjects_only() -> None:
    """The case that made the counts differ is there (else the other tests prove nothing)."""
    result = helpers.run(helpers.facts(base=helpers.SICK))
    pass_findings = sum(1 for f in result.findings if f.severity == PASS)
    assert pass_findings > _expected(result)
    mixed = {f.check for f in result.findings if f.severity == PASS} - {c["id"] for c in result.passed_checks()}
    assert "pcie.link_downgrade" in mixed


def test_text_json_and_prometheus(result: Result) -> None:
    n = _expected(result)
    text = str(FORMATS["text"].render(result))
    assert re.search(r"; (\d+) checks passed, \d+ did not apply", text)[1] == str(n)  # type: ignore[index]
    assert len(re.search(r"Checked, nothing found: (.*)", text)[1].split(", ")) == n  # type: ignore[index]
    data = json.loads(str(FORMATS["json"].render(result)))
    assert data["summary"][PASS] == n
    assert Result.from_dict(data).summary()[PASS] == n  # a saved result reads back the same count
    prom = str(FORMATS["prometheus"].render(result))
    assert f'gnd_findings{{severity="pass"}} {n}\n' in prom
    assert prom.count('status="pass"} 1') == n


def test_html_and_markdown(result: Result) -> None:
    pytest.importorskip("jinja2")
    n = _expected(result)
    html = str(FORMATS["html"].render(result))
    assert re.search(r'<li class="chip plain">(\d+) checks passed</li>', html)[1] == str(n)  # type: ignore[index]
    md = str(FORMATS["md"].render(result))
    assert re.search(r"; (\d+) checks passed, \d+ could not be evaluated", md)[1] == str(n)  # type: ignore[index]
    passed_section = md.split("## Passed", 1)[1].split("\n## ", 1)[0]
    assert passed_section.count("\n- ") == n


def test_pdf(result: Result, tmp_path: Path) -> None:
    pytest.importorskip("weasyprint")
    if not shutil.which("pdftotext"):
        pytest.skip("pdftotext (poppler-utils) is not installed")
    n = _expected(result)
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(FORMATS["pdf"].render(result))  # type: ignore[arg-type]
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    assert re.findall(r"(\d+) checks passed", text) == [str(n)]


def test_tui_header(result: Result) -> None:
    pytest.importorskip("textual")
    from textual.widgets import Static

    from doctor.tui.app import DoctorApp

    n = _expected(result)
    seen: list[str] = []

    async def main() -> None:
        app = DoctorApp(lambda: result)
        async with app.run_test(size=(120, 30)) as pilot:
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            seen.append(str(app.screen_stack[0].query_one("#header", Static).render()))

    asyncio.run(main())
    assert re.search(r" (\d+) pass ", seen[0])[1] == str(n), seen[0]  # type: ignore[index]
