"""Item 7: small archives with big costs are refused fast, with one line naming the limit."""

from __future__ import annotations

import gzip
import io
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from doctor.sources import tree
from tests.hostile.conftest import BASE, tar_bytes


def _write(tmp_path: Path, name: str, members: list[tuple[str, bytes | None, str | None]]) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(tar_bytes(members), compresslevel=1))
    return path


def test_deep_member_paths_are_refused_fast(gnd: Any, tmp_path: Path) -> None:
    """50 members at depth 20,000 (a 6 KB tarball) once took two minutes and 520 MB."""
    deep = "a/" * 20000
    path = _write(tmp_path, "deep.tar.gz", [*BASE, *[(f"{deep}f{i}", b"", None) for i in range(50)]])
    assert path.stat().st_size < 20000
    start = time.process_time()
    gnd("check", str(path)).refused("longer than 4096 characters", "limit")
    assert time.process_time() - start < 2
    path = _write(tmp_path, "depth.tar.gz", [*BASE, ("a/" * (tree.MAX_PATH_DEPTH + 1) + "f", b"", None)])
    gnd("check", str(path)).refused(f"deeper than {tree.MAX_PATH_DEPTH} components", "limit")
    ok = _write(tmp_path, "ok.tar.gz", [*BASE, ("a/" * (tree.MAX_PATH_DEPTH - 1) + "f", b"", None)])
    gnd("check", str(ok)).ran()


def test_oversized_extended_headers_and_link_targets_are_refused(gnd: Any, tmp_path: Path) -> None:
    path = _write(tmp_path, "hdr.tar.gz", [*BASE, ("b" * 70000, b"", None)])
    gnd("check", str(path)).refused("extended header", "limit")
    path = _write(tmp_path, "link.tar.gz", [*BASE, ("etc/l", None, "x/" * 2100)])
    gnd("check", str(path)).refused("link target longer than 4096", "limit")


def test_too_many_members_are_refused(gnd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree, "MAX_MEMBERS", 50)
    many = _write(tmp_path, "many.tar.gz", [*BASE, *[(f"etc/e{i}", b"", None) for i in range(60)]])
    gnd("check", str(many)).refused("more than 50 members", "limit")
    fits = _write(tmp_path, "fits.tar.gz", [*BASE, *[(f"etc/e{i}", b"", None) for i in range(40)]])
    gnd("check", str(fits)).ran()


def test_files_held_in_memory_are_capped(gnd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """63 members of 16 MiB of zeros took 1 GB per process; the total held is capped."""
    monkeypatch.setattr(tree, "MAX_TAR_BYTES", 1 << 20)
    zeros = b"\0" * (512 * 1024)
    path = _write(tmp_path, "zeros.tar.gz", [*BASE, *[(f"var/z{i}", zeros, None) for i in range(3)]])
    assert path.stat().st_size < 10000
    gnd("check", str(path)).refused("hold more than 1 MiB", "limit")


def test_decompressed_bytes_are_capped(gnd: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree, "MAX_STREAM_BYTES", 4 << 20)
    monkeypatch.setattr(tree, "MAX_FILE_BYTES", 1 << 20)  # skipped as too large, but still decompressed
    path = _write(tmp_path, "big.tar.gz", [*BASE, ("var/big", b"\0" * (5 << 20), None)])
    gnd("check", str(path)).refused("unpacks to more than 4 MiB", "limit")
    # a bomb hidden after the end-of-archive blocks, where tarfile itself never reads
    tail = tmp_path / "tail.tar.gz"
    tail.write_bytes(gzip.compress(tar_bytes(BASE) + b"\0" * (8 << 20), compresslevel=1))
    gnd("check", str(tail)).refused("unpacks to more than 4 MiB", "limit")


def test_a_large_sparse_member_is_refused_by_its_size_not_read(gnd: Any, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree, "MAX_STREAM_BYTES", 4 << 20)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, data, _ in BASE:
            info = tarfile.TarInfo(name)
            info.size = len(data or b"")
            tf.addfile(info, io.BytesIO(data or b""))
        info = tarfile.TarInfo("var/claims-huge")
        info.size = 1 << 40  # the header claims a terabyte; the archive ends right after
        tf.addfile(info)
    (tmp_path / "claim.tar").write_bytes(buf.getvalue())
    gnd("check", str(tmp_path / "claim.tar")).refused("unpacks to more than 4 MiB", "limit")
