"""Tarballs laid out like one read before (``doctor/sources/layout.py``): the same tree, or no shortcut.

Each case reads a first node's snapshot, then a second archive of the same length: another node's
(other host name, other time stamps), or that one tampered with. The second must read exactly as it
reads in a fresh process (no layout kept): the same tree member for member, or the same one-line
refusal; the honest ones must take the shortcut (``recall`` gives a layout), the tampered ones not.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from doctor.errors import DoctorError
from doctor.sources import layout
from doctor.sources import tree as tree_mod
from doctor.sources.tree import TarTree
from tests.fleet.fleetgen import collector_tar, manifest
from tests.helpers import layout_hits, tar_outcome

LONG = "sys/devices/pci0000:00/0000:00:01.0/" + "/".join(f"0000:{i:02x}:00.0" for i in range(1, 12)) + "/vendor"
FILES = {"proc/cmdline": b"BOOT_IMAGE=/vmlinuz ro\n", "proc/sys/net/core/rmem_max": b"212992\n",
         LONG: b"0x10de\n", "etc/empty": b""}
LINKS = {"sys/bus/pci/devices/0000:3c:00.0": "../../../devices/pci0000:00/0000:3c:00.0",
         "sys/class/net/long": "/" + LONG.rsplit("/", 1)[0]}


def _node(host: str, when: int, **changed: bytes) -> bytes:
    files = {**FILES, "etc/hostname": f"{host}\n".encode(), **{k.replace("__", "/"): v for k, v in changed.items()}}
    return collector_tar(files, LINKS, manifest(host, when), when)


def _headers(tar: bytes) -> dict[str, int]:
    """Header offset of each member by name (the name field; pax headers under their own name)."""
    out: dict[str, int] = {}
    pos = 0
    while tar[pos:pos + 512] != bytes(512):
        out.setdefault(tar[pos:pos + 100].split(b"\0")[0].decode(), pos)
        size = int(tar[pos + 124:pos + 136].split(b"\0")[0].strip() or b"0", 8)
        pos += 512 + -(-size // 512) * 512
    return out


def _resum(buf: bytearray, head: int) -> None:
    buf[head + 148:head + 156] = b"        "
    buf[head + 148:head + 156] = b"%06o\0 " % sum(buf[head:head + 512])


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    layout.forget()
    yield
    layout.forget()


def _second(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, gz: bool = True) -> tuple[Any, bool]:
    """Read node A, then ``data``: see :func:`_read_after`."""
    first, second = tmp_path / "a.tar.gz", tmp_path / ("b.tar.gz" if gz else "b.tar")
    first.write_bytes(gzip.compress(_node("node-a", 1_700_000_001)))
    second.write_bytes(gzip.compress(data) if gz else data)
    return _read_paths_after(monkeypatch, first, second)


def _read_paths_after(monkeypatch: pytest.MonkeyPatch, first: Path, second: Path) -> tuple[Any, bool]:
    """Read ``first``, then ``second``: (its outcome, whether a kept layout made its tree); also checks
    the outcome is what a process that never read ``first`` gets."""
    layout.forget()
    alone = tar_outcome(second)
    layout.forget()
    TarTree(str(first))
    hits = layout_hits(monkeypatch)
    got = tar_outcome(second)
    assert got == alone
    return got, hits == [True]


def test_another_node_of_the_same_layout_takes_the_shortcut_and_reads_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (entries, children), hit = _second(tmp_path, monkeypatch, _node("node-b", 1_700_009_999))
    assert hit
    assert entries["etc/hostname"][1] == b"node-b\n" and entries[LONG][1] == b"0x10de\n"
    assert b'"hostname": "node-b"' in entries["gnd-manifest.json"][1]
    assert entries["sys/class/net/long"][2] == "/" + LONG.rsplit("/", 1)[0]
    assert "0000:3c:00.0" in children["sys/bus/pci/devices"]


def test_a_file_with_other_bytes_of_the_same_length_is_read_as_it_is(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = _node("node-b", 1_700_000_002, proc__sys__net__core__rmem_max=b"999999\n")
    (entries, _), hit = _second(tmp_path, monkeypatch, data, gz=False)
    assert hit and entries["proc/sys/net/core/rmem_max"][1] == b"999999\n"


def test_a_wrong_checksum_is_refused_after_a_node_of_that_layout(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["proc/cmdline"]
    buf[head + 150] = ord("7") if buf[head + 150] != ord("7") else ord("6")
    got, hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert not hit and got.startswith("refused: ") and "truncated or corrupt" in got


def test_a_wrong_checksum_among_headers_of_several_times_is_refused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    heads = _headers(bytes(buf))
    head = heads["proc/cmdline"]
    buf[head + 136:head + 148] = b"%011o\0" % 1_600_000_000
    _resum(buf, head)  # right for its own time
    other = heads["etc/hostname"]
    buf[other + 136:other + 148] = b"%011o\0" % 1_600_000_001  # a new time, the old checksum
    got, hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert not hit and got.startswith("refused: ")


def test_a_time_stamp_that_is_not_a_number_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["proc/cmdline"]
    buf[head + 136:head + 148] = b"zzzzzzzzzzz\0"
    _resum(buf, head)  # a checksum that matches the tampered header
    got, hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert not hit and got.startswith("refused: ")


def test_a_renamed_member_with_its_checksum_fixed_is_read_under_its_new_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["proc/cmdline"]
    buf[head:head + 12] = b"proc/cmdlinX"
    _resum(buf, head)
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert hit and "proc/cmdlinX" in entries and "proc/cmdline" not in entries


def test_a_pax_path_of_the_same_length_is_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tar = _node("node-b", 1_700_000_002)
    assert tar.count(LONG.encode()) == 1  # held in a pax extended header's data
    other = LONG[:-6] + "device"
    (entries, _), hit = _second(tmp_path, monkeypatch, tar.replace(LONG.encode(), other.encode()))
    assert not hit and entries[other][1] == b"0x10de\n" and LONG not in entries


def test_a_link_target_of_the_same_length_is_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["sys/bus/pci/devices/0000:3c:00.0"]
    old = b"../../../devices/pci0000:00/0000:3c:00.0"
    buf[head + 157:head + 157 + len(old)] = old.replace(b"3c", b"3d")
    _resum(buf, head)
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert hit and entries["sys/bus/pci/devices/0000:3c:00.0"][2].endswith("0000:3d:00.0")


def test_headers_stamped_with_different_times_still_take_the_shortcut(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["proc/cmdline"]
    buf[head + 136:head + 148] = b"%011o\0" % 1_600_000_000
    _resum(buf, head)
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert hit and entries["proc/cmdline"][1] == b"BOOT_IMAGE=/vmlinuz ro\n"


def _pax_head(tar: bytes) -> int:
    """Offset of the first pax extended header (tarfile stamps it 0, the members the node's time)."""
    pos = 0
    while tar[pos + 156:pos + 157] != b"x":
        size = int(tar[pos + 124:pos + 136].split(b"\0")[0].strip() or b"0", 8)
        pos += 512 + -(-size // 512) * 512
    assert tar[pos + 136:pos + 148] == b"%011o\0" % 0
    return pos


def test_a_wrong_checksum_on_a_pax_header_stamped_zero_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _pax_head(bytes(buf))
    buf[head + 150] = ord("7") if buf[head + 150] != ord("7") else ord("6")
    got, hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert not hit and got.startswith("refused: ")


def test_a_pax_header_stamped_with_the_node_time_reads_as_a_fresh_read(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _pax_head(bytes(buf))
    buf[head + 136:head + 148] = b"%011o\0" % 1_700_000_002
    _resum(buf, head)  # right for its own time: tarfile reads it
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert hit and entries[LONG][1] == b"0x10de\n"


def test_a_checksum_field_that_reads_right_only_digit_by_digit_is_refused(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # a kernel command line (on both nodes) and time whose checksum of proc/cmdline ends in "00":
    # "dddd00\0 " written "dddd\0 00" has the same digits once its NUL and space are taken out, but
    # tarfile reads "dddd" (a wrong checksum)
    found = next((extra, when) for extra in range(64) for when in range(1_700_000_002, 1_700_000_066)
                 if (buf := bytearray(_node("node-b", when, proc__cmdline=b"x" * extra)))
                 [(head := _headers(bytes(buf))["proc/cmdline"]) + 152:head + 154] == b"00")
    buf = bytearray(_node("node-b", found[1], proc__cmdline=b"x" * found[0]))
    head = _headers(bytes(buf))["proc/cmdline"]
    buf[head + 152:head + 156] = b"\0 00"
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    first.write_bytes(_node("node-a", 1_700_000_001, proc__cmdline=b"x" * found[0]))
    second.write_bytes(bytes(buf))
    got, hit = _read_paths_after(monkeypatch, first, second)
    assert not hit and got.startswith("refused: ")


def test_a_checksum_written_another_valid_way_is_accepted_like_tarfile_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    head = _headers(bytes(buf))["proc/cmdline"]
    value = int(bytes(buf[head + 148:head + 154]), 8)
    buf[head + 148:head + 156] = b"%07o\0" % value  # GNU tar's way: 7 digits and a NUL (the field counts as spaces)
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf))
    assert hit and entries["proc/cmdline"][1] == b"BOOT_IMAGE=/vmlinuz ro\n"


def test_padding_and_what_follows_the_end_block_are_ignored_as_readers_ignore_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = bytearray(_node("node-b", 1_700_000_002))
    buf[-1] = 1  # past the end-of-archive block
    buf[_headers(bytes(buf))["proc/cmdline"] + 512 + 100] = 1  # the padding after the member's 23 bytes
    (entries, _), hit = _second(tmp_path, monkeypatch, bytes(buf), gz=False)
    assert hit and entries["proc/cmdline"][1] == b"BOOT_IMAGE=/vmlinuz ro\n"


def test_a_changed_end_of_archive_block_gets_no_shortcut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tar = _node("node-b", 1_700_000_002)
    heads = _headers(tar)
    last = max(heads.values())
    size = int(tar[last + 124:last + 136].split(b"\0")[0].strip() or b"0", 8)
    end = last + 512 + -(-size // 512) * 512
    buf = bytearray(tar)
    buf[end + 5] = 1  # not a zero block any more: the reader takes it for a header
    got, hit = _second(tmp_path, monkeypatch, bytes(buf), gz=False)
    assert not hit and got.startswith("refused: ")


def test_limits_changed_since_are_applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    first.write_bytes(_node("node-a", 1_700_000_001))
    second.write_bytes(_node("node-b", 1_700_000_002))
    TarTree(str(first))
    monkeypatch.setattr(tree_mod, "MAX_MEMBERS", 5)
    with pytest.raises(DoctorError, match="more than 5 members"):
        TarTree(str(second))


def test_a_tree_from_a_layout_differs_from_its_reference_where_a_full_comparison_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_mod._Reference, "_kept", [])
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    a.write_bytes(_node("node-a", 1_700_000_001))
    b.write_bytes(_node("node-b", 1_700_000_002, proc__cmdline=b"BOOT_IMAGE=/vmlinuz rw\n"))
    first = TarTree(str(a))
    first.match_reference()
    second = TarTree(str(b))
    assert second._like is not None  # read through the layout of a.tar
    second.match_reference()
    ref = first._base
    assert ref is not None and second._base is ref
    limit = max(64, len(second._entries) // 10)
    assert second._delta == ref.delta(second._entries, second._children, limit)
    assert second._delta == {"etc/hostname", "gnd-manifest.json", "proc/cmdline"}


def test_layouts_kept_are_bounded(tmp_path: Path) -> None:
    for i in range(layout.KEEP + 3):
        path = tmp_path / f"n{i}.tar"
        path.write_bytes(_node("node-a", 1_700_000_000 + i, **{f"etc__pad{j}": b"p" for j in range(i + 1)}))
        TarTree(str(path))
    assert len(layout._kept) == layout.KEEP


# ---- members whose size differs from node to node (interrupt counts, free memory, GPU readings) ----


def test_a_file_of_another_size_is_learnt_and_read_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _node("node-bb", 1_700_000_002, proc__cmdline=b"BOOT_IMAGE=/vmlinuz ro quiet " + b"x" * 700 + b"\n")
    (entries, _), hit = _second(tmp_path, monkeypatch, data)
    assert hit and entries["proc/cmdline"][1].endswith(b"x\n") and entries["etc/hostname"][1] == b"node-bb\n"
    assert entries[LONG][1] == b"0x10de\n"  # a member after the moved ones


def test_later_nodes_cut_around_the_learnt_members(tmp_path: Path) -> None:
    paths = []
    for i, host in enumerate(("a", "bb", "ccc", "dddd")):
        path = tmp_path / f"{host}.tar"
        path.write_bytes(_node(host, 1_700_000_000 + i, proc__cmdline=b"ro " * (i * 90) + b"\n"))
        paths.append(path)
    alone = []
    for path in paths:
        layout.forget()
        alone.append(tar_outcome(path))
    layout.forget()
    assert [tar_outcome(p) for p in paths] == alone
    assert len(layout._kept) == 1  # one layout, its hostname, manifest and cmdline members volatile
    volatile = layout._kept[0].volatile
    assert len(volatile) == 3
    for path in paths[1:]:
        data = path.read_bytes()
        assert layout._kept[0].changed_files(data, learn=False) is not None


def _tamper_moved(mutate: Any) -> bytes:
    """Node B with a longer cmdline (later headers move), then ``mutate(buf, cmdline_header)``."""
    buf = bytearray(_node("node-b", 1_700_000_002, proc__cmdline=b"BOOT_IMAGE=/vmlinuz ro " + b"y" * 600 + b"\n"))
    mutate(buf, _headers(bytes(buf))["proc/cmdline"])
    return bytes(buf)


def test_a_wrong_checksum_on_a_member_of_another_size_is_refused(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong_sum(buf: bytearray, head: int) -> None:
        buf[head + 150] = ord("7") if buf[head + 150] != ord("7") else ord("6")

    got, hit = _second(tmp_path, monkeypatch, _tamper_moved(wrong_sum))
    assert not hit and got.startswith("refused: ") and "truncated or corrupt" in got


def test_a_size_that_points_past_the_archive_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def huge(buf: bytearray, head: int) -> None:
        buf[head + 124:head + 136] = b"%011o\0" % (len(buf) * 4)
        _resum(buf, head)

    got, hit = _second(tmp_path, monkeypatch, _tamper_moved(huge), gz=False)
    assert not hit and got.startswith("refused: ")


def test_a_renamed_member_of_another_size_is_read_under_its_new_name(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def rename(buf: bytearray, head: int) -> None:
        buf[head:head + 12] = b"proc/cmdlinX"
        _resum(buf, head)

    (entries, _), hit = _second(tmp_path, monkeypatch, _tamper_moved(rename))
    assert hit and "proc/cmdlinX" in entries and "proc/cmdline" not in entries


def test_a_member_grown_past_the_file_limit_reads_as_too_large(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_mod, "MAX_FILE_BYTES", 400)
    (entries, _), hit = _second(tmp_path, monkeypatch, _tamper_moved(lambda buf, head: None))
    assert not hit and entries["proc/cmdline"][3] is True  # too large, as a fresh read says


def test_growth_past_the_held_bytes_limit_is_refused_as_a_fresh_read_refuses(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    held = sum(len(v) for v in FILES.values()) + 200  # node A fits, node B (600 more bytes) does not
    monkeypatch.setattr(tree_mod, "MAX_TAR_BYTES", held + len(manifest("node-a", 1_700_000_001)))
    got, hit = _second(tmp_path, monkeypatch, _tamper_moved(lambda buf, head: None))
    assert not hit and got.startswith("refused: ") and "limit" in got


# ---- members under other names: process directories of other pids, other link targets ----


def _read_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: bytes, second: bytes) -> tuple[Any, bool]:
    """Read the tar bytes ``first``, then ``second``: see :func:`_read_paths_after`."""
    a, b = tmp_path / "first.tar", tmp_path / "second.tar"
    a.write_bytes(first)
    b.write_bytes(second)
    return _read_paths_after(monkeypatch, a, b)


def _procs(pids: dict[int, bytes], when: int = 1_700_000_001, **extra: bytes) -> bytes:
    files = dict(FILES)
    for pid, cmd in pids.items():
        files[f"proc/{pid}/cmdline"] = cmd
        files[f"proc/{pid}/status"] = b"Name:\tpython3\nPid:\t%d\n" % pid
    files.update({k.replace("__", "/"): v for k, v in extra.items()})
    return collector_tar(files, {**LINKS, "proc/self": str(min(pids))}, manifest("node", when), when)


def test_processes_under_other_pids_take_the_shortcut_and_read_the_same(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    first = _procs({4242: b"vllm\0serve\0", 4318: b"worker\0"})
    second = _procs({9120: b"vllm\0serve\0--enforce-eager\0", 10007: b"worker\0"}, 1_700_000_777)  # order changes
    (entries, children), hit = _read_after(tmp_path, monkeypatch, first, second)
    assert hit
    assert entries["proc/9120/cmdline"][1] == b"vllm\0serve\0--enforce-eager\0"
    assert entries["proc/self"][2] == "9120" and "proc/4242" not in entries
    assert children["proc"] == sorted(["9120", "10007", "cmdline", "self", "sys"])


def test_the_memo_delta_of_a_renamed_tree_covers_every_path_a_full_comparison_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tree_mod._Reference, "_kept", [])
    a, b = tmp_path / "a.tar", tmp_path / "b.tar"
    a.write_bytes(_procs({4242: b"vllm\0"}))
    b.write_bytes(_procs({5001: b"vllm\0"}, 1_700_000_002))
    first = TarTree(str(a))
    first.match_reference()
    second = TarTree(str(b))
    assert second._like is not None
    second.match_reference()
    ref = first._base
    assert ref is not None and second._base is ref and second._delta is not None
    full = ref.delta(second._entries, second._children, 10_000)
    assert full is not None and full <= second._delta and "proc/5001/cmdline" in full


@pytest.mark.parametrize("case", ["child keeps the old name", "collides", "escapes", "absolute"])
def test_renames_that_are_not_a_plain_rename_read_as_a_fresh_read_does(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    first = _procs({4242: b"vllm\0", 4318: b"worker\0"})
    buf = bytearray(_procs({4242: b"vllm\0", 4318: b"worker\0"}, 1_700_000_002))
    heads = _headers(bytes(buf))
    if case == "child keeps the old name":
        head, new = heads["proc/4242/"], b"proc/4243/"  # the directory alone: its files keep proc/4242/
    elif case == "collides":
        head, new = heads["proc/4318/status"], b"proc/4318/cmdline"
    elif case == "escapes":
        head, new = heads["proc/4318/status"], b"proc/../../x"
    else:
        head, new = heads["proc/4318/status"], b"/etc/shadowx"
    buf[head:head + 100] = new.ljust(100, b"\0")
    _resum(buf, head)
    got, hit = _read_after(tmp_path, monkeypatch, first, bytes(buf))
    assert not hit
    if case in ("escapes", "absolute"):
        assert got.startswith("refused: ") and "unsafe tarball" in got


def test_random_renames_resizes_and_rewrites_read_exactly_as_a_fresh_read(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    rng = random.Random(15)
    base = {4242: b"vllm\0", 4318: b"worker\0", 4327: b"worker\0"}
    first = _procs(base)
    hits = 0
    for case in range(40):
        pids = {rng.choice([p, p + rng.randrange(1, 90_000)]): c + b"x" * rng.randrange(0, 3) * 300
                for p, c in base.items()}
        extra = {"proc__cmdline": b"BOOT_IMAGE=/vmlinuz " + b"q" * rng.randrange(0, 900)} if rng.random() < 0.5 else {}
        tar = bytearray(_procs(pids, 1_700_000_000 + case, **extra))
        if rng.random() < 0.3:  # a byte flipped somewhere: a header, data or padding
            tar[rng.randrange(0, len(tar) - 1024)] ^= 1 << rng.randrange(8)
        got, hit = _read_after(tmp_path, monkeypatch, first, bytes(tar))
        hits += hit
    assert hits >= 15  # most are plain renames and resizes, which the layout takes


def _plain_tar(members: list[tuple[str, bytes | None]], when: int) -> bytes:
    """A tar of these members in this order (``None``: a directory), with no directory added for
    them: a directory no member names is made by the reader (as ``gnd collect`` leaves ``commands``)."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = when
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            else:
                info.size, info.mode = len(data), 0o644
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _collected(pid: int, when: int, tool: str = "commands/lspci") -> bytes:
    return _plain_tar([("proc", None), (f"proc/{pid}", None), ("commands/nvidia-smi", b"smi\n"),
                       (tool, b"lspci\n"), (f"proc/{pid}/cmdline", b"gnd\0collect\0"),
                       (f"proc/{pid}/status", b"Pid:\t%d\n" % pid)], when)


def test_renames_beside_a_directory_no_member_names_take_the_shortcut(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (entries, children), hit = _read_after(tmp_path, monkeypatch, _collected(22692, 1_700_000_001),
                                           _collected(22771, 1_700_000_002))
    assert hit and entries["commands"][0] == tree_mod.DIR and "22771" in children["proc"]


def test_a_rename_that_would_leave_an_implicit_directory_empty_reads_as_a_fresh_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _plain_tar([("etc", None), ("etc/a", b"1"), ("opt/x/f", b"2")], 1_700_000_001)  # opt, opt/x implicit
    second = _plain_tar([("etc", None), ("etc/a", b"1"), ("etc/f__", b"2")], 1_700_000_002)
    (entries, _), hit = _read_after(tmp_path, monkeypatch, first, second)
    assert not hit and "opt/x" not in entries and "etc/f__" in entries


# ---- files whose data differ from node to node (host name, manifest): holes in a run's in-place check ----


def _after_two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes) -> tuple[Any, bool, int]:
    """Read nodes A and B (which differ in their host name and manifest: the layout learns those files
    as holes), then ``data``: (its outcome, whether a kept layout made its tree, how many runs the
    in-place check passed); the outcome must be what a fresh process gets."""
    a, b, c = tmp_path / "a.tar", tmp_path / "b.tar", tmp_path / "c.tar"
    a.write_bytes(_node("node-a", 1_700_000_001))
    b.write_bytes(_node("node-b", 1_700_000_002))
    c.write_bytes(data)
    layout.forget()
    alone = tar_outcome(c)
    layout.forget()
    TarTree(str(a))
    TarTree(str(b))
    (kept,) = layout._kept
    assert {kept.files[i][0] for i in kept.holes} == {"etc/hostname", "gnd-manifest.json"}
    passed: list[bool] = []
    same = layout._Run.same

    def spy_same(run: Any, data: bytes, pos: int) -> Any:
        got = same(run, data, pos)
        passed.append(got is not None)
        return got

    monkeypatch.setattr(layout._Run, "same", spy_same)
    hits = layout_hits(monkeypatch)
    got = tar_outcome(c)
    assert got == alone
    return got, hits == [True], sum(passed)


def test_a_third_node_is_checked_in_place_with_its_own_host_name(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (entries, _), hit, passed = _after_two(tmp_path, monkeypatch, _node("node-c", 1_700_054_321))
    assert hit and passed == 1  # one run, nothing cut
    assert entries["etc/hostname"][1] == b"node-c\n" and b'"hostname": "node-c"' in entries["gnd-manifest.json"][1]
    assert entries["proc/cmdline"][1] == b"BOOT_IMAGE=/vmlinuz ro\n"


def test_a_hole_with_the_layout_data_reads_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (entries, _), hit, passed = _after_two(tmp_path, monkeypatch, _node("node-a", 1_700_000_003))
    assert hit and passed == 1 and entries["etc/hostname"][1] == b"node-a\n"


def test_another_file_with_other_data_is_found_by_the_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _node("node-c", 1_700_000_003, proc__sys__net__core__rmem_max=b"999999\n")
    (entries, _), hit, passed = _after_two(tmp_path, monkeypatch, data)
    assert hit and passed == 0 and entries["proc/sys/net/core/rmem_max"][1] == b"999999\n"
    assert len(layout._kept[0].holes) == 3  # learnt: the next node's runs take it as it is


def _tampered_third(mutate: Any) -> bytes:
    buf = bytearray(_node("node-c", 1_700_000_003))
    mutate(buf, _headers(bytes(buf)))
    return bytes(buf)


def _flip(buf: bytearray, at: int) -> None:
    buf[at] = ord("7") if buf[at] != ord("7") else ord("6")


@pytest.mark.parametrize("case", ["hole checksum", "other checksum", "hole size", "hole mode", "hole stamp",
                                  "hole padding", "hole name", "end block", "pax stamp"])
def test_a_tampered_third_node_reads_as_a_fresh_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     case: str) -> None:
    def mutate(buf: bytearray, heads: dict[str, int]) -> None:
        hole, other = heads["etc/hostname"], heads["proc/cmdline"]
        if case == "hole checksum":
            _flip(buf, hole + 150)
        elif case == "other checksum":
            _flip(buf, other + 150)
        elif case == "hole size":  # one byte more: the data would run into the padding
            buf[hole + 124:hole + 136] = b"%011o\0" % 8
            _resum(buf, hole)
        elif case == "hole mode":
            buf[hole + 100:hole + 108] = b"0000600\0"
            _resum(buf, hole)
        elif case == "hole stamp":
            buf[hole + 136:hole + 148] = b"zzzzzzzzzzz\0"
            _resum(buf, hole)
        elif case == "hole padding":
            buf[hole + 512 + 100] = 1
        elif case == "hole name":
            buf[hole:hole + 12] = b"etc/hostnamX"
            _resum(buf, hole)
        elif case == "end block":  # not a zero block any more: the reader takes it for a header
            last = max(heads.values())
            size = int(buf[last + 124:last + 136].split(b"\0")[0].strip() or b"0", 8)
            buf[last + 512 + -(-size // 512) * 512 + 5] = 1
        elif case == "pax stamp":
            pax = _pax_head(bytes(buf))
            buf[pax + 136:pax + 148] = b"%011o\0" % 1_700_000_003
            _resum(buf, pax)  # right for its own time: tarfile reads it
    got, hit, _ = _after_two(tmp_path, monkeypatch, _tampered_third(mutate))
    if case in ("hole checksum", "other checksum", "hole stamp", "end block"):
        assert not hit and isinstance(got, str) and got.startswith("refused: ")
        return
    entries = got[0]
    # padding is ignored as readers ignore it, a file's size may differ (it is learnt), a plain member
    # may be renamed, a pax header may carry the node's time: the shortcut; another mode: member by member
    assert hit == (case != "hole mode")
    if case == "hole size":
        assert entries["etc/hostname"][1] == b"node-c\n\0"
    elif case == "hole name":
        assert entries["etc/hostnamX"][1] == b"node-c\n" and "etc/hostname" not in entries
    else:
        assert entries["etc/hostname"][1] == b"node-c\n"
