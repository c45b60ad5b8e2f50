"""One finding per cause: 2,000 eager servers are one high finding, and renderers refuse hostile sizes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from doctor import cli, result_io
from doctor.findings import HIGH, Finding, Fix
from doctor.grouping import MAX_SEPARATE, group_findings, subject_text
from doctor.result_io import to_result
from reports import view as view_mod
from reports.markdown import render_markdown
from tests.helpers import SICK, facts, run
from tests.hostile.work import LINEAR, growth

STATUS = "Name:\tpython3\nPid:\t{pid}\nPPid:\t1\nCpus_allowed_list:\t0-95\n"


def _servers(n: int, first: int = 20000) -> dict[str, bytes | str | None]:
    changes: dict[str, bytes | str | None] = {}
    for pid in range(first, first + n):
        argv = ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m", "--enforce-eager"]
        changes[f"proc/{pid}/cmdline"] = b"".join(a.encode() + b"\0" for a in argv)
        changes[f"proc/{pid}/status"] = STATUS.format(pid=pid)
    return changes


def _eager(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.check == "runtime.cuda_graphs" and f.severity == HIGH]


def test_two_thousand_eager_servers_are_one_finding() -> None:
    # linear in the servers (counted work at 500, 1,000 and 2,000 of them; see tests/hostile/work.py)
    ratio, result = growth(lambda n: run(facts(_servers(n), base=SICK)), 500)
    assert ratio < LINEAR, f"the work grows {ratio:.1f}x from 1,000 to 2,000 servers against 500 to 1,000"
    eager = _eager(result.findings)
    assert len(eager) == 2, [f.subject for f in eager][:5]  # the fixture's unit-started server has its own fix
    f = next(f for f in eager if f.subject != "4242")
    assert f.subject.startswith("2000 processes: vllm api_server (pid 20000), ")
    assert "+1995 more" in f.subject and len(f.subject) < 260
    assert "pid:20000" in f.related and "pid:21999" in f.related
    assert len(f.evidence) <= 24
    assert len(result.findings) < 60


def test_a_few_servers_keep_one_finding_each() -> None:
    eager = _eager(run(facts(_servers(MAX_SEPARATE - 1), base=SICK)).findings)
    assert len(eager) == MAX_SEPARATE and all(f.subject_id.startswith("pid:") for f in eager)


def _finding(subject: str, fix: Fix, title: str = "t", severity: str = HIGH) -> Finding:
    return Finding(severity, subject, title, fix=fix, check="x.y", detail=f"d {subject}")


def test_only_same_check_severity_title_and_fix_merge() -> None:
    a, b = Fix.from_text(runtime=("echo a",)), Fix.from_text(runtime=("echo b",))
    many = [_finding(f"0000:{i:02x}:00.0", a) for i in range(MAX_SEPARATE + 2)]
    other_fix = [_finding(f"0000:{i:02x}:00.1", b) for i in range(3)]
    other_title = [_finding(f"0000:{i:02x}:00.2", a, title="u") for i in range(3)]
    out = group_findings([*many, *other_fix, *other_title])
    assert len(out) == 1 + 3 + 3
    merged = out[0]
    assert merged.subject.startswith(f"{MAX_SEPARATE + 2} devices: 0000:00:00.0")
    assert "details differ" in merged.detail and merged.fix == a


def test_subject_text_is_bounded() -> None:
    text = subject_text([str(i) for i in range(5000)], {i: "x" * 300 for i in range(5000)})
    assert text.startswith("5000 processes: ") and text.endswith("+4995 more") and len(text) < 230


# --------------------------------------------------------------------------------------------------
# what a renderer accepts from a saved result
# --------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("saved") / "r.json"
    cli.main(["check", str(SICK), "--format", "json", "-o", str(out)])
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_report_of_a_huge_hostile_result_is_bounded(saved: dict[str, Any], tmp_path: Path) -> None:
    base = saved["findings"][0]
    out = tmp_path / "r.md"

    def report(n: int) -> str:
        flood = [{**base, "subject": f"s{i}", "severity": "info" if i % 2 else "high",
                  "evidence": [{"source": "x", "value": "v" * 10}] * 60, "detail": "d" * 5000}
                 for i in range(n)]
        hostile = tmp_path / "hostile.json"
        hostile.write_text(json.dumps({**saved, "findings": flood}))
        assert cli.main(["report", "--from-json", str(hostile), "-o", str(out), "--fail-on", "critical"]) == 0
        return out.read_text()

    # linear in the findings read (counted work at 200, 400 and 800; see tests/hostile/work.py)
    ratio, md = growth(report, 200)
    assert ratio < LINEAR, f"the work grows {ratio:.1f}x from 400 to 800 findings against 200 to 400"
    assert f"{800 - view_mod.MAX_FINDINGS} more findings are not shown" in md
    assert md.count("### ") == view_mod.MAX_FINDINGS
    assert "**HIGH**" in md and md.count("d" * (view_mod.MAX_FIELD + 1)) == 0
    assert len(md) < 40 * 1024 * 1024


def test_oversized_result_is_one_line_error(saved: dict[str, Any], tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(result_io, "MAX_JSON_BYTES", 4096)
    big = tmp_path / "big.json"
    big.write_text(json.dumps(saved))
    assert cli.main(["report", "--from-json", str(big), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "larger than the 4096 bytes limit" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


def test_fifo_result_is_refused_without_hanging(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    assert cli.main(["report", "--from-json", str(fifo), "-o", str(tmp_path / "r.md")]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_view_shows_problems_first_when_cut(saved: dict[str, Any]) -> None:
    base = saved["findings"][0]
    infos = [{**base, "severity": "info", "subject": f"i{i}"} for i in range(view_mod.MAX_FINDINGS)]
    problem = {**base, "severity": "critical", "subject": "the-real-one"}
    md = render_markdown(to_result({**saved, "findings": [*infos, problem]}))
    assert "the-real-one" in md and "1 more findings are not shown" in md
