"""The command line: exit codes, JSON contract, bad sources, and what `gnd check` imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from doctor.cli import main

SCHEMA = json.loads((Path(__file__).parent.parent / "doctor/schema/result.schema.json").read_text())


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert "gpu-node-doctor" in capsys.readouterr().out


def test_live_check_on_this_host_is_honest(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, SCHEMA)
    assert code in (0, 1)
    assert data["source"]["kind"] == "live"
    inventory = [f for f in data["findings"] if f["check"] == "gpu.inventory"]
    if not data["inventory"]["gpus"]:
        assert any(f["title"] == "no NVIDIA GPU found" for f in inventory)
    assert {c["id"] for c in data["checks"]} >= {"net.socket_buffers", "numa.kernel_policy"}


@pytest.mark.parametrize("make", [
    lambda p: str(p / "does-not-exist"),
    lambda p: (p / "x.txt").write_text("not a snapshot") and str(p / "x.txt"),
    lambda p: (p / "t.tar.gz").write_bytes(b"\x1f\x8b\x08\x00garbage") and str(p / "t.tar.gz"),
])
def test_bad_source_exits_2_with_one_line(tmp_path: Path, make, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", make(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("gnd: error: ") and err.count("\n") == 1
    assert "Traceback" not in err


def test_gnd_source_shorthand_and_checks_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["checks"]) == 0
    listing = capsys.readouterr().out
    assert "net.socket_buffers" in listing
    lines = {line.split()[0]: line for line in listing.splitlines() if line.strip()}
    assert "hardware/firmware" in lines["pcie.link_downgrade"] and "operating system" in lines["net.socket_buffers"]
    assert "application" in lines["runtime.cuda_graphs"]  # who acts on each check's findings


def test_check_path_never_imports_textual_or_weasyprint(tmp_path: Path) -> None:
    out_file = tmp_path / "r.json"  # a file: -o refuses a device such as /dev/null
    code = (f"import sys; from doctor.cli import main; rc = main(['check', '--format', 'json', '-o', {str(out_file)!r}]);"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'weasyprint', 'jinja2', 'rich')];"
            "print(','.join(bad)); sys.exit(0 if rc in (0, 1) else rc)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "" and out_file.stat().st_size > 0


def test_no_arguments_in_a_pipe_runs_check_not_the_tui() -> None:
    out = subprocess.run([sys.executable, "-m", "doctor"], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode in (0, 1)
    assert "Summary:" in out.stdout


SICK = Path(__file__).parent.parent / "fixtures" / "hgx-h100-sick"


def test_executable_writes_all_output_and_the_run_s_exit_status_before_its_quick_exit(
        capsys: pytest.CaptureFixture[str]) -> None:
    want = main(["check", str(SICK), "--format", "json"])
    expected = json.loads(capsys.readouterr().out)
    out = subprocess.run([sys.executable, "-m", "doctor", "check", str(SICK), "--format", "json"],
                         capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == want == 1  # the sick node has findings at --fail-on high
    got = json.loads(out.stdout)  # complete: the buffered tail was flushed before the process left
    assert [f["check"] for f in got["findings"]] == [f["check"] for f in expected["findings"]]
    assert out.stderr == b""


def test_executable_keeps_its_exit_status_and_stays_quiet_when_the_reader_goes_away() -> None:
    reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    out = subprocess.run([sys.executable, "-m", "doctor", "check", str(SICK), "--format", "json"],
                         stdout=reader.stdin, stderr=subprocess.PIPE, timeout=60, stdin=subprocess.DEVNULL)
    reader.stdin.close()
    reader.wait(timeout=10)
    assert out.returncode in (0, 1)  # not 120, Python's status for a failed flush at shutdown
    assert b"Exception ignored" not in out.stderr and b"Traceback" not in out.stderr


@pytest.mark.parametrize("argv", [["check", "fixtures/hgx-h100-sick"], ["checks"],
                                  ["check", "fixtures/hgx-h100-sick", "--format", "json"],
                                  ["fleet", "fixtures/hgx-h100-sick", "fixtures/hgx-h100-healthy"]])
def test_a_closed_stdout_ends_the_run_in_one_line(argv: list[str]) -> None:
    """``gnd ... >&-``: nobody can receive the output; one line on stderr, exit 2, no traceback."""
    out = subprocess.run([sys.executable, "-m", "doctor", *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True, timeout=120, close_fds=True, preexec_fn=lambda: __import__("os").close(1))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == ["gnd: error: cannot write the output: standard output is closed "
                                               "(use -o FILE)"]


def test_a_closed_stdout_does_not_stop_a_run_that_writes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    out = subprocess.run([sys.executable, "-m", "doctor", "check", "fixtures/hgx-h100-sick", "--format", "json",
                          "-o", str(target)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         timeout=120, preexec_fn=lambda: __import__("os").close(1))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert json.loads(target.read_text())["findings"]


def test_help_and_mistyped_commands_are_not_read_as_paths(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["help"])
    assert done.value.code == 0 and "COMMAND" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["help", "report"])
    assert capsys.readouterr().out.startswith("usage: gnd report")
    for typo, meant in (("chek", "check"), ("repot", "report"), ("fleat", "fleet"), ("colect", "collect")):
        assert main([typo]) == 2
        err = capsys.readouterr().err
        assert f"did you mean `gnd {meant}`" in err and "no such file" not in err


def test_a_bad_fail_on_level_lists_the_levels_as_typed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--fail-on", "hihg"])
    err = capsys.readouterr().err
    assert "'critical', 'high', 'medium', 'low', 'info'" in err and "Severity" not in err


def _every_command(tmp: Path) -> list[list[str]]:
    """One command line per subcommand, each writing to stdout (saved results where one is read)."""
    saved = tmp / "sick.json"
    if not saved.exists():
        from tests.helpers import facts, run

        saved.write_text(json.dumps(run(facts(base=SICK)).to_dict()))
    s = str(saved)
    return [["check", str(SICK)], ["check", str(SICK), "--format", "prometheus"], ["checks"],
            ["report", "--from-json", s, "--format", "md", "-o", "/dev/stdout"], ["fix-script", "--from-json", s,
            "-o", "/dev/stdout"], ["diff", s, s, "-v"], ["fleet", s, s], ["baseline", str(SICK)], ["--help"],
            ["check", "--help"], ["--version"], ["help", "fleet"]]


@pytest.mark.parametrize("index", range(12))
def test_every_command_ends_without_a_traceback_on_a_closed_or_vanishing_stdout(index: int, tmp_path_factory:
                                                                                pytest.TempPathFactory) -> None:
    """Issue 23 class 7: ``gnd X >&-`` says one line and exits 2 (or writes its file); ``gnd X | head -c1``
    ends quietly; neither prints a traceback or Python's "Exception ignored" at shutdown."""
    import os

    argv = _every_command(tmp_path_factory.getbasetemp())[index]
    cmd = [sys.executable, "-m", "doctor", *argv]
    closed = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert "Traceback" not in closed.stderr and "Exception ignored" not in closed.stderr, closed.stderr
    if "-o" not in argv:
        assert closed.returncode == 2 and closed.stderr.strip().splitlines()[-1].startswith(
            "gnd: error: cannot write the output: standard output is closed"), closed.stderr
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    early = subprocess.run(cmd, stdout=reader.stdin, stderr=subprocess.PIPE, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    reader.stdin.close()
    reader.wait(timeout=10)
    assert "Traceback" not in early.stderr and "Exception ignored" not in early.stderr, early.stderr
    assert early.returncode in (0, 1, 2)  # never 120 (a failed flush at shutdown) nor a signal


def _stdout_commands(tmp: Path) -> list[list[str]]:
    """Every command line that writes its output to stdout, ``-o -`` spellings included."""
    s = str(tmp / "sick.json")
    return [*(a for a in _every_command(tmp) if "-o" not in a),
            ["report", str(SICK), "--format", "md", "-o", "-"],
            ["fix-script", str(SICK), "-o", "-", "--rollback", str(tmp / "rollback.sh")],
            ["diff", s, str(SICK), "--format", "json"], ["watch", str(SICK), "--duration", "0.1", "--interval", "0.1"]]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("index", range(14))
def test_every_command_on_a_full_disk_or_a_closed_stdout_says_one_line(index: int, tmp_path_factory:
                                                                       pytest.TempPathFactory) -> None:
    """Issue 23 class 7: stdout on a full disk (/dev/full: ENOSPC on every write) or closed at start, for
    every command that writes there, ``-o -`` included: exit 2 and one line naming the cause, never a
    traceback, never exit 0 or 1 with the output lost."""
    import os

    argv = _stdout_commands(tmp_path_factory.getbasetemp())[index]
    cmd = [sys.executable, "-m", "doctor", *argv]
    with open("/dev/full", "w") as full:
        out = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert out.returncode == 2 and "gnd: error: cannot write the output: No space left on device" in out.stderr
    closed = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert "Traceback" not in closed.stderr, closed.stderr
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr


def test_a_fix_script_on_stdout_needs_a_named_rollback(tmp_path: Path) -> None:
    """``-o -`` has no name to derive the rollback script's from: no stray ``-.rollback.sh`` in the cwd."""
    out = subprocess.run([sys.executable, "-m", "doctor", "fix-script", str(SICK.resolve()), "-o", "-"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--rollback" in out.stderr and list(tmp_path.iterdir()) == []
