"""Tarballs laid out like one read before: the same headers but their time stamps and a few sizes.

A fleet's snapshots of one configuration are written the same way (``gnd collect``): the same
members in the same order, each header stamped with the node's own time (and so its own
checksum), a few files (host name, machine-id, the manifest) with other bytes, and a few whose
size differs from node to node (interrupt counts, free memory, GPU readings). After a tarball is
read the usual way (:mod:`doctor.sources.fasttar`), its layout is kept: each header's pieces, the
members' data, and the tables of the tree built from it.

A later tarball is cut in *runs*: members whose size never differed are cut with one
:class:`struct.Struct` per run into, per header, its time stamp, its checksum field, the rest of
the header, the member's data and the next header's start; between runs, each member whose size
differed on an earlier node (a *volatile* member, always a regular file) is read header by header.
When every piece equals the earlier tarball's except for the time stamps and the data (and sizes)
of regular files, and every header's checksum is right for its own bytes, the tree is the earlier
tree with those files' data replaced, which is exactly what reading it member by member gives (no
per-byte Python loop for the runs: the checksum is a plain byte sum, so it is the earlier header's
sum outside the time stamp and checksum fields plus the new time stamp's bytes).

Before cutting, a run is checked in place (:meth:`_Run.same`): when its headers carry one time stamp
(pax headers keeping theirs) and checksums written as tarfile writes them, the run's expected bytes
(the layout's pieces with that stamp and those checksums) are joined and compared with the archive
in one go, no piece cut. Files whose data (not size) differed on an earlier node (host name,
machine-id, the manifest: *holes*) are taken there as the archive has them and compared on their
own. Anything else in the run (another file's data, padding, a checksum written another way) makes
the run cut as above, which decides; a file found there with other data becomes a hole.

When the cut fails, the tarball is walked once header by header beside the kept layout: if the
only differences are the sizes of some regular files, those members become volatile and the cut is
tried again. Anything else (a header, link or pax record that differs, a time stamp or size that is
not an octal number, a wrong checksum, limits changed since) is not decided here: the tarball is
read the usual way, which refuses what it must. At most :data:`KEEP` layouts are kept (the most
recently used), so memory stays flat however many archives a process reads.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import compress
from operator import add, ne
from typing import Any

from doctor.sources.fasttar import Fallback, octal
from doctor.sources.fasttar import text as _text

#: layouts kept per process (a fleet worker meets a few configurations in turn)
KEEP = 4
_BLOCK = 512
_HEAD = 136  # a header's first bytes up to its time stamp (name, mode, ids, size)
_SIZE = 124  # offset of the size field (the first _SIZE bytes hold name, mode and ids)
_STAMP, _TYPE = 136, 156  # offsets of mtime (chksum follows it) and typeflag in a header
_REST = 512 - 156  # a header's bytes from its type flag
_CANONICAL = b"%06o\0 "  # how tarfile (and so gnd collect) writes a checksum
_CANONICAL_SUMS = re.compile(rb"(?:[0-7]{6}\0 )*")
_OCTAL = b"01234567\0 "
_PLAIN_STAMP = re.compile(rb"[0-7]{11}\0")  # how tarfile writes a time stamp
_END = bytes(_BLOCK)
_NAME, _LINK, _MAGIC, _PREFIX = 100, 157, 257, 345  # ends of the name field; link, magic and prefix fields
_EXTENDED = (b"x", b"L", b"K", b"g")  # headers whose data name or describe the next member
_KINDS = {b"0": "file", b"\0": "file", b"5": "dir", b"2": "symlink"}


def _padded(size: int) -> int:
    return -(-size // _BLOCK) * _BLOCK


def _checksums_ok(stamps: Sequence[bytes], sums: Sequence[bytes], bases: Sequence[int], base_digits: int,
                  ones: int) -> bool:
    """Whether each checksum field in ``sums`` is its header's base (byte sum outside the time stamp
    and checksum fields, spaces counted for the latter) plus the sum of its time stamp."""
    stamp_sums: dict[bytes, int] = {}
    try:
        for stamp in set(stamps):
            octal(stamp)  # what fasttar checks of every numeric field
            stamp_sums[stamp] = sum(stamp)
    except Fallback:
        return False
    if not sums:
        return True
    joined = b"".join(sums)
    if _CANONICAL_SUMS.fullmatch(joined):
        # each field "dddddd\0 " read as one base-8**8 digit: all checksums at once
        found = int(b"00" + joined.replace(b"\0 ", b"00")[:-2], 8)
        if len(stamp_sums) == 1:
            wanted = stamp_sums[stamps[0]] * ones
        else:  # pax headers are stamped 0 by tarfile
            digit = {stamp: total.to_bytes(3, "big") for stamp, total in stamp_sums.items()}
            wanted = int.from_bytes(b"".join(map(digit.__getitem__, stamps)), "big")
        return found == base_digits + wanted
    # a checksum written another way (or not a number)
    expected = list(map(_CANONICAL.__mod__, map(add, bases, map(stamp_sums.__getitem__, stamps))))
    try:
        for i in compress(range(len(bases)), map(ne, expected, sums)):
            if octal(sums[i]) != bases[i] + stamp_sums[stamps[i]]:
                return False
    except Fallback:
        return False
    return True


class _Fields(dict):  # type: ignore[type-arg]
    """Checksum fields as tarfile writes them, by value (made once; the runs' lists share them)."""

    def __missing__(self, value: int) -> bytes:
        field = self[value] = _CANONICAL % value
        return field


_FIELDS = _Fields()


class _Run:
    """Members ``first``..``stop - 1`` of a layout, none of them volatile, cut with one struct.

    Per header the cutter gives three pieces: its time stamp, its checksum field, and everything up
    to the next header's time stamp (the rest of the header from the type flag, the member's data,
    its padding and the next header's first 136 bytes; after the run's last member, up to the end of
    its padding). Few objects per member, each compared with the earlier archive's in one go; where
    one differs, it is compared part by part (padding is ignored there: no reader looks at it).
    """

    __slots__ = ("first", "stop", "cutter", "head", "gaps", "bases", "base_digits", "ones", "span", "stamps",
                 "common", "at", "fixed", "written", "pieces", "stamp_at", "kept", "holes")

    def __init__(self, layout: Layout, first: int, stop: int, common: bytes) -> None:
        """``common``: the time stamp most of the layout's headers have."""
        heads, sizes = layout.heads, layout.sizes
        fmt = [f"<{_HEAD}s"]
        gaps = layout.gaps
        # each header's piece in this run (the last one's stops before the next header's start)
        mine = list(gaps[first:stop])
        if stop < len(gaps):
            mine[-1] = mine[-1][:-_HEAD]
        for gap in mine:
            fmt.append(f"12s8s{len(gap)}s")
        self.first, self.stop = first, stop
        self.cutter = struct.Struct("".join(fmt))
        self.head = layout.start(first)
        self.gaps = tuple(gaps[first:stop])  # the layout's (the last one with the next header's start)
        #: the run's bytes as a list, the time stamps and checksum fields left to fill (see :meth:`same`)
        self.pieces: list[bytes] = [self.head]
        for gap in mine:
            self.pieces += (b"", b"", gap)
        #: the files whose data differed on an earlier node (not their size): per file, its place in
        #: :attr:`pieces`, its data's offset from the run's start, its size, its piece before and after
        #: its data, its data in the layout's archive and its header index
        self.holes = [(3 * (i - first) + 3, heads[i] + _BLOCK - heads[first], sizes[i], mine[i - first][:_REST],
                       mine[i - first][_REST + sizes[i]:], layout.data(i), i)
                      for i in sorted(layout.holes) if first <= i < stop]
        self.bases = layout.bases[first:stop]
        # the same, one base-2**24 digit per header (sums stay under 2**18: no carries)
        self.base_digits = int.from_bytes(b"".join(b.to_bytes(3, "big") for b in self.bases), "big")
        self.ones = int.from_bytes(b"\0\0\1" * (stop - first), "big")
        self.span = heads[stop - 1] + _BLOCK + _padded(sizes[stop - 1]) - heads[first]
        # the time stamps: the archive's most common one (the node's time), which a later archive may
        # have another of, and the others (pax headers are stamped 0), which it must have as they are
        olds = layout.stamps[first:stop]
        self.common = common
        self.at = olds.index(self.common) if self.common in olds else 0
        #: the offset of header ``at``'s time stamp from the run's start
        self.stamp_at = heads[first + self.at] - heads[first] + _STAMP
        self.stamps: bytes | None = None
        if all(map(_PLAIN_STAMP.fullmatch, set(olds))):  # then each 12 bytes of the joined stamps are one
            self.stamps = b"".join(olds)
            #: per header, the byte sum of the stamp it keeps (None: it has the node's time)
            self.fixed = [None if x == self.common else sum(x) for x in olds]
            #: the headers that keep their stamp (pax headers: 0), and that stamp
            self.kept = [(k, x) for k, x in enumerate(olds) if x != self.common]
            #: the checksum fields as tarfile writes them, by the byte sum of the node's time stamp
            self.written: dict[int, list[bytes]] = {}

    def _written(self, total: int) -> list[bytes]:
        """Each header's checksum field as tarfile writes it when the node's time stamp sums to ``total``
        (a time stamp's digits sum to one of a few dozen values: each one's are made once)."""
        written = self.written.get(total)
        if written is None:
            if len(self.written) >= 32:
                self.written.clear()
            if len(_FIELDS) >= 1 << 16:
                _FIELDS.clear()
            written = list(map(_FIELDS.__getitem__, map(total.__add__, self.bases)))
            for k, kept in self.kept:
                written[k] = _FIELDS[self.bases[k] + sum(kept)]
            self.written[total] = written
        return written

    def same(self, data: bytes, pos: int) -> list[tuple[int, int]] | None:
        """Whether ``data`` holds at ``pos`` this run's bytes with every header stamped with one time
        (pax headers keeping theirs), each checksum written as tarfile writes it for that time, and
        other data in its holes only: the expected bytes are joined and compared in one go, nothing
        cut. Then (header index, data offset) of each hole whose data differ from the layout's;
        ``None`` says nothing: the run is then cut (:meth:`checksums_ok`, the pieces one by one)."""
        if self.stamps is None:
            return None
        stamp = data[pos + self.stamp_at:pos + self.stamp_at + 12]
        if stamp != self.common and not _PLAIN_STAMP.fullmatch(stamp):
            return None  # not eleven octal digits: fasttar's checks of a number are the cut's
        pieces = self.pieces.copy()
        stamps = [stamp] * (self.stop - self.first)
        for k, kept in self.kept:
            stamps[k] = kept
        pieces[1::3] = stamps
        pieces[2::3] = self._written(sum(stamp))
        changed = []
        for at, offset, size, before, after, old, i in self.holes:
            start = pos + offset
            if not data.startswith(old, start):
                pieces[at] = before + data[start:start + size] + after
                changed.append((i, start))
        return changed if data.startswith(b"".join(pieces), pos) else None

    def checksums_ok(self, stamps: tuple[bytes, ...], sums: tuple[bytes, ...]) -> bool:
        """Whether each header's checksum field is right for its bytes (see :func:`_checksums_ok`);
        at once when every header has the same time stamp and a checksum written as tarfile writes it
        (what ``gnd collect`` writes)."""
        joined = b"".join(sums)
        if self.stamps is not None:
            stamp = stamps[self.at]
            wanted = self.stamps if stamp == self.common else self.stamps.replace(self.common, stamp)
            if b"".join(stamps) == wanted:
                try:
                    octal(stamp)  # what fasttar checks of every numeric field (the others were checked before)
                except Fallback:
                    return False
                # a checksum is its header's base plus its stamp's sum
                if joined == b"".join(self._written(sum(stamp))):
                    return True
                if _canonical(joined, len(sums)):
                    return False  # written that way, but a value differs: a wrong checksum
        return _checksums_ok(stamps, sums, self.bases, self.base_digits, self.ones)


def _canonical(joined: bytes, count: int) -> bool:
    """Whether ``joined`` is ``count`` checksum fields each written ``"%06o\0 "`` (six octal digits, a
    NUL and a space), as :data:`_CANONICAL_SUMS` matches, without a per-byte loop."""
    return len(joined) == 8 * count and joined[6::8] == b"\0" * count and joined[7::8] == b" " * count \
        and joined.count(0) == count and joined.count(32) == count and not joined.translate(None, _OCTAL)


class Layout:
    """One tarball's layout: its headers' pieces, its members' data and the tables of its tree."""

    __slots__ = ("limits", "heads", "files", "tables", "caps", "totals", "members", "implicit", "volatile", "wild", "sizes",
                 "head", "gaps", "stamps", "bases", "_runs", "_parts", "holes")

    def __init__(self, blob: bytes, heads: list[int], files: dict[int, tuple[str, int]], tables: Any,
                 limits: Hashable, caps: tuple[int, int, int] | None = None,
                 totals: tuple[int, int] | None = None, members: dict[int, tuple[str, str]] | None = None,
                 implicit: frozenset[str] = frozenset()) -> None:
        """``files``: header index -> (name, data size) of each regular file whose tree entry holds
        its data; ``caps``: (largest file, most file bytes held, most member bytes streamed) and
        ``totals``: (file bytes held, member bytes streamed) of this tarball, which a volatile size
        must keep within the caps (without them no size may differ); ``members``: header index ->
        (kind, name in the tree) of every file, directory and symbolic link, given only when no name
        is met twice: then members may have other names (process directories under other pids), see
        :meth:`changed_files`; ``implicit``: the directories of the tree that no member made (their
        members under them made them)."""
        self.limits = limits
        self.heads = heads
        self.files = files
        self.tables = tables
        self.caps, self.totals = caps, totals
        self.members = members
        self.implicit = implicit
        #: header indices whose size differed from this tarball's on a later one
        self.volatile: set[int] = set()
        #: header indices of regular files whose data (not size) differed from this tarball's on a later
        #: one (host name, machine-id, the manifest): a run's in-place check takes their data as they are
        self.holes: set[int] = set()
        #: too many volatile members to be worth cutting: no more learning
        self.wild = False
        self.sizes = [octal(blob[h + _SIZE:h + _STAMP]) for h in heads]
        #: the first header's first bytes, and per header everything up to the next one's time stamp (the
        #: rest of the header from its type flag, the member's data and padding, the next header's
        #: first bytes; the last one's ends with its padding): see :class:`_Run`
        self.head = bytes(blob[heads[0]:heads[0] + _HEAD]) if heads else b""
        self.gaps = [bytes(blob[h + _TYPE:(heads[i + 1] + _HEAD if i + 1 < len(heads) else h + _BLOCK + _padded(s))])
                     for i, (h, s) in enumerate(zip(heads, self.sizes))]
        self.stamps = [bytes(blob[h + _STAMP:h + _STAMP + 12]) for h in heads]
        self.bases = [sum(blob[h:h + _BLOCK]) - sum(blob[h + _STAMP:h + _TYPE]) + 256 for h in heads]
        self._runs: list[_Run | int] | None = None
        #: each volatile member's header start, header rest and data (what its own reading compares)
        self._parts: dict[int, tuple[bytes, bytes, bytes]] = {}

    def start(self, i: int) -> bytes:
        """Header ``i``'s first bytes (up to its time stamp)."""
        return self.gaps[i - 1][-_HEAD:] if i else self.head

    def rest(self, i: int) -> bytes:
        """Header ``i``'s bytes from its type flag."""
        return self.gaps[i][:_REST]

    def data(self, i: int) -> bytes:
        """Member ``i``'s data."""
        return self.gaps[i][_REST:_REST + self.sizes[i]]

    def _plan(self) -> list[_Run | int]:
        """The runs and, between them, the volatile header indices, in archive order (built once per
        set of volatile members and holes)."""
        if self._runs is None:
            plan: list[_Run | int] = []
            start = 0
            volatile = self.volatile
            common = Counter(self.stamps).most_common(1)[0][0] if self.stamps else b""
            for v in sorted(volatile):
                if v > start:
                    plan.append(_Run(self, start, v, common))
                plan.append(v)
                start = v + 1
            if start < len(self.heads):
                plan.append(_Run(self, start, len(self.heads), common))
            self._runs = plan
            self._parts = {v: (self.start(v), self.rest(v), self.data(v)) for v in self.volatile}
        return self._runs

    def changed_files(self, blob: bytes | memoryview, learn: bool = True) -> Cut | None:
        """What differs in ``blob``: (name, data offset, size) of the files whose data differ, and the
        members with another name or link target (see :class:`Renamed`); ``None`` when ``blob`` is not
        this layout with other time stamps, checksums to match, file data and sizes of regular files,
        and (when the layout allows it) names and link targets of plain members. ``learn``: on a miss,
        walk ``blob`` once to find the members whose size, name or link target differs."""
        got = self._cut(blob)
        if got is None and learn and not self.wild and self.caps is not None:
            more = self._sizes_that_differ(blob)
            if more:
                self.volatile |= more
                self._runs = None
                if len(self.volatile) > max(64, len(self.heads) // 8):
                    self.wild = True
                    return None
                got = self._cut(blob)
        return got

    def _cut(self, blob: bytes | memoryview) -> Cut | None:
        out: list[tuple[str, int, int]] = []
        renamed: list[Renamed] = []
        heads, files, size_of = self.heads, self.files, self.sizes
        plan = self._plan()
        parts_of = self._parts
        pos = 0
        grown = 0
        # the bytes themselves (a view of the whole of them), for runs compared in place
        whole = blob.obj if type(blob) is memoryview else blob
        flat = whole if type(whole) is bytes and len(whole) == len(blob) else None
        found: list[int] = []  # files with other data, found inside runs
        try:
            for step in plan:
                if type(step) is int:  # a volatile member, read on its own
                    header = bytes(blob[pos:pos + _BLOCK])
                    start, rest, data = parts_of[step]
                    if len(header) != _BLOCK or header[_NAME:_SIZE] != start[_NAME:_SIZE] \
                            or header[_TYPE:_LINK] != rest[:1] or header[_MAGIC:] != rest[_MAGIC - _TYPE:]:
                        return None  # mode, ids, type, owner names, prefix: as in this layout
                    # the same file (its data may differ), or a member replaced as a whole
                    same = step in files and header[:_NAME] == start[:_NAME] \
                        and header[_LINK:_MAGIC] == rest[1:_MAGIC - _TYPE]
                    if not same and not self._renamable(step):
                        return None
                    octal(header[_STAMP:_STAMP + 12])
                    size = octal(header[_SIZE:_STAMP])
                    if octal(header[_STAMP + 12:_TYPE]) != 256 + sum(header) - sum(header[_STAMP + 12:_TYPE]):
                        return None
                    assert self.caps is not None
                    if pos + _BLOCK + size > len(blob) or size > self.caps[0]:
                        return None
                    kind = header[_TYPE:_TYPE + 1]
                    if size and (kind not in (b"0", b"\0") or kind == b"\0" and header[:_NAME].split(b"\0", 1)[0][-1:] == b"/"):
                        return None  # tarfile does not skip data of other members (an old-style "name/" is a directory)
                    grown += size - size_of[step]
                    if not same:
                        renamed.append(Renamed(step, header, pos + _BLOCK, size))
                    elif size != size_of[step] or not (flat.startswith(data, pos + _BLOCK) if flat is not None
                                                       else blob[pos + _BLOCK:pos + _BLOCK + size] == data):
                        out.append((files[step][0], pos + _BLOCK, size))
                    pos += _BLOCK + _padded(size)
                    continue
                run: _Run = step  # type: ignore[assignment]
                if flat is not None:
                    changed = run.same(flat, pos)
                    if changed is not None:
                        for i, offset in changed:
                            out.append((files[i][0], offset, files[i][1]))
                        pos += run.span
                        continue
                parts = run.cutter.unpack_from(blob, pos)
                if parts[0] != run.head:
                    return None  # a header (name, mode, ids, size) differs
                if not run.checksums_ok(parts[1::3], parts[2::3]):
                    return None
                first = run.first
                gaps, known = parts[3::3], run.gaps
                last = len(known) - 1
                for k in compress(range(len(known)), map(ne, gaps, known)):
                    new, old = gaps[k], known[k]
                    i = first + k
                    size = size_of[i]
                    if new[:_REST] != old[:_REST] or (k < last and new[-_HEAD:] != old[-_HEAD:]):
                        return None  # a header (name, size, type, link...) differs, or the end-of-archive block
                    if new[_REST:_REST + size] != old[_REST:_REST + size]:
                        file = files.get(i)
                        if file is None:
                            return None  # the data of a pax or long-name header differs
                        out.append((file[0], heads[i] + pos - heads[first] + _BLOCK, file[1]))
                        found.append(i)
                pos += run.span
        except (Fallback, struct.error):
            return None  # a number that is not octal, or the archive ends early
        if blob[pos:pos + _BLOCK] != _END:
            return None  # no end-of-archive block where this layout has it (what follows it is ignored)
        if grown:
            assert self.caps is not None and self.totals is not None
            if self.totals[0] + grown > self.caps[1] or self.totals[1] + grown > self.caps[2]:
                return None
        if found and len(self.holes) + len(found) <= max(64, len(heads) // 8):
            self.holes.update(found)  # the next archive's runs end before their data
            self._runs = None
        return out, renamed

    def _renamable(self, i: int) -> bool:
        """Whether member ``i`` may have another name or link target: a plain file, directory or
        symbolic link of a layout where no name is met twice, named by its own header (no pax or GNU
        long-name header before it)."""
        members = self.members
        return members is not None and i in members and (i == 0 or self.gaps[i - 1][:1] not in _EXTENDED)

    def _sizes_that_differ(self, blob: bytes | memoryview) -> set[int]:
        """Header indices of the regular files whose size differs in ``blob``, and of the members
        whose name or link target differs where :meth:`_renamable` allows it (every other header piece
        but time stamp and checksum equal to this layout's); an empty set for anything else."""
        out: set[int] = set()
        pos, end = 0, len(blob)
        files, sizes = self.files, self.sizes
        try:
            for i in range(len(self.heads)):
                if pos + _BLOCK > end:
                    return set()
                start, rest = self.start(i), self.rest(i)
                if blob[pos:pos + _SIZE] != start[:_SIZE] or blob[pos + _TYPE:pos + _BLOCK] != rest:
                    if blob[pos + _NAME:pos + _SIZE] != start[_NAME:_SIZE] \
                            or blob[pos + _TYPE:pos + _LINK] != rest[:1] \
                            or blob[pos + _MAGIC:pos + _BLOCK] != rest[_MAGIC - _TYPE:] or not self._renamable(i):
                        return set()
                    out.add(i)
                size = octal(bytes(blob[pos + _SIZE:pos + _STAMP]))
                if size != sizes[i]:
                    if i not in files and not self._renamable(i):
                        return set()
                    out.add(i)
                pos += _BLOCK + _padded(size)
        except Fallback:
            return set()
        return out if blob[pos:pos + _BLOCK] == _END else set()


class Renamed:
    """A member of another name or link target than the layout's at its place: its header (to read
    its name, kind and link as the tar reader does), where its data start and its size."""

    __slots__ = ("index", "header", "offset", "size")

    def __init__(self, index: int, header: bytes, offset: int, size: int) -> None:
        self.index, self.header, self.offset, self.size = index, header, offset, size

    def member(self) -> tuple[str, str, str]:
        """(kind, name, link target) as :func:`doctor.sources.fasttar.members` reads them."""
        header = self.header
        name = _text(header[:_NAME])
        kind = header[_TYPE:_TYPE + 1]
        if kind == b"\0" and name.endswith("/"):
            kind = b"5"
        if kind == b"5":
            name = name.rstrip("/")
        if header[_PREFIX]:
            prefix = _text(header[_PREFIX:500])
            if prefix:
                name = prefix + "/" + name
        link = _text(header[_LINK:_MAGIC]) if header[_LINK] else ""
        return _KINDS.get(kind, ""), name, link


#: (files whose data differ: name, data offset, size), members with another name or link target
Cut = tuple[list[tuple[str, int, int]], list[Renamed]]

_kept: list[Layout] = []


def recall(blob: bytes | memoryview, limits: Hashable) -> tuple[Layout, Cut] | None:
    """A kept layout like ``blob``'s and what differs (see :meth:`Layout.changed_files`), or ``None``."""
    for i, layout in enumerate(_kept):
        if layout.limits != limits:
            continue
        cut = layout.changed_files(blob)
        if cut is not None:
            if i:
                _kept.insert(0, _kept.pop(i))
            return layout, cut
    return None


def remember(layout: Layout) -> None:
    """Keep ``layout`` (the most recent first, at most :data:`KEEP`)."""
    _kept.insert(0, layout)
    del _kept[KEEP:]


def forget() -> None:
    """Drop every kept layout (tests)."""
    _kept.clear()
