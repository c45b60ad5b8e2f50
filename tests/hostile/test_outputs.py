"""Items 8 and 9: an output never overwrites an input; errors writing or naming are exit 2, one
line (a scheduler reads exit 1 as 'the node has a problem'); undecodable names never crash."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.conftest import SICK


@pytest.fixture
def snap(snapshot: Path, tmp_path: Path) -> Path:
    path = tmp_path / "same.tar.gz"
    shutil.copy(snapshot, path)
    return path


def _unchanged(path: Path, before: bytes) -> None:
    assert path.read_bytes() == before


def test_check_output_over_its_source_is_refused(gnd: Any, snap: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = snap.read_bytes()
    gnd("check", str(snap), "-o", str(snap)).refused("would overwrite the input")
    monkeypatch.chdir(tmp_path)
    gnd("check", "same.tar.gz", "-o", f"./../{tmp_path.name}/same.tar.gz").refused("would overwrite")
    os.link(snap, tmp_path / "hard.tar.gz")
    gnd("check", str(snap), "-o", str(tmp_path / "hard.tar.gz")).refused("would overwrite")
    os.symlink(snap, tmp_path / "sym.tar.gz")
    gnd("check", str(tmp_path / "sym.tar.gz"), "-o", str(snap)).refused("would overwrite")
    _unchanged(snap, before)
    gnd("check", str(snap), "-o", str(tmp_path / "out.txt")).ran()  # a different file is fine


def test_every_command_refuses_output_over_an_input(gnd: Any, snap: Path, tmp_path: Path) -> None:
    before = snap.read_bytes()
    other = tmp_path / "other.tar.gz"
    shutil.copy(snap, other)
    gnd("diff", str(snap), str(other), "-o", str(other)).refused("would overwrite")
    gnd("baseline", str(snap), "-o", str(snap)).refused("would overwrite")
    gnd("fix-script", str(snap), "-o", str(snap)).refused("would overwrite")
    gnd("fix-script", str(snap), "-o", str(tmp_path / "f.sh"), "--rollback", str(snap)).refused("would overwrite")
    gnd("fleet", str(tmp_path), "-o", str(snap)).refused("would overwrite")
    gnd("fleet", str(tmp_path), "-o", "-", "--save-json", str(other)).refused("would overwrite")
    gnd("fleet", str(tmp_path), "-o", str(tmp_path / "f.txt")).refused("inside the input folder")
    _unchanged(snap, before)
    _unchanged(other, before)
    result = tmp_path / "r.json"
    assert gnd("check", "--format", "json", str(snap), "-o", str(result)).code in (0, 1)
    saved = result.read_bytes()
    gnd("report", "--from-json", str(result), "-o", str(result)).refused("would overwrite")
    _unchanged(result, saved)
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nExecStart=/usr/bin/vllm serve m\n")
    gnd("check", str(snap), "--deploy", str(unit), "-o", str(unit)).refused("would overwrite")
    assert "ExecStart" in unit.read_text()


@pytest.mark.parametrize("argv, words", [
    (["collect", "--root", str(SICK), "-o", "/proc/x.tar.gz"], ("cannot write /proc/x.tar.gz",)),
    (["check", str(SICK), "-o", "/proc/x.txt"], ("cannot write /proc/x.txt",)),
    (["fleet", str(SICK), "--cache", "/proc/c"], ("--cache /proc/c",)),
    (["check", str(SICK), "-o", "/nonexistent-dir/x.txt"], ("cannot write",)),
])
def test_unwritable_outputs_are_exit_2(gnd: Any, argv: list[str], words: tuple[str, ...]) -> None:
    gnd(*argv).refused(*words)


def _bad_name_snapshot(tmp_path: Path) -> tuple[Path, Path]:
    """The sick node with one NIC whose name is not UTF-8 (Linux allows any bytes but '/')."""
    root = tmp_path / "dir"
    shutil.copytree(SICK, root, symlinks=True)
    net = root / "sys/class/net"
    target = os.readlink(net / "enp155s0np0")
    dev = (net / target).resolve()
    bad = b"enp155s0\xffnp0"
    os.rename(bytes(dev), os.path.join(os.path.dirname(bytes(dev)), bad))
    os.unlink(net / "enp155s0np0")
    os.symlink(os.fsencode(target)[: -len("enp155s0np0")] + bad, os.path.join(bytes(net), bad))
    tar = tmp_path / "bad-name.tar.gz"
    with tarfile.open(tar, "w:gz", format=tarfile.GNU_FORMAT, errors="surrogateescape") as tf:
        tf.add(root, arcname=".")
    return root, tar


def test_undecodable_names_never_crash_any_output(gnd: Any, tmp_path: Path) -> None:
    for source in _bad_name_snapshot(tmp_path):
        out = tmp_path / f"out-{source.name}"
        out.mkdir()
        gnd("check", str(source)).ran()
        gnd("check", "--format", "json", str(source)).ran()
        gnd("check", "--format", "prometheus", str(source), "-o", str(out / "p.prom")).ran()
        gnd("report", str(source), "-o", str(out / "r.md")).ran()
        gnd("report", str(source), "-o", str(out / "r.html")).ran()
        gnd("fix-script", str(source), "-o", str(out / "fix.sh")).ran()
        assert gnd("baseline", str(source), "-o", str(out / "b.toml")).code == 0
        for written in out.iterdir():
            written.read_text(encoding="utf-8")  # valid UTF-8 throughout
    snap_json = json.loads(gnd("check", "--format", "json", str(tmp_path / "bad-name.tar.gz")).out)
    assert "\udcff" not in json.dumps(snap_json, ensure_ascii=False)
