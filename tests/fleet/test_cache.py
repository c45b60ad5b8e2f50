"""`gnd fleet --cache DIR`: a snapshot is analysed once; later runs reuse its stored result."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from doctor.cli import main
from doctor.fleet import fleet
from tests.helpers import HEALTHY, SICK


def test_cache_reuses_results_keyed_by_content(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    for name, root in (("a", HEALTHY), ("b", SICK)):
        assert main(["collect", "--root", str(root), "-o", str(snaps / f"{name}.tar.gz")]) == 0
    cache = tmp_path / "cache"
    first = fleet.analyse_fleet(sorted(map(str, snaps.iterdir())), jobs=1, cache_dir=str(cache))
    assert len(list(cache.glob("*.json"))) == 2

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("analysed again despite the cache")

    monkeypatch.setattr("doctor.fleet.load.load_node", boom)
    second = fleet.analyse_fleet(sorted(map(str, snaps.iterdir())), jobs=1, cache_dir=str(cache))
    assert [r.worst for r in first.rows] == [r.worst for r in second.rows]
    # the key is the content: a file that now holds b's bytes gets b's result
    shutil.copy(snaps / "b.tar.gz", snaps / "a.tar.gz")
    monkeypatch.undo()
    third = fleet.analyse_fleet(sorted(map(str, snaps.iterdir())), jobs=1, cache_dir=str(cache))
    assert third.rows[0].worst == third.rows[1].worst


def test_cache_folder_among_the_snapshots_is_not_a_node(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    snaps = tmp_path / "snaps"
    snaps.mkdir()
    assert main(["collect", "--root", str(HEALTHY), "-o", str(snaps / "a.tar.gz")]) == 0
    cache = snaps / "cache"
    for _run in range(2):  # the second run finds the cache folder, with its entry, beside the snapshot
        capsys.readouterr()
        main(["fleet", str(snaps), "--cache", str(cache), "--format", "json"])
        report = json.loads(capsys.readouterr().out)
        assert report["unreadable"] == [] and len(report["nodes"]) == 1
    assert len(list(cache.glob("*.json"))) == 1


def test_a_cached_result_reads_back_as_the_fresh_one_in_any_script(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A node's summary from its cache entry equals the one its analysis gave, text outside ASCII
    (a host name in Chinese, a NIC name with an escape sequence made visible) included."""
    root = tmp_path / "root"
    shutil.copytree(SICK, root, symlinks=True)
    for name in ("etc/hostname", "proc/sys/kernel/hostname"):
        (root / name).write_text("gpu-节点-07\n", encoding="utf-8")
    snap = tmp_path / "node.tar.gz"
    assert main(["collect", "--root", str(root), "-o", str(snap)]) == 0
    monkeypatch.setattr(fleet, "_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    fresh = fleet.analyse(str(snap))
    assert not fresh.get("error") and fresh["name"] == "gpu-节点-07"
    (entry,) = (tmp_path / "cache").glob("*.json")  # stored, and read below

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("analysed again despite the cache")

    monkeypatch.setattr("doctor.fleet.load.load_node", boom)
    again = fleet.analyse(str(snap))
    assert {k: v for k, v in again.items() if k != "duration_s"} == \
        {k: v for k, v in fresh.items() if k != "duration_s"}
    assert json.loads(entry.read_bytes())["cache_key"]
