"""Item 6: a FIFO (or device) wherever a path is given never blocks: refused with one line, or, in a
fleet folder, reported as that node's error while the other nodes are analysed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.conftest import SICK


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.tar.gz"
    os.mkfifo(path)
    return path


def test_fifo_as_source_is_refused(gnd: Any, fifo: Path, tmp_path: Path) -> None:
    gnd("check", str(fifo)).refused("pipe.tar.gz", "not a regular file")
    bare = tmp_path / "pipe"
    os.mkfifo(bare)  # no tarball suffix: sniffing its content must not open it either
    gnd("check", str(bare)).refused("pipe", "not a regular file")
    gnd("check", "/dev/zero").refused("/dev/zero", "not a regular file")


@pytest.mark.parametrize("option, what", [("--deploy", "deploy file"), ("--baseline", "baseline")])
def test_fifo_given_to_an_option_is_refused(gnd: Any, fifo: Path, option: str, what: str) -> None:
    gnd("check", str(SICK), option, str(fifo)).refused(str(fifo), "FIFO", what)


def test_fifo_as_redaction_map_is_refused(gnd: Any, fifo: Path) -> None:
    gnd("check", str(SICK), "--redact", "--redact-map", str(fifo)).refused(str(fifo), "FIFO")


def test_fifo_as_saved_result_is_refused(gnd: Any, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    os.mkfifo(path)
    gnd("report", "--from-json", str(path), "-o", str(tmp_path / "r.html")).refused(str(path), "FIFO")
    assert not (tmp_path / "r.html").exists()


def test_fifo_in_diff_is_refused(gnd: Any, fifo: Path, tmp_path: Path) -> None:
    gnd("diff", str(SICK), str(fifo)).refused(str(fifo), "not a regular file")
    js = tmp_path / "after.json"
    os.mkfifo(js)
    gnd("diff", str(SICK), str(js)).refused(str(js), "not a regular file")


def test_fifo_in_a_fleet_folder_is_one_bad_node(gnd: Any, snapshot: Path, tmp_path: Path) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    shutil.copy(snapshot, folder / "node1.tar.gz")
    os.mkfifo(folder / "node2.tar.gz")
    os.mkfifo(folder / "node3.json")
    outcome = gnd("fleet", "--jobs", "1", "--format", "json", str(folder), timeout=60)
    outcome.ran()
    report = json.loads(outcome.out)
    text = json.dumps(report)
    assert "node2.tar.gz" in text and "node3.json" in text and "not a regular file" in text


def test_fifo_inside_a_directory_snapshot_reads_as_missing(gnd: Any, tmp_path: Path) -> None:
    def findings(root: Path) -> list[tuple[str, str, str]]:
        outcome = gnd("check", "--format", "json", str(root))
        outcome.ran()
        return sorted((f["check"], f["subject"], f["title"]) for f in json.loads(outcome.out)["findings"])

    missing, piped = tmp_path / "missing", tmp_path / "piped"
    for root in (missing, piped):
        shutil.copytree(SICK, root, symlinks=True)
        (root / "proc/cmdline").unlink()
    os.mkfifo(piped / "proc/cmdline")
    assert findings(piped) == findings(missing)
