"""Snapshot layout: `gnd collect` writes only the folders that hold nothing and plain ustar headers
(pax only where ustar cannot hold a member), and snapshots of the earlier layout (every folder a
member, a pax header for every long name) read the same, fast path and slow path alike."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.pipeline import analyse
from doctor.sources.tree import TarTree
from fixtures.tools.make_node import HEALTHY, render
from tests.fleet.fleetgen import collector_tar, manifest
from tests.helpers import HEALTHY as HEALTHY_ROOT

VOLATILE = {"generated_at", "duration_s", "duration_ms", "source"}


def _stable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _types(path: Path) -> dict[bytes, int]:
    raw = gzip.decompress(path.read_bytes())
    counts: dict[bytes, int] = {}
    pos = 0
    while pos + 512 <= len(raw) and any(raw[pos:pos + 512]):
        kind = raw[pos + 156:pos + 157]
        counts[kind] = counts.get(kind, 0) + 1
        size = int(raw[pos + 124:pos + 136].split(b"\0")[0].strip() or b"0", 8)
        pos += 512 + -(-size // 512) * 512
    return counts


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    tree = render(HEALTHY)
    files = {**tree.files, "sys/class/empty_probe/.keep": b""}
    out = []
    for legacy in (True, False):
        tar = collector_tar(files, tree.links, manifest("node", 1_700_000_000), 1_700_000_000, legacy=legacy)
        path = tmp_path / ("legacy.tar.gz" if legacy else "plain.tar.gz")
        path.write_bytes(gzip.compress(tar))
        out.append(path)
    return out[0], out[1]


def _dump(t: TarTree) -> dict[str, object]:
    entries = t.entries()
    return {k: (kind, t.read(k), target, big, t.listdir(k) if kind == "dir" else None)
            for k, (kind, target, big) in entries.items()}


def test_both_layouts_read_as_the_same_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    legacy, plain = _pair(tmp_path)
    assert _types(legacy).get(b"5") and _types(legacy).get(b"x")  # the old layout has both
    assert b"5" not in _types(plain) and b"x" not in _types(plain)
    trees = [_dump(TarTree(str(p))) for p in (legacy, plain)]
    with monkeypatch.context() as m:  # the hardened tarfile path too
        m.setattr(TarTree, "_load_fast", lambda self, fh: False)
        trees += [_dump(TarTree(str(p))) for p in (legacy, plain)]
    assert trees[0] == trees[1] == trees[2] == trees[3]
    fast, slow = TarTree(str(plain)), TarTree(str(legacy))
    for path in ("sys/bus/pci/devices", "sys/class/net", "proc", "sys/class/empty_probe", "nope", "proc/1/../1"):
        assert fast.resolve(path) == slow.resolve(path)


def test_both_layouts_give_the_same_result(tmp_path: Path) -> None:
    legacy, plain = _pair(tmp_path)
    results = [_stable(analyse(str(p)).to_dict()) for p in (legacy, plain)]
    assert results[0] == results[1]
    assert json.dumps(results[0])  # a real result, not two empty ones
    assert results[0]["findings"]  # type: ignore[index]


def test_collect_writes_only_empty_folders_and_no_pax_header(tmp_path: Path) -> None:
    out = tmp_path / "snap.tar.gz"
    assert main(["collect", "--root", str(HEALTHY_ROOT), "-o", str(out)]) == 0
    with tarfile.open(out) as tf:
        members = tf.getmembers()
    dirs = {m.name for m in members if m.isdir()}
    names = {m.name for m in members}
    assert all(not any(n.startswith(d + "/") for n in names) for d in dirs), "a folder with members below it"
    assert "sys/bus/pci/drivers/nvidia" in dirs  # a driver's folder, collected with nothing in it, stays one
    assert any(len(m.name) > 100 for m in members)  # long sysfs names, in the ustar prefix field
    assert b"x" not in _types(out) and b"5" in _types(out)
    tree = TarTree(str(out))
    assert tree.kind("sys/bus/pci/drivers/nvidia") == "dir" and tree.listdir("sys/bus/pci/drivers/nvidia") == []
    assert tree.kind("sys/bus/pci") == "dir" and "drivers" in (tree.listdir("sys/bus/pci") or [])


def test_a_name_ustar_cannot_hold_gets_a_pax_header() -> None:
    from doctor.collect import _add_member

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in ("a/" + "b" * 120 + "/" + "c" * 120 + "/d", "etc/h\u00e9llo", "etc/plain"):
            info = tarfile.TarInfo(name)
            info.size = 2
            _add_member(tf, info, b"x\n")
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tf:
        assert [m.name for m in tf.getmembers()] == ["a/" + "b" * 120 + "/" + "c" * 120 + "/d", "etc/h\u00e9llo",
                                                     "etc/plain"]
    raw = buf.getvalue()
    assert raw.count(b"ustar\x0000") >= 1 and raw[156:157] == b"x"  # the first member needs pax
