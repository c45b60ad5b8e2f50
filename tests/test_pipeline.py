"""One pipeline: every command gets its result from doctor.pipeline.analyse, the baseline is a check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.baseline_deviation import CHECK_ID
from doctor import PLAIN
from doctor.cli import main
from doctor.errors import DoctorError
from doctor.fleet.baseline import write_baseline
from doctor.pipeline import analyse, open_facts
from tests.helpers import HEALTHY, SICK


@pytest.fixture(scope="module")
def good_baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipeline") / "expected.toml"
    path.write_text(write_baseline(open_facts(str(HEALTHY)), "healthy fixture"))
    return path


def _ids(result: object) -> list[str]:
    return [c["id"] for c in result.checks]  # type: ignore[attr-defined]


def test_baseline_check_runs_only_when_a_baseline_is_given(good_baseline: Path) -> None:
    plain = analyse(str(SICK))
    assert CHECK_ID not in _ids(plain) and not [f for f in plain.findings if f.check == CHECK_ID]
    judged = analyse(str(SICK), baseline=str(good_baseline))
    assert _ids(judged)[-1] == CHECK_ID  # listed after the others, as before it was a check
    deviations = [f for f in judged.findings if f.check == CHECK_ID]
    assert deviations and all(any(e.source == "baseline" for e in f.evidence) for f in deviations)
    assert [f.rank for f in judged.findings] == list(range(1, len(judged.findings) + 1))


def test_baseline_runs_whatever_only_selects(good_baseline: Path) -> None:
    result = analyse(str(SICK), only=["gpu.inventory"], baseline=str(good_baseline))
    assert _ids(result) == ["gpu.inventory", CHECK_ID]
    assert [f.severity for f in result.findings if f.check == CHECK_ID] != ["pass"]
    matching = analyse(str(HEALTHY), only=["gpu.inventory"], baseline=str(good_baseline))
    assert [f.severity for f in matching.findings if f.check == CHECK_ID] == ["pass"]


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(DoctorError, match="no such file"):
        analyse(str(tmp_path / "missing"))
    with pytest.raises(DoctorError, match="none.toml: no such file"):
        analyse(str(HEALTHY), baseline=str(tmp_path / "none.toml"))
    with pytest.raises(DoctorError, match="no check matches"):
        analyse(str(HEALTHY), only=["nothing.here"])


def test_check_and_report_json_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SICK), "--format", "json"]) == 1
    checked = json.loads(capsys.readouterr().out)
    out = tmp_path / "r.json"
    assert main(["report", str(SICK), "-o", str(out)]) == 0  # written; no --fail-on
    reported = json.loads(out.read_text())
    strip = ("duration_s", "generated_at")
    assert {k: v for k, v in checked.items() if k not in strip and k != "checks"} == \
        {k: v for k, v in reported.items() if k not in strip and k != "checks"}


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_a_full_live_run_prefetches_its_commands_and_waits_for_them() -> None:
    from doctor.pipeline import PREFETCH, analyse
    from doctor.sources import LiveSource

    src = LiveSource("/")
    started: list[str] = []
    real = src.prefetch

    def spy(names: tuple[str, ...]) -> None:
        started.extend(names)
        real(names)

    src.prefetch = spy  # type: ignore[method-assign,assignment]
    analyse(src)
    assert started == list(PREFETCH) and src._started == {}  # every child read, none left running
    assert all(name in src._commands for name in PREFETCH)
    only = LiveSource("/")
    only.prefetch = lambda names: started.append("again")  # type: ignore[method-assign,assignment,misc]
    analyse(only, only=["kernel.thp"])
    assert "again" not in started  # a partial run starts nothing it may not read


def test_a_bad_deploy_file_still_reaps_the_prefetched_commands(tmp_path: Path) -> None:
    from doctor.sources import LiveSource

    src = LiveSource("/")
    with pytest.raises(DoctorError):
        analyse(src, deploy=[str(tmp_path / "missing.service")])
    assert src._started == {}
