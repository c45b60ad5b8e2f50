"""Tarballs laid out exactly like one read before: the same headers but their time stamps.

A fleet's snapshots of one configuration are written the same way (``gnd collect``): the same
members in the same order with the same sizes, each header stamped with the node's own time (and
so its own checksum), a few files (host name, machine-id, the manifest) with other bytes. After a
tarball is read the usual way (:mod:`doctor.sources.fasttar`), its layout is kept: the header
offsets, and the tables of the tree built from it. A later tarball of the same length is cut with
one :class:`struct.Struct` into, per header, its time stamp, its checksum field and everything
from its type flag to the next header's time stamp; when every such segment equals the earlier
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

import struct
from collections.abc import Hashable
from itertools import compress
from operator import add, ne
from typing import Any

from doctor.sources.fasttar import Fallback, octal

#: layouts kept per process (a fleet worker meets a few configurations in turn)
KEEP = 4
_BLOCK = 512
_STAMP, _SUM, _TYPE = 136, 148, 156  # offsets of mtime, chksum and typeflag in a header
_CANONICAL = b"%06o\0 "  # how tarfile (and so gnd collect) writes a checksum


class Layout:
    """One tarball's layout: its header offsets and the tables of the tree read from it."""

    __slots__ = ("size", "limits", "blob", "heads", "files", "tables", "_struct", "_first", "_segments", "_bases")

    def __init__(self, blob: bytes, heads: list[int], files: dict[int, tuple[str, int]], tables: Any,
                 limits: Hashable) -> None:
        self.size = len(blob)
        self.limits = limits
        self.blob = blob
        self.heads = heads
        #: header index -> (name, data size) of each regular file whose tree entry holds its data
        self.files = files
        self.tables = tables
        self._struct: struct.Struct | None = None
        self._first = b""
        self._segments: tuple[bytes, ...] = ()
        self._bases: list[int] = []

    def _prepare(self) -> struct.Struct:
        """The cutter, this tarball's segments and each header's checksum less its time stamp (once)."""
        if self._struct is None:
            heads, size = self.heads, self.size
            ends = [h + _STAMP for h in heads[1:]] + [size]
            fmt = [f"<{_STAMP}s"] + [f"12s8s{end - h - _TYPE}s" for h, end in zip(heads, ends)]
            cutter = struct.Struct("".join(fmt))
            parts = cutter.unpack(self.blob)
            self._first, self._segments = parts[0], parts[3::3]
            self._bases = [octal(c) - sum(m) for m, c in zip(parts[1::3], parts[2::3])]
            self._struct = cutter
        return self._struct

    def changed_files(self, blob: bytes) -> list[tuple[str, int, int]] | None:
        """(name, data offset, size) of the files whose data differ in ``blob``, or ``None`` when
        ``blob`` is not this layout with other time stamps, checksums to match and file data."""
        parts = self._prepare().unpack(blob)
        if parts[0] != self._first:
            return None
        stamps, sums, segments = parts[1::3], parts[2::3], parts[3::3]
        bases = self._bases
        stamp_sums: dict[bytes, int] = {}
        try:
            for stamp in set(stamps):
                octal(stamp)  # what fasttar checks of every numeric field
                stamp_sums[stamp] = sum(stamp)
        except Fallback:
            return None
        if len(stamp_sums) == 1:
            expected = list(map(_CANONICAL.__mod__, map(stamp_sums[stamps[0]].__add__, bases)))
        else:  # pax headers are stamped 0 by tarfile
            expected = list(map(_CANONICAL.__mod__, map(add, bases, map(stamp_sums.__getitem__, stamps))))
        if expected != list(sums):  # a checksum written another way, or a wrong one
            try:
                for i in compress(range(len(bases)), map(ne, expected, sums)):
                    if octal(sums[i]) != bases[i] + stamp_sums[stamps[i]]:
                        return None
            except Fallback:
                return None
        out: list[tuple[str, int, int]] = []
        mine = self._segments
        for i in compress(range(len(mine)), map(ne, segments, mine)):
            file = self.files.get(i)
            if file is None:
                return None  # a header, link, directory or pax record differs
            name, length = file
            start = _BLOCK - _TYPE
            seg, ref = segments[i], mine[i]
            if seg[:start] != ref[:start] or seg[start + length:] != ref[start + length:]:
                return None  # its header, its padding or the next header's start differs
            out.append((name, self.heads[i] + _BLOCK, length))
        return out


_kept: list[Layout] = []


def recall(blob: bytes, limits: Hashable) -> tuple[Any, list[tuple[str, int, int]]] | None:
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
