"""Corrupt, truncated and crafted archives: refused with one line, never analysed as if whole."""

from __future__ import annotations

import bz2
import gzip
import lzma
import tarfile
from pathlib import Path
from typing import Any

import pytest

from doctor.errors import DoctorError
from doctor.sources import open_source
from doctor.sources.tree import MAX_FILE_BYTES
from tests.hostile.conftest import BASE, tar_bytes


def _plain(snapshot: Path) -> bytes:
    return gzip.decompress(snapshot.read_bytes())


def _findings(gnd: Any, path: Path) -> list[tuple[str, str, str]]:
    import json

    outcome = gnd("check", "--format", "json", str(path))
    outcome.ran()
    return sorted((f["check"], f["subject"], f["severity"]) for f in json.loads(outcome.out)["findings"])


# --- controls: whole archives in every compression read the same -------------------------------

def test_whole_snapshot_in_every_compression_gives_the_same_findings(gnd: Any, snapshot: Path, tmp_path: Path) -> None:
    raw = _plain(snapshot)
    variants = {"s.tar": raw, "s.tar.xz": lzma.compress(raw), "s.tar.bz2": bz2.compress(raw)}
    expected = _findings(gnd, snapshot)
    assert any(sev in ("critical", "high") for _, _, sev in expected)  # the sick node is sick
    for name, data in variants.items():
        (tmp_path / name).write_bytes(data)
        assert _findings(gnd, tmp_path / name) == expected, name


def test_a_tar_with_one_end_block_still_reads(gnd: Any, tmp_path: Path) -> None:
    raw = tar_bytes(BASE)
    body = raw.rstrip(b"\0")
    body += b"\0" * (-len(body) % 512)  # the last member's padding
    (tmp_path / "one.tar").write_bytes(body + b"\0" * 512)
    gnd("check", str(tmp_path / "one.tar")).ran()


# --- item 5: corruption and truncation ------------------------------------------------------------

@pytest.mark.parametrize("where", [0.3, 0.5, 0.7])
def test_bit_rot_in_a_gzip_snapshot_is_refused(gnd: Any, snapshot: Path, tmp_path: Path, where: float) -> None:
    data = bytearray(snapshot.read_bytes())
    at = int(len(data) * where)
    data[at:at + 100] = bytes(b ^ 0x5A for b in data[at:at + 100])
    (tmp_path / "rot.tar.gz").write_bytes(bytes(data))
    gnd("check", str(tmp_path / "rot.tar.gz")).refused("rot.tar.gz", "truncated or corrupt")


def test_changed_bytes_that_still_decompress_fail_the_crc(gnd: Any, tmp_path: Path) -> None:
    """Stored deflate blocks decode whatever the bytes are: only the gzip CRC at the end catches it."""
    raw = tar_bytes([*BASE, ("etc/motd", b"MARKER" * 200, None)])
    packed = bytearray(gzip.compress(raw, compresslevel=0))
    at = packed.index(b"MARKERMARKER")
    packed[at] ^= 0x01
    (tmp_path / "crc.tar.gz").write_bytes(bytes(packed))
    gnd("check", str(tmp_path / "crc.tar.gz")).refused("crc.tar.gz", "CRC")


def test_damaged_gzip_trailer_is_refused(gnd: Any, snapshot: Path, tmp_path: Path) -> None:
    data = bytearray(snapshot.read_bytes())
    data[-8] ^= 0xFF  # the CRC32 field
    (tmp_path / "trailer.tar.gz").write_bytes(bytes(data))
    gnd("check", str(tmp_path / "trailer.tar.gz")).refused("truncated or corrupt")


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9])
def test_plain_tar_cut_midway_is_refused(gnd: Any, snapshot: Path, tmp_path: Path, fraction: float) -> None:
    raw = _plain(snapshot)
    (tmp_path / "cut.tar").write_bytes(raw[: int(len(raw) * fraction)])
    gnd("check", str(tmp_path / "cut.tar")).refused("cut.tar", "truncated or corrupt")


