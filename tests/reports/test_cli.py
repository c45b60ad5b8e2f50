"""`gnd report` and `gnd fix-script` end to end (HTML/Markdown/JSON only: PDF lives in test_pdf)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from doctor.cli import main
from tests.helpers import SICK


@pytest.fixture()
def saved(sick_data: dict[str, Any], tmp_path: Path) -> Path:
    p = tmp_path / "result.json"
    p.write_text(json.dumps(sick_data))
    return p


def test_report_from_json_by_suffix(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert main(["report", "--from-json", str(saved), "-o", str(out)]) == 0  # written: 0 without --fail-on
    assert out.read_text().startswith("# GPU node report")
    html = tmp_path / "r.html"
    assert main(["report", "--from-json", str(saved), "-o", str(html), "--fail-on", "high"]) == 1  # sick: high
    assert html.read_text().startswith("<!DOCTYPE html>")


def test_report_runs_checks_on_a_source(tmp_path: Path) -> None:
    if not SICK.exists():
        pytest.skip("sick fixture not generated yet")
    out = tmp_path / "r.json"
    main(["report", str(SICK), "-o", str(out)])
    data = json.loads(out.read_text())
    assert data["tool"]["name"] == "gpu-node-doctor" and data["findings"]


def test_report_redacts_and_keeps_the_map_apart(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    main(["report", "--from-json", str(saved), "-o", str(out), "--redact"])
    assert "gpu-node-13" not in out.read_text()
    mapping = json.loads((tmp_path / "r.html.redact-map.json").read_text())
    assert "gpu-node-13" in mapping["map"].values()


@pytest.mark.parametrize("content", ["not json at all", json.dumps({"hello": "world"}), json.dumps([1, 2]),
                                     json.dumps({"schema_version": "9.0", "tool": {"name": "gpu-node-doctor"},
                                                 "findings": []})])
def test_from_json_rejects_what_is_not_a_result(content: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    assert main(["report", "--from-json", str(bad), "-o", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnd: error:") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.html").exists()


def test_unknown_suffix_and_missing_file_are_user_errors(saved: Path, tmp_path: Path) -> None:
    assert main(["report", "--from-json", str(saved), "-o", str(tmp_path / "x.docx")]) == 2
    assert main(["report", "--from-json", str(tmp_path / "nope.json"), "-o", str(tmp_path / "x.md")]) == 2


def test_fix_script_command(saved: Path, tmp_path: Path) -> None:
    out = tmp_path / "fix.sh"
    main(["fix-script", "--from-json", str(saved), "-o", str(out)])
    assert out.read_text().startswith("#!/usr/bin/env bash")
    assert (tmp_path / "fix.rollback.sh").exists()
    assert out.stat().st_mode & 0o100


def test_report_modules_import_only_stdlib_and_doctor() -> None:
    import subprocess
    import sys

    code = ("import sys, doctor.cli; doctor.cli.build_parser(); "
            "bad=[m for m in ('jinja2','weasyprint','textual','markupsafe') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
