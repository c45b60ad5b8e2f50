"""``gnd check --deadline``: one bound for the whole run; what did not finish is unknown naming it, and the
exit status speaks for what did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from doctor.deadline import Deadline
from doctor.findings import HIGH, PASS, UNKNOWN, Finding
from doctor.output import exit_code
from doctor.pipeline import open_facts
from doctor.registry import check
from doctor.runner import run_checks
from doctor.sources import LiveSource
from tests.helpers import HEALTHY

ROOT = Path(__file__).resolve().parents[1]


@check("t.found", "finds a fault at once", "pcie", acts="hardware")
def _found(facts: object) -> Iterable[Finding]:
    yield Finding(HIGH, "GPU 0", "link at x8 of x16")


@check("t.slow", "spins past the deadline", "pcie", acts="hardware")
def _slow(facts: object) -> Iterable[Finding]:
    end = time.monotonic() + 30
    while time.monotonic() < end:  # pure computation: only the timer can stop it
        pass
    yield Finding(PASS, "node", "never reached")


@check("t.later", "would have passed", "numa", acts="hardware")
def _later(facts: object) -> Iterable[Finding]:
    yield Finding(PASS, "node", "fine")


def test_a_check_past_the_deadline_is_interrupted_and_the_rest_are_not_run() -> None:
    facts = open_facts(str(HEALTHY))
    start = time.monotonic()
    result = run_checks(facts, checks=[_found, _slow, _later], deadline=Deadline.after(0.5))
    assert time.monotonic() - start < 3
    by_check = {f.check: f for f in result.findings}
    assert by_check["t.found"].severity == HIGH  # what finished stays as found
    assert by_check["t.slow"].severity == UNKNOWN and "did not finish before the --deadline of 0.5 s" in \
        by_check["t.slow"].title
    assert by_check["t.later"].severity == UNKNOWN and "not run" in by_check["t.later"].title
    assert [c["status"] for c in result.checks] == ["high", "unknown", "unknown"]
    assert exit_code(result, "high") == 1  # found in what did finish
    assert exit_code(result, "critical") == 0  # the unknowns alone never fail the run


def test_without_a_deadline_nothing_changes() -> None:
    facts = open_facts(str(HEALTHY))
    result = run_checks(facts, checks=[_found, _later])
    assert [f.severity for f in result.findings if f.check == "t.later"] == [PASS]


def _hung_bin(tmp_path: Path) -> Path:
    """A PATH folder whose dmesg and lspci hang (as a wedged driver makes them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("dmesg", "lspci"):
        tool = bin_dir / name
        tool.write_text("#!/bin/sh\nexec sleep 60\n")
        tool.chmod(0o755)
    return bin_dir


def test_a_hung_command_is_stopped_at_the_deadline_and_named(tmp_path: Path) -> None:
    os.environ["PATH"] = f"{_hung_bin(tmp_path)}:{os.environ['PATH']}"
    try:
        src = LiveSource(str(HEALTHY), run_commands=True)
        src.deadline = Deadline.after(0.5)
        start = time.monotonic()
        out = src.command("dmesg")
        assert time.monotonic() - start < 3
        assert out.text is None and out.by_deadline and "stopped, the --deadline of 0.5 s" in (out.reason or "")
        again = src.command("lspci_vvv")
        assert again.by_deadline and "not run" in (again.reason or "")  # the deadline has passed: not started
        assert set(src.cut) == {"dmesg", "lspci_vvv"}
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(":", 1)[1]


@check("t.reads_dmesg", "reads dmesg and says pass", "gpu", acts="hardware")
def _reads_dmesg(facts: object) -> Iterable[Finding]:
    facts.source.command("dmesg")  # type: ignore[attr-defined]
    yield Finding(PASS, "node", "no Xid")


def test_a_check_that_read_a_cut_command_cannot_pass(tmp_path: Path) -> None:
    os.environ["PATH"] = f"{_hung_bin(tmp_path)}:{os.environ['PATH']}"
    try:
        facts = open_facts(LiveSource(str(HEALTHY), run_commands=True))
        result = run_checks(facts, checks=[_reads_dmesg], deadline=Deadline.after(0.5))
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(":", 1)[1]
    titles = {(f.check, f.severity): f.title for f in result.findings}
    assert (("t.reads_dmesg", PASS)) not in titles
    assert "dmesg did not finish" in titles[("t.reads_dmesg", UNKNOWN)]
    assert titles[("doctor.deadline", UNKNOWN)] == "dmesg: did not finish before the deadline"


def test_gnd_check_live_with_hung_commands_ends_at_its_deadline(tmp_path: Path) -> None:
    """The command line end to end on this host, its dmesg and lspci hanging: done in about the deadline,
    the hung commands named, exit 0 or 1 from what was seen (never 2)."""
    env = {**os.environ, "PATH": f"{_hung_bin(tmp_path)}:{os.environ['PATH']}"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "doctor", "check", "--deadline", "2", "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=60)
    elapsed = time.monotonic() - start
    assert proc.returncode in (0, 1), proc.stderr
    assert elapsed < 2 + 3, elapsed
    data = json.loads(proc.stdout)
    cut = {f["title"] for f in data["findings"] if f["check"] == "doctor.deadline"}
    assert {"dmesg: did not finish before the deadline", "lspci -nnvvv: did not finish before the deadline"} <= cut


@pytest.mark.parametrize("bad", ["0", "-5", "soon", "nan", "inf"])
def test_a_bad_deadline_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    from doctor.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["check", str(HEALTHY), "--deadline", bad])
    assert exc.value.code == 2
    assert "--deadline" in capsys.readouterr().err