def test_plain_tar_cut_at_a_member_boundary_is_refused(gnd: Any, snapshot: Path, tmp_path: Path) -> None:
    """A cut that lands exactly between two members leaves no header to fail: only the missing
    end-of-archive block tells."""
    raw = _plain(snapshot)
    with tarfile.open(snapshot) as tf:
        members = tf.getmembers()
    mid = members[len(members) // 2]
    (tmp_path / "boundary.tar").write_bytes(raw[: mid.offset])
    gnd("check", str(tmp_path / "boundary.tar")).refused("end-of-archive")
    last = members[-1]
    end = last.offset_data + -(-last.size // 512) * 512
    (tmp_path / "noend.tar").write_bytes(raw[:end])  # every member, no end blocks
    gnd("check", str(tmp_path / "noend.tar")).refused("end-of-archive")


@pytest.mark.parametrize("suffix, pack", [(".tar.gz", gzip.compress), (".tar.xz", lzma.compress),
                                          (".tar.bz2", bz2.compress)])
def test_truncated_compressed_streams_are_refused(gnd: Any, snapshot: Path, tmp_path: Path, suffix: str,
                                                  pack: Any) -> None:
    packed = pack(_plain(snapshot))
    for keep in (len(packed) // 2, len(packed) - 4):
        path = tmp_path / f"t{keep}{suffix}"
        path.write_bytes(packed[:keep])
        gnd("check", str(path)).refused(path.name, "truncated or corrupt")


def test_garbage_with_a_tarball_name_is_refused(gnd: Any, tmp_path: Path) -> None:
    (tmp_path / "x.tar.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"garbage" * 50)
    gnd("check", str(tmp_path / "x.tar.gz")).refused("x.tar.gz")
    (tmp_path / "empty.tar").write_bytes(b"")
    gnd("check", str(tmp_path / "empty.tar")).refused("empty.tar")


# --- crafted members (already handled before issue 11; kept honest here) -------------------------

@pytest.mark.parametrize("name, words", [("../evil", ("unsafe tarball", "'..'")),
                                         ("/etc/evil", ("unsafe tarball", "absolute path")),
                                         ("proc/../../evil", ("unsafe tarball", "'..'"))])
def test_member_names_that_leave_the_archive_are_refused(gnd: Any, tmp_path: Path, name: str,
                                                         words: tuple[str, ...]) -> None:
    (tmp_path / "bad.tar.gz").write_bytes(gzip.compress(tar_bytes([*BASE, (name, b"x", None)])))
    gnd("check", str(tmp_path / "bad.tar.gz")).refused(*words)
    assert not (tmp_path / "evil").exists()


def test_links_resolve_inside_the_archive_and_loops_read_as_missing(gnd: Any, tmp_path: Path) -> None:
    members = [*BASE, ("etc/hostname", b"inside\n", None),
               ("etc/abs", None, "/etc/hostname"),                   # absolute: from the archive's root
               ("etc/up", None, "../../../../../etc/hostname"),      # '..' at the root stays there
               ("etc/loop1", None, "loop2"), ("etc/loop2", None, "loop1"),
               ("etc/self", None, "self/x"), ("etc/passwd", None, "/etc/passwd")]
    path = tmp_path / "links.tar.gz"
    path.write_bytes(gzip.compress(tar_bytes(members)))
    src = open_source(str(path))
    assert src.read_text("etc/abs") == "inside\n"
    assert src.read_text("etc/up") == "inside\n"
    for name in ("etc/loop1", "etc/self", "etc/passwd"):
        assert src.read_bytes(name) is None  # never the analysing machine's file
    gnd("check", str(path)).ran()


def test_devices_fifos_and_stray_hardlinks_read_as_missing(gnd: Any, tmp_path: Path) -> None:
    import io

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data, _ in BASE:
            info = tarfile.TarInfo(name)
            info.size = len(data or b"")
            tf.addfile(info, io.BytesIO(data or b""))
        for name, kind in (("dev/sda", tarfile.CHRTYPE), ("dev/loop", tarfile.BLKTYPE), ("run/fifo", tarfile.FIFOTYPE)):
            info = tarfile.TarInfo(name)
            info.type, info.devmajor, info.devminor = kind, 8, 0
            tf.addfile(info)
        for target in ("/etc/shadow", "../../etc/shadow", "nosuch"):
            info = tarfile.TarInfo(f"etc/hard{len(target)}")
            info.type, info.linkname = tarfile.LNKTYPE, target
            tf.addfile(info)
    path = tmp_path / "dev.tar"
    path.write_bytes(buf.getvalue())
    src = open_source(str(path))
    for name in ("dev/sda", "dev/loop", "run/fifo", "etc/hard11", "etc/hard16", "etc/hard6"):
        assert src.read_bytes(name) is None, name
    gnd("check", str(path)).ran()


def test_a_huge_single_file_reads_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "huge.tar.gz"
    huge = [("var/log/huge", b"\0" * (MAX_FILE_BYTES + 1), None)]
    path.write_bytes(gzip.compress(tar_bytes([*BASE, *huge]), compresslevel=1))
    src = open_source(str(path))
    assert src.read_bytes("var/log/huge") is None
    assert src.read_line("proc/sys/kernel/hostname") == "node1"


def test_non_utf8_member_names_read_with_replacement(tmp_path: Path) -> None:
    members = [*BASE, ("sys/class/net/eth\udcff0/address", b"aa:bb\n", None)]
    path = tmp_path / "names.tar.gz"
    path.write_bytes(gzip.compress(tar_bytes(members)))
    names = open_source(str(path)).listdir("sys/class/net")
    assert names == ["eth\ufffd0"]
    for name in names:
        name.encode("utf-8")  # printable everywhere, no surrogates


def test_open_source_error_is_a_doctor_error(tmp_path: Path) -> None:
    (tmp_path / "cut.tar").write_bytes(tar_bytes(BASE)[:700])
    with pytest.raises(DoctorError, match="truncated or corrupt"):
        open_source(str(tmp_path / "cut.tar"))
