"""The fast tarball reader: the same tree as the hardened tarfile path, or it steps aside.

Each archive is read twice, once as ``TarTree`` reads it (fast path first) and once with the fast
path switched off; the trees must be equal member for member. Archives the fast path must not
decide (corrupt, bzip2, devices, odd pax records) must come back through the slow path unchanged.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from doctor.collect import collect
from doctor.errors import DoctorError
from doctor.sources import open_source
from doctor.sources import tree as tree_mod
from doctor.sources.fasttar import Fallback, Limits, decompress, index, inflated
from doctor.sources.tree import TarTree

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LONG = "sys/devices/pci0000:00/0000:00:01.0/" + "/".join(f"0000:{i:02x}:00.0" for i in range(1, 12)) + "/vendor"


def _archive(fmt: int, extra: list[tarfile.TarInfo] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as tf:
        def add(name: str, data: bytes | None = None, kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = kind, link, 1_700_000_000
            info.size = len(data or b"")
            tf.addfile(info, io.BytesIO(data) if data else None)

        add("snap", kind=tarfile.DIRTYPE)
        add("snap/proc/cmdline", b"BOOT_IMAGE=/vmlinuz ro\n")
        add("snap/proc/sys/kernel/hostname", b"node\n")
        add("snap/" + LONG, b"0x10de\n")  # over 100 characters: GNU long name or pax path
        # non-ASCII name: a pax header in PAX format (ustar cannot hold it)
        add("snap/etc/hello" if fmt == tarfile.USTAR_FORMAT else "snap/etc/h\u00e9llo", b"accented\n")
        add("snap/etc/empty", b"")
        add("snap/etc/hard", kind=tarfile.LNKTYPE, link="snap/proc/cmdline")
        target = "/" + LONG.rsplit("/", 1)[0]  # over 100 characters: GNU long link or pax linkpath
        add("snap/sys/bus/pci/devices/x", kind=tarfile.SYMTYPE,
            link=target[:40] if fmt == tarfile.USTAR_FORMAT else target)
        add("snap/etc/trailing/", kind=tarfile.DIRTYPE)
        for info in extra or []:
            tf.addfile(info)
    return buf.getvalue()


def _dump(t: TarTree) -> tuple[dict[str, Any], dict[str, list[str]]]:
    entries = t.entries()
    return ({k: (kind, t.read(k), target, too_large) for k, (kind, target, too_large) in entries.items()},
            {k: t.listdir(k) or [] for k, (kind, _, _) in entries.items() if kind == "dir"})


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = _dump(TarTree(str(path)))
    with monkeypatch.context() as m:
        m.setattr(TarTree, "_load_fast", lambda self, fh: False)
        slow = _dump(TarTree(str(path)))
    return fast, slow


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
@pytest.mark.parametrize("gz", [True, False])
def test_fast_tree_equals_the_tarfile_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: int,
                                           gz: bool) -> None:
    data = _archive(fmt)  # the long name: GNU long-name member, pax path, or ustar prefix
    path = tmp_path / ("s.tar.gz" if gz else "s.tar")
    # two gzip members, as fleets and appending collectors write them
    path.write_bytes(gzip.compress(data[:1024]) + gzip.compress(data[1024:]) if gz else data)
    fast, slow = _both(path, monkeypatch)
    assert fast == slow
    assert fast[0][LONG][1] == b"0x10de\n" and fast[0]["etc/hard"][1] == b"BOOT_IMAGE=/vmlinuz ro\n"


def test_a_collected_snapshot_reads_the_same_and_takes_the_fast_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "snap.tar.gz"
    collect(open_source(str(FIXTURES / "hgx-h100-sick")), str(out))
    fast, slow = _both(out, monkeypatch)
    assert fast == slow and len(fast[0]) > 100
    monkeypatch.setattr(TarTree, "_load", lambda self, fh: pytest.fail("slow path used"))
    TarTree(str(out))


def _slow_only(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path declines ``path``: the tarfile path reads it (and decides any refusal)."""
    calls: list[str] = []
    slow = TarTree._load

    def spy(self: TarTree, fh: Any) -> None:
        calls.append(path.name)
        slow(self, fh)

    with monkeypatch.context() as m:
        m.setattr(TarTree, "_load", spy)
        with contextlib.suppress(DoctorError):
            TarTree(str(path))
    assert calls == [path.name]


