"""How `gnd` reaches the TUI: only on an interactive terminal, never importing Textual for `gnd check`."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import doctor.cli
import doctor.commands.check
import doctor.commands.tui
from doctor.cli import main

ROOT = Path(__file__).resolve().parents[2]


class _Tty:
    def __init__(self, stream: object) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _record(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def tui(args: argparse.Namespace) -> int:
        calls.append("tui")
        return 0

    def check(args: argparse.Namespace) -> int:
        calls.append("check")
        return 0

    monkeypatch.setattr(doctor.commands.tui, "run", tui)
    monkeypatch.setattr(doctor.commands.check, "run", check)
    return calls


def test_bare_gnd_opens_the_tui_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _record(monkeypatch)
    monkeypatch.setattr(sys, "stdin", _Tty(sys.stdin))
    monkeypatch.setattr(sys, "stdout", _Tty(sys.stdout))
    assert main([]) == 0
    assert calls == ["tui"]


def test_bare_gnd_in_a_pipe_prints_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _record(monkeypatch)
    monkeypatch.setattr(sys, "stdin", _Tty(sys.stdin))  # stdout is a pipe
    assert main([]) == 0
    assert calls == ["check"]


def test_tui_refuses_a_pipe_and_a_bad_source(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["tui"]) == 2
    assert "interactive terminal" in capsys.readouterr().err
    assert main(["tui", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnd: error:") and "Traceback" not in err


def test_gnd_check_never_imports_textual() -> None:
    code = ("import sys; from doctor.cli import main; "
            "rc = main(['check', '--only', 'numa.kernel_policy', '--format', 'json']); "
            "sys.stdout.flush(); print('TEXTUAL' if 'textual' in sys.modules else 'CLEAN', file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip().endswith("CLEAN"), proc.stderr
    assert "tui" in subprocess.run([sys.executable, "-m", "doctor", "--help"], cwd=ROOT, capture_output=True,
                                   text=True, timeout=60).stdout
