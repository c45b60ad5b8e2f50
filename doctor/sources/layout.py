"""Tarballs laid out exactly like one read before: the same headers but their time stamps.

A fleet's snapshots of one configuration are written the same way (``gnd collect``): the same
members in the same order with the same sizes, each header stamped with the node's own time (and
so its own checksum), a few files (host name, machine-id, the manifest) with other bytes. After a
tarball is read the usual way (:mod:`doctor.sources.fasttar`), its layout is kept: the header
offsets, and the tables of the tree built from it. A later tarball of the same length is cut with
one :class:`struct.Struct` into, per header, its time stamp, its checksum field, the rest of the
header, the member's data and the next header's start; when every piece equals the earlier
tarball's except for the data of a few regular files, and every header's checksum is right for
its own time stamp, its tree is the earlier tree with those files' data replaced, which is exactly
what reading it member by member gives (no per-byte Python loop: the checksum is a plain byte sum,
so it is the earlier header's sum outside those 20 bytes plus the new time stamp's bytes).

Anything else (another length, a header or link or pax record that differs, a time stamp that is
not an octal number, a wrong checksum, limits changed since) is not decided here: the tarball is
read the usual way, which refuses what it must. At most :data:`KEEP` layouts are kept (the most
recently used), so memory stays flat however many archives a process reads.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Hashable
from itertools import compress
from operator import add, ne
from typing import Any

from doctor.sources.fasttar import Fallback, octal

#: layouts kept per process (a fleet worker meets a few configurations in turn)
KEEP = 4
_BLOCK = 512
_STAMP, _TYPE = 136, 156  # offsets of mtime (chksum follows it) and typeflag in a header
_CANONICAL = b"%06o\0 "  # how tarfile (and so gnd collect) writes a checksum
_CANONICAL_SUMS = re.compile(rb"(?:[0-7]{6}\0 )*")


class Layout:
    """One tarball's layout: its header offsets and the tables of the tree read from it."""

    __slots__ = ("size", "limits", "blob", "heads", "files", "tables", "_struct", "_first", "_fixed", "_data",
                 "_bases", "_base_digits", "_ones")

    def __init__(self, blob: bytes, heads: list[int], files: dict[int, tuple[str, int]], tables: Any,
                 limits: Hashable) -> None:
        self.size = len(blob)
        self.limits = limits
        self.blob: bytes | None = blob
        self.heads = heads
        #: header index -> (name, data size) of each regular file whose tree entry holds its data
        self.files = files
        self.tables = tables
        self._struct: struct.Struct | None = None
        self._first = b""
        self._fixed: tuple[tuple[bytes, ...], tuple[bytes, ...]] = ((), ())
        self._data: tuple[bytes, ...] = ()
        self._bases: list[int] = []
        self._base_digits = self._ones = 0

    def _prepare(self) -> struct.Struct:
        """The cutter, this tarball's pieces and each header's checksum less its time stamp (once).

        Per header the cutter gives five pieces: its time stamp, its checksum field, the rest of
        the header from the type flag, the member's data, and the next header's first 136 bytes
        (after the last member: the end-of-archive block). Padding after the data, and what follows
        the end-of-archive block, are skipped: no reader looks at them.
        """
        if self._struct is None:
            blob, heads = self.blob, self.heads
            assert blob is not None
            fmt = [f"<{_STAMP}s"]
            for i, h in enumerate(heads):
                size = octal(blob[h + 124:h + 136])
                data_end = h + _BLOCK + size
                if i + 1 < len(heads):
                    fmt.append(f"12s8s{_BLOCK - _TYPE}s{size}s{heads[i + 1] - data_end}x{_STAMP}s")
                else:
                    end = h + _BLOCK + -(-size // _BLOCK) * _BLOCK
                    fmt.append(f"12s8s{_BLOCK - _TYPE}s{size}s{end - data_end}x{_BLOCK}s{len(blob) - end - _BLOCK}x")
            cutter = struct.Struct("".join(fmt))
            parts = cutter.unpack(blob)
            self._first, self._fixed, self._data = parts[0], (parts[3::5], parts[5::5]), parts[4::5]
            self._bases = [octal(c) - sum(m) for m, c in zip(parts[1::5], parts[2::5])]
            # the same, one base-2**24 digit per header (sums stay under 2**18: no carries)
            self._base_digits = int.from_bytes(b"".join(b.to_bytes(3, "big") for b in self._bases), "big")
            self._ones = int.from_bytes(b"\0\0\1" * len(heads), "big")
            self._struct = cutter
            self.blob = None  # the tree's entries hold what they need of it
        return self._struct

    def changed_files(self, blob: bytes | memoryview) -> list[tuple[str, int, int]] | None:
        """(name, data offset, size) of the files whose data differ in ``blob``, or ``None`` when
        ``blob`` is not this layout with other time stamps, checksums to match and file data."""
        parts = self._prepare().unpack(blob)
        if parts[0] != self._first or (parts[3::5], parts[5::5]) != self._fixed:
            return None  # a header (name, size, type, link...) differs, or the end-of-archive block
        stamps, sums = parts[1::5], parts[2::5]
        bases = self._bases
        stamp_sums: dict[bytes, int] = {}
        try:
            for stamp in set(stamps):
                octal(stamp)  # what fasttar checks of every numeric field
                stamp_sums[stamp] = sum(stamp)
        except Fallback:
            return None
        joined = b"".join(sums)
        if _CANONICAL_SUMS.fullmatch(joined):
            # each field "dddddd\0 " read as one base-8**8 digit: all checksums at once
            found = int(b"00" + joined.replace(b"\0 ", b"00")[:-2], 8)
            if len(stamp_sums) == 1:
                wanted = stamp_sums[stamps[0]] * self._ones
            else:  # pax headers are stamped 0 by tarfile
                digit = {stamp: total.to_bytes(3, "big") for stamp, total in stamp_sums.items()}
                wanted = int.from_bytes(b"".join(map(digit.__getitem__, stamps)), "big")
            if found != self._base_digits + wanted:
                return None  # a wrong checksum
        else:  # a checksum written another way (or not a number)
            expected = list(map(_CANONICAL.__mod__, map(add, bases, map(stamp_sums.__getitem__, stamps))))
            try:
                for i in compress(range(len(bases)), map(ne, expected, sums)):
                    if octal(sums[i]) != bases[i] + stamp_sums[stamps[i]]:
                        return None
            except Fallback:
                return None
        out: list[tuple[str, int, int]] = []
        mine, heads, files = self._data, self.heads, self.files
        for i in compress(range(len(mine)), map(ne, parts[4::5], mine)):
            file = files.get(i)
            if file is None:
                return None  # the data of a pax or long-name header differs
            out.append((file[0], heads[i] + _BLOCK, file[1]))
        return out


_kept: list[Layout] = []


def recall(blob: bytes | memoryview, limits: Hashable) -> tuple[Any, list[tuple[str, int, int]]] | None:
    """The tables of a kept tree laid out like ``blob`` and the files whose data differ, or ``None``."""
    for i, layout in enumerate(_kept):
        if layout.size != len(blob) or layout.limits != limits:
            continue
        changed = layout.changed_files(blob)
        if changed is not None:
            if i:
                _kept.insert(0, _kept.pop(i))
            return layout.tables, changed
    return None


def remember(layout: Layout) -> None:
    """Keep ``layout`` (the most recent first, at most :data:`KEEP`)."""
    _kept.insert(0, layout)
    del _kept[KEEP:]


def forget() -> None:
    """Drop every kept layout (tests)."""
    _kept.clear()