def test_what_the_fast_path_declines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tarfile.TarInfo("snap/dev/fifo")
    fifo.type = tarfile.FIFOTYPE
    cases = {
        "bz.tar.bz2": bz2.compress(_archive(tarfile.GNU_FORMAT)),
        "fifo.tar": _archive(tarfile.GNU_FORMAT, [fifo]),
        "padded.tar.gz": gzip.compress(_archive(tarfile.GNU_FORMAT)) + b"\0" * 512,
        "cut.tar.gz": gzip.compress(_archive(tarfile.GNU_FORMAT))[:-9],
        "noend.tar": _archive(tarfile.GNU_FORMAT).rstrip(b"\0"),
    }
    flipped = bytearray(_archive(tarfile.GNU_FORMAT))
    flipped[600] ^= 1  # a header byte: bad checksum
    cases["flipped.tar"] = bytes(flipped)
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        _slow_only(path, monkeypatch)
    # and the slow path still gives the same verdicts as before: read, or one-line refusal
    assert TarTree(str(tmp_path / "bz.tar.bz2")).read("proc/cmdline") == b"BOOT_IMAGE=/vmlinuz ro\n"
    assert TarTree(str(tmp_path / "padded.tar.gz")).read("proc/cmdline") == b"BOOT_IMAGE=/vmlinuz ro\n"
    for name in ("cut.tar.gz", "noend.tar", "flipped.tar"):
        with pytest.raises(DoctorError, match="truncated or corrupt"):
            TarTree(str(tmp_path / name))


def test_limits_send_archives_to_the_slow_path_which_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.tar.gz"
    path.write_bytes(gzip.compress(_archive(tarfile.GNU_FORMAT)))
    monkeypatch.setattr(tree_mod, "MAX_MEMBERS", 3)
    with pytest.raises(DoctorError, match="more than 3 members"):
        TarTree(str(path))
    monkeypatch.setattr(tree_mod, "MAX_MEMBERS", 200_000)
    monkeypatch.setattr(tree_mod, "MAX_PATH_DEPTH", 4)
    with pytest.raises(DoctorError, match="deeper than 4"):
        TarTree(str(path))


def test_decompress_and_members_decline_garbage() -> None:
    for raw in (b"", b"\x1f\x8b garbage", b"PK\x03\x04 zip", bytes(1024)):
        with pytest.raises(Fallback):
            index(decompress(raw), Limits(9, 1 << 20, 1 << 20, 1 << 20, 65536, 4096, lambda name: name))


@pytest.mark.parametrize("kept", [False, True], ids=["scratch-buffer", "one-call"])
def test_inflated_reuses_its_buffer_and_gives_each_archive_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   kept: bool) -> None:
    from doctor.sources import fasttar

    monkeypatch.setattr(fasttar, "_KEPT", kept)  # the allocator keeps large blocks: one call, no buffer
    big, small = _archive(tarfile.PAX_FORMAT) * 3, _archive(tarfile.GNU_FORMAT)
    for data, raw in ((big, gzip.compress(big)), (small, gzip.compress(small[:700]) + gzip.compress(small[700:])),
                      (small, small)):
        with inflated(raw) as view:
            assert bytes(view) == data == decompress(raw)
    with inflated(gzip.compress(big)) as view:
        kept = view[:10]  # a careless caller keeps a piece: the next archive gets another buffer
    with inflated(gzip.compress(b"Z" * 5000)) as view:
        assert bytes(view) == b"Z" * 5000 and bytes(kept) == big[:10]
    for raw in (gzip.compress(big)[:-9], gzip.compress(big) + b"junk", b"\x1f\x8b garbage"):
        with pytest.raises(Fallback), inflated(raw):
            pass


