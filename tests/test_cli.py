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


def test_check_path_never_imports_textual_or_weasyprint() -> None:
    code = ("import sys; from doctor.cli import main; rc = main(['check', '--format', 'json', '-o', '/dev/null']);"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'weasyprint', 'jinja2', 'rich')];"
            "print(','.join(bad)); sys.exit(0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == ""


def test_no_arguments_in_a_pipe_runs_check_not_the_tui() -> None:
    out = subprocess.run([sys.executable, "-m", "doctor"], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode in (0, 1)
    assert "Summary:" in out.stdout
