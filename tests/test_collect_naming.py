"""`gnd collect` names: ``gnd-<host>-<UTC time>.tar.gz``, a safe host name, never replacing a file."""

from __future__ import annotations

import os
import re
import socket
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.collect import default_output, numbered_names, safe_host, snapshot_hostname
from doctor.errors import DoctorError
from doctor.output import new_file
from doctor.sources import LiveSource
from tests.helpers import HEALTHY, SICK

NAME = re.compile(r"gnd-(?P<host>[A-Za-z0-9._-]+)-(?P<stamp>\d{8}T\d{6}Z)(?:-(?P<n>\d+))?\.tar\.gz")


@pytest.mark.parametrize(("raw", "safe"), [
    ("gpu-node-13", "gpu-node-13"),
    ("node7.cluster.example", "node7.cluster.example"),
    ("../../etc/passwd", "_.._etc_passwd"),
    ("-rf", "rf"),
    ("..", "host"),
    ("", "host"),
    (None, "host"),
    ("节点-3", "__-3"),
    ("a b\nc\x1b[31m", "a_b_c__31m"),
    ("x" * 300, "x" * 63),
])
def test_host_names_are_reduced_to_a_safe_file_name_alphabet(raw: str | None, safe: str) -> None:
    assert safe_host(raw) == safe
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", safe_host(raw))


def test_the_default_name_is_host_and_utc_time() -> None:
    local = datetime(2026, 12, 2, 7, 30, tzinfo=timezone(timedelta(hours=1)))
    assert default_output("gpu-node-13", local) == "gnd-gpu-node-13-20261202T063000Z.tar.gz"


def test_numbered_alternatives_keep_the_suffix() -> None:
    names = list(numbered_names("gnd-h-20261202T063000Z.tar.gz", most=3))
    assert names == ["gnd-h-20261202T063000Z.tar.gz", "gnd-h-20261202T063000Z-2.tar.gz",
                     "gnd-h-20261202T063000Z-3.tar.gz"]


def test_a_live_host_is_named_by_its_own_host_name() -> None:
    name = default_output(snapshot_hostname(LiveSource("/")))
    m = NAME.fullmatch(name)
    assert m, name
    assert m["host"] == safe_host(Path("/proc/sys/kernel/hostname").read_text().strip() or socket.gethostname())
    assert m["host"] != "host" or not socket.gethostname()


@pytest.mark.parametrize("root", [SICK, HEALTHY], ids=lambda p: p.name)
def test_a_folder_source_is_named_by_the_host_it_holds(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["collect", "--root", str(root)]) == 0
    (made,) = os.listdir(tmp_path)
    m = NAME.fullmatch(made)
    assert m and m["host"] == safe_host((root / "proc/sys/kernel/hostname").read_text().strip()), made
    assert f"wrote {made}:" in capsys.readouterr().err


def test_an_existing_file_is_never_replaced_by_a_default_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    stamp = datetime(2026, 12, 2, 6, 30, tzinfo=timezone.utc)
    monkeypatch.setattr("doctor.collect.datetime", _Frozen)
    _Frozen.at = stamp
    taken = default_output("gpu-node-13", stamp)
    Path(taken).write_bytes(b"yesterday's evidence")
    assert main(["collect", "--root", str(SICK)]) == 0
    assert main(["collect", "--root", str(SICK)]) == 0
    assert Path(taken).read_bytes() == b"yesterday's evidence"
    assert set(os.listdir(tmp_path)) == {taken, taken.replace(".tar.gz", "-2.tar.gz"),
                                         taken.replace(".tar.gz", "-3.tar.gz")}


class _Frozen(datetime):
    at = datetime(2026, 12, 2, tzinfo=timezone.utc)

    @classmethod
    def now(cls, tz: object = None) -> _Frozen:  # type: ignore[override]
        return cls.fromtimestamp(cls.at.timestamp(), timezone.utc)


def test_writers_finishing_together_take_different_names(tmp_path: Path) -> None:
    """Two collects of the same second: every writer publishes under its own name, none replaced."""
    base = str(tmp_path / "gnd-h-20261202T063000Z.tar.gz")
    barrier = threading.Barrier(6)
    got: list[str] = []

    def write(n: int) -> None:
        with new_file(numbered_names(base)) as (fh, taken):
            fh.write(str(n).encode())
            barrier.wait()
        got.append(taken[0])

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 6
    assert sorted(Path(g).read_text() for g in got) == [str(n) for n in range(6)]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".gnd-")]


def test_no_free_name_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    names = [str(tmp_path / f"s{n}") for n in range(3)]
    for n in names:
        Path(n).write_text("kept")
    with pytest.raises(DoctorError, match="every numbered alternative exist"), new_file(names) as (fh, _):
        fh.write(b"new")
    assert sorted(os.listdir(tmp_path)) == ["s0", "s1", "s2"]
    assert all(Path(n).read_text() == "kept" for n in names)


def test_no_hard_links_falls_back_to_an_exclusive_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*_args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    first = tmp_path / "a.tar.gz"
    first.write_text("kept")
    with new_file(numbered_names(str(first))) as (fh, taken):
        fh.write(b"new")
    assert taken == [str(tmp_path / "a-2.tar.gz")]
    assert first.read_text() == "kept" and Path(taken[0]).read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["a-2.tar.gz", "a.tar.gz"]


def test_an_explicit_output_is_replaced_whole(tmp_path: Path) -> None:
    out = tmp_path / "node7.tar.gz"
    out.write_bytes(b"old")
    assert main(["collect", "--root", str(HEALTHY), "-o", str(out)]) == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    assert os.listdir(tmp_path) == ["node7.tar.gz"]