@pytest.mark.parametrize("library", ["zlib-ng", "zlib"])
def test_both_inflaters_give_the_same_bytes_and_refuse_the_same_streams(monkeypatch: pytest.MonkeyPatch,
                                                                       library: str) -> None:
    import zlib

    from doctor.sources import fasttar

    if library == "zlib":
        monkeypatch.setattr(fasttar, "_inflater", (zlib.decompressobj, zlib.error))
    else:
        pytest.importorskip("zlib_ng")
        monkeypatch.setattr(fasttar, "_inflater", None)
        assert fasttar.inflater()[0].__module__.startswith("zlib_ng")
    payload = bytes(range(256)) * 3000
    two = gzip.compress(payload) + gzip.compress(b"tail")  # two members, as concatenated gzips are
    assert decompress(two) == payload + b"tail"
    bad_crc = bytearray(gzip.compress(payload))
    bad_crc[-6] ^= 1
    for kept in (False, True):  # through the kept buffer, and in one call
        monkeypatch.setattr(fasttar, "_KEPT", kept)
        with inflated(two) as view:
            assert bytes(view) == payload + b"tail"
        for broken in (bytes(bad_crc), gzip.compress(payload)[:-9], gzip.compress(payload) + b"\0\0",
                       gzip.compress(payload) + b"junk"):
            with pytest.raises(Fallback):
                decompress(broken)
            with pytest.raises(Fallback), inflated(broken):
                pass


def test_a_stream_over_the_cap_is_left_to_the_slow_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.sources import fasttar

    payload = bytes(100_000)
    assert fasttar.gunzip(gzip.compress(payload), cap=len(payload)) == payload
    for raw in (gzip.compress(payload), gzip.compress(payload[:60_000]) + gzip.compress(payload[60_000:])):
        with pytest.raises(Fallback):
            fasttar.gunzip(raw, cap=len(payload) - 1)
        monkeypatch.setattr(fasttar, "FAST_MAX_BYTES", len(payload) - 1)
        for kept in (False, True):
            monkeypatch.setattr(fasttar, "_KEPT", kept)
            with pytest.raises(Fallback), inflated(raw):
                pass
        monkeypatch.undo()


def test_the_allocator_is_asked_to_keep_large_blocks_only_where_it_is_glibc() -> None:
    import os

    from doctor.sources import fasttar

    try:
        glibc = bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        glibc = False
    assert fasttar.keep_large_blocks() is glibc
    assert fasttar._KEPT is glibc


def _high_byte_header(shift: int) -> bytes:
    """A one-file ustar archive whose header holds 0xFF bytes (after the name's NUL, in the link target, owner
    names and padding: a byte sum above adler32's modulus) and whose checksum field claims its sum less ``shift``."""
    info = tarfile.TarInfo("snap/proc/cmdline")
    info.size, info.mtime = 3, 1_700_000_000
    info.uname = info.gname = "x"
    header = bytearray(info.tobuf(tarfile.USTAR_FORMAT))
    header[18:100] = b"\xff" * 82  # after the name's NUL
    header[157:257] = b"\xff" * 100  # a regular file's link target
    header[265:329] = b"\xff" * 64  # uname and gname
    header[500:512] = b"\xff" * 12  # the block's padding
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % (sum(header) - shift)
    return bytes(header) + b"ro\n".ljust(512, b"\0") + bytes(1024)


def test_checksums_of_headers_with_high_bytes() -> None:
    """A header's sum over adler32's modulus is checked exactly: one the checksum field claims 65,521 less
    (what the low half of one adler32 over the block could not tell apart) is declined, the right one read."""
    limits = Limits(9, 1 << 20, 1 << 20, 1 << 20, 65536, 4096, lambda name: name)
    assert sum(_high_byte_header(0)[:512]) > 65521
    found = index(_high_byte_header(0), limits)
    assert found.kinds == {"snap/proc/cmdline": "file"}
    with tarfile.open(fileobj=io.BytesIO(_high_byte_header(0))) as tf:
        assert tf.getnames() == ["snap/proc/cmdline"]
    with pytest.raises(Fallback):
        index(_high_byte_header(65521), limits)
    with pytest.raises(tarfile.ReadError), tarfile.open(fileobj=io.BytesIO(_high_byte_header(65521))):
        pass
