"""A fast reader for plain, well-formed tarballs (what ``gnd collect`` writes), all in memory.

:class:`~doctor.sources.tree.TarTree` tries this first: the whole archive is decompressed in
memory (gzip or none, capped at :data:`FAST_MAX_BYTES`; see :func:`inflated`) and :func:`index`
walks its ustar/GNU/pax headers once, with slices of one buffer: per member, its name and a slot in
three dictionaries (kind, link target, where its data lies: one int, :func:`place`), no ``TarInfo``
or other object, and no data copied until a file is read.
It accepts only what it understands exactly as ``tarfile`` would; anything else (a failed
checksum or CRC, a truncated stream, trailing padding, sparse or device members, global or unusual
pax records, a base-256 number, any limit reached) raises :class:`Fallback`, and ``TarTree``
reads the archive again the slow, hardened way, which gives the one-line refusal. So a refusal is
never decided here, and an archive read here gives the same tree as the slow path.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, cast
from zlib import adler32

from doctor.lazyre import lazy

#: Largest archive (compressed, and decompressed) read by the fast path; bigger ones take the slow one.
FAST_MAX_BYTES = 64 * 1024 * 1024

_BLOCK = 512
#: decompression step (bytes), and the largest buffer a thread keeps for the next archive
_STEP = 256 * 1024
_SCRATCH_KEEP = 16 * 1024 * 1024
_ZERO_BLOCK = bytes(_BLOCK)
_PAX_RECORD = lazy(rb"(\d+) ([^=]+)=")
#: pax keywords that change nothing we keep (besides path and linkpath, which we apply)
_PAX_IGNORED = frozenset(("mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment", "mode"))
_NUMERIC = ((100, 108), (108, 116), (116, 124), (136, 148), (329, 337), (337, 345))
_META = frozenset(b"LKx")  # GNU long name, GNU long link, pax header
_ODD_START = "/\\."  # a name starting with one of these (or empty) is not plainly normal
_LINKS = frozenset(b"12")  # hard link, symlink
#: a ustar header's fields in one call: name, mode+uid+gid, size, mtime, checksum, type (an int), link
#: target, (magic, version and owner names skipped), device numbers, prefix
_HEADER = struct.Struct("100s24s12s12s8sB100s72x16s155s")
FILE, DIR, LINK = "file", "dir", "link"


class Fallback(Exception):
    """This archive is not one the fast path reads; use the slow path (which decides any refusal)."""


_inflater: tuple[Callable[..., Any], type[Exception]] | None = None


def inflater() -> tuple[Callable[..., Any], type[Exception]]:
    """``(decompressobj, error)`` of zlib-ng when it is installed (the ``fast`` extra: the same
    streams and checks, about twice as fast), else of the standard library's zlib."""
    global _inflater
    found = _inflater
    if found is None:
        try:
            from zlib_ng import zlib_ng

            found = zlib_ng.decompressobj, cast("type[Exception]", zlib_ng.error)  # typed as an instance
        except ImportError:
            found = zlib.decompressobj, zlib.error
        _inflater = found
    return found


def _gunzip_into(raw: bytes, out: bytearray, cap: int) -> int:
    """Decompress all gzip members of ``raw`` into ``out`` (CRC and length checked by zlib) in steps
    of :data:`_STEP`; how many bytes, at most ``cap``."""
    total = 0
    decompressobj, error = inflater()
    while True:
        dec = decompressobj(31)
        data = raw
        while True:
            try:
                chunk = dec.decompress(data, _STEP)
            except error:
                raise Fallback from None
            if total + len(chunk) > cap:
                raise Fallback  # over the cap
            out[total:total + len(chunk)] = chunk  # grows ``out`` past its end
            total += len(chunk)
            data = dec.unconsumed_tail
            if dec.eof:
                break
            if not data and not chunk:
                raise Fallback  # truncated
        raw = dec.unused_data
        if not raw:
            return total
        if raw[:2] != b"\x1f\x8b":
            raise Fallback  # zero padding or trailing garbage: the slow path judges it


def gunzip(raw: bytes, cap: int = FAST_MAX_BYTES) -> bytes:
    """All gzip members of ``raw`` decompressed (CRC and length checked by zlib), at most ``cap`` bytes:
    each member in one call (the same checks as :func:`_gunzip_into`)."""
    parts: list[bytes] = []
    total = 0
    decompressobj, error = inflater()
    while True:
        dec = decompressobj(31)
        try:
            chunk = dec.decompress(raw, cap + 1 - total)
        except error:
            raise Fallback from None
        total += len(chunk)
        if total > cap or not dec.eof:
            raise Fallback  # over the cap, or truncated
        parts.append(chunk)
        raw = dec.unused_data
        if not raw:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if raw[:2] != b"\x1f\x8b":
            raise Fallback  # zero padding or trailing garbage: the slow path judges it


#: whether this process's allocator keeps freed blocks of a few MiB (see :func:`keep_large_blocks`)
_KEPT = False


def keep_large_blocks() -> bool:
    """Ask glibc's allocator to keep freed blocks of up to 32 MiB for reuse instead of handing them back
    to the system (``mallopt``: ``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``); whether it is so now.

    A fleet worker inflates a few MiB per archive. Handed back each time, the next archive's pages
    fault in again (about a thousand faults, more than a millisecond, per snapshot): so
    :func:`inflated` copies through a buffer it keeps instead. With the blocks kept, it inflates each
    archive in one call, with no copy. ``False`` (nothing changed) where the C library is not glibc."""
    global _KEPT
    if not _KEPT:
        import os

        try:
            if not os.confstr("CS_GNU_LIBC_VERSION"):
                return False
            import ctypes

            mallopt = ctypes.CDLL(None).mallopt
            mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
            _KEPT = mallopt(-3, 32 << 20) == 1 and mallopt(-1, 64 << 20) == 1  # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
        except (ValueError, OSError, AttributeError, ImportError):
            return False
    return _KEPT


def decompress(raw: bytes) -> bytes:
    """The tar bytes of ``raw`` (gzip or uncompressed tar); :class:`Fallback` for anything else."""
    if len(raw) > FAST_MAX_BYTES:
        raise Fallback
    if raw[:2] == b"\x1f\x8b":
        return gunzip(raw)
    if raw[257:262] == b"ustar":
        return raw
    raise Fallback  # bzip2, xz, an old v7 tar, or not a tarball at all


_local = threading.local()


@contextmanager
def inflated(raw: bytes) -> Iterator[memoryview]:
    """The tar bytes of ``raw`` as :func:`decompress` gives them, as a view valid inside the block.

    A gzip stream is decompressed into a buffer this thread reuses (up to :data:`_SCRATCH_KEEP`
    bytes), which saves fresh memory for every archive when a fleet worker reads thousands: keep
    nothing of the view past the block (copy what must stay). Where the allocator keeps large blocks
    (:func:`keep_large_blocks`), in one call instead.
    """
    if len(raw) > FAST_MAX_BYTES:
        raise Fallback
    if raw[:2] != b"\x1f\x8b" or _KEPT:
        if raw[:2] == b"\x1f\x8b":
            raw = gunzip(raw, FAST_MAX_BYTES)  # in one call: its blocks are kept for the next archive
        elif raw[257:262] != b"ustar":
            raise Fallback  # bzip2, xz, an old v7 tar, or not a tarball at all
        with memoryview(raw) as view:
            yield view
        return
    buf: bytearray = getattr(_local, "scratch", None) or bytearray()
    _local.scratch = None  # a nested read gets its own
    try:
        try:
            buf.append(0)  # raises if a view of it outlived its block: then leave that buffer be
            del buf[-1]
        except BufferError:
            buf = bytearray()
        size = _gunzip_into(raw, buf, FAST_MAX_BYTES)
        with memoryview(buf) as whole, whole[:size] as view:
            yield view
    finally:
        if len(buf) <= _SCRATCH_KEEP:
            _local.scratch = buf


def _octal(field: bytes) -> int:
    if field[:1] in (b"\x80", b"\xff"):
        raise Fallback  # base-256 numbers: leave them to tarfile
    try:
        return int(field.split(b"\0", 1)[0].strip() or b"0", 8)
    except ValueError:
        raise Fallback from None


def _text(field: bytes) -> str:
    return field.split(b"\0", 1)[0].decode("utf-8", "replace")


def _pax(data: bytes) -> dict[str, str]:
    """The path/linkpath records of a pax extended header; :class:`Fallback` for anything else."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        match = _PAX_RECORD.match(data, pos)
        if match is None:
            raise Fallback
        length = int(match.group(1))
        end = match.start(1) + length
        if length == 0 or end > len(data) or data[end - 1:end] != b"\n":
            raise Fallback
        keyword = match.group(2).decode("utf-8", "replace")
        value = data[match.end(2) + 1:end - 1].decode("utf-8", "replace")
        if keyword == "path":
            out["name"] = value.rstrip("/")
        elif keyword == "linkpath":
            out["linkname"] = value
        elif keyword not in _PAX_IGNORED:
            raise Fallback
        pos = end
    return out


#: a held file's place in the blob, one int: where its data starts, shifted left by this, plus its size
_SIZE_BITS = 32


def place(start: int, size: int) -> int:
    """One int for a held file's data: where it starts in the blob and its size (see :func:`span`)."""
    return start << _SIZE_BITS | size


def span(placed: int) -> tuple[int, int]:
    """``(start, size)`` of a held file's data from :func:`place`'s int."""
    return placed >> _SIZE_BITS, placed & ((1 << _SIZE_BITS) - 1)


class Limits(NamedTuple):
    """What :func:`index` accepts: most members, bytes streamed and held, largest file held, largest
    extended header, longest link target; ``name``: a member name's normal form, ``None`` if refused;
    ``chars`` and ``depth``: a name of at most so many characters and fewer slashes, with no empty,
    ``.`` or ``..`` component, is its own normal form (``name`` is not asked)."""

    members: int
    streamed: int
    held: int
    file: int
    meta: int
    link: int
    name: Callable[[str], str | None]
    chars: int = 0
    depth: int = 0


class Index(NamedTuple):
    """A tar's members by normal name: ``kinds`` (``file``, ``dir`` or ``link``), each link's target,
    and where each held file's data lies in the blob (:func:`place`; a file over the file limit has none)."""

    kinds: dict[str, str]
    targets: dict[str, str]
    data: dict[str, int | bytes]


def index(blob: bytes, limits: Limits) -> Index:
    """The members of the tar ``blob``, each header read once with no object per member beyond its
    name and dictionary slots; data is located, never copied. Names are as ``tarfile`` gives them
    (GNU long names, pax paths and ustar prefixes applied), in their normal form (``limits.name``).

    A later member of the same name replaces an earlier one, as extraction would; a hard link
    shares its source's data when that is a file read so far (else it is left out, as the slow
    path leaves it). Anything :class:`Fallback` lists, or any limit reached, raises it.
    """
    kinds: dict[str, str] = {}
    targets: dict[str, str] = {}
    data: dict[str, int | bytes] = {}
    pos = count = streamed = held = 0
    end = len(blob)
    pending: dict[str, str] = {}
    valid: set[tuple[bytes, bytes, bytes]] = set()  # numeric fields already checked (they repeat)
    header = _HEADER.unpack_from
    sums: dict[bytes, int] = {}  # checksum fields read so far: the header sums they claim
    normal, chars, depth = limits.name, limits.chars, limits.depth
    most, most_streamed, most_held, most_file = limits.members, limits.streamed, limits.held, limits.file
    if most_file >> _SIZE_BITS:
        raise Fallback  # a held file's size must fit its place (:func:`place`)
    try:
        while True:
            if pos + _BLOCK > end:
                raise Fallback  # ends without its end-of-archive block
            if blob[pos] == 0 and blob[pos:pos + _BLOCK] == _ZERO_BLOCK:
                if pending or pos == 0:
                    raise Fallback
                return Index(kinds, targets, data)  # end of archive: what follows is ignored, as tarfile does
            raw_name, ids, size_field, mtime, chk_field, kind, link_field, devices, prefix = header(blob, pos)
            # the checksum: the header's byte sum with its own field as spaces, so the whole header's sum
            # is the field's number, less those spaces, plus the field's bytes (a few hundred distinct
            # fields in a few thousand headers: each read once)
            claimed = sums.get(chk_field)
            if claimed is None:  # as _octal; ValueError: Fallback
                claimed = sums[chk_field] = int(chk_field.rstrip(b"\0 ") or b"0", 8) - 256 + sum(chk_field)
            block = blob[pos:pos + _BLOCK]
            # a sum below adler32's modulus is 1 less than the low half of its adler32: the whole
            # header's when every byte is below 128, else each half's
            if block.isascii():
                total = (adler32(block) & 0xFFFF) - 1
            else:
                total = (adler32(block[:256]) & 0xFFFF) + (adler32(block[256:]) & 0xFFFF) - 2
            if total != claimed:
                raise Fallback  # bad (or signed) checksum
            numeric = (ids, mtime, devices)
            if numeric not in valid:
                for lo, hi in _NUMERIC:
                    _octal(blob[pos + lo:pos + hi])
                valid.add(numeric)
            size = int(size_field.rstrip(b"\0 ") or b"0", 8)
            if size < 0:
                raise Fallback
            start = pos + _BLOCK
            pos = start + -(-size // _BLOCK) * _BLOCK
            if kind in _META:
                if size > limits.meta or start + size > end:
                    raise Fallback
                payload = blob[start:start + size]
                if kind == 0x78:  # "x": pax
                    for key, value in _pax(payload).items():
                        pending.setdefault(key, value)
                else:
                    pending.setdefault("name" if kind == 0x4C else "linkname", _text(payload))
                continue
            count += 1
            streamed += size
            if count > most or streamed > most_streamed:
                raise Fallback
            name = raw_name.partition(b"\0")[0].decode("utf-8", "replace")
            if kind == 0 and name.endswith("/"):
                kind = 0x35
            if kind == 0x35:
                name = name.rstrip("/")
            if prefix[0]:  # a ustar prefix (tarfile reads the field whatever the format)
                name = _text(prefix) + "/" + name
            if pending:
                name = pending.get("name", name)
                linkname = pending.get("linkname")
                pending = {}
            else:
                linkname = None
            if not (len(name) <= chars and name.count("/") < depth and name[:1] not in _ODD_START
                    and "//" not in name and "/." not in name and name[-1:] != "/"):
                checked = normal(name)  # not plainly normal: its normal form, or refused
                if checked is None:
                    raise Fallback  # the slow path refuses it in one line
                name = checked
            if kind == 0x30 or kind == 0:  # "0" or NUL: a regular file
                if start + size > end:
                    raise Fallback  # truncated member data
                if not name:
                    continue
                if name in kinds:  # a later member of that name replaces the earlier one
                    targets.pop(name, None)
                kinds[name] = FILE
                if size > most_file:
                    data.pop(name, None)
                    continue
                held += size
                if held > most_held:
                    raise Fallback
                data[name] = start << _SIZE_BITS | size  # place(start, size)
                continue
            if size:
                raise Fallback  # tarfile does not skip data of non-regular members
            if kind not in _LINKS and kind != 0x35:
                raise Fallback  # devices, FIFOs, sparse, contiguous, global pax, vendor types
            if linkname is None:
                linkname = _text(link_field) if link_field[0] else ""
            if not name:
                continue
            if kind == 0x35:  # "5": a directory
                if kinds.get(name) != DIR:
                    kinds[name] = DIR
                    targets.pop(name, None)
                    data.pop(name, None)
            elif kind == 0x32:  # "2": a symlink
                if len(linkname) > limits.link:
                    raise Fallback
                kinds[name] = LINK
                targets[name] = linkname
                data.pop(name, None)
            else:  # "1": a hard link, to a file read so far
                source = "/".join([p for p in linkname.split("/") if p and p != "."])
                if kinds.get(source) == FILE:
                    kinds[name] = FILE
                    targets.pop(name, None)
                    if source in data:
                        data[name] = data[source]
                    else:
                        data.pop(name, None)
    except ValueError:  # a number tarfile would not read, or a negative size
        raise Fallback from None
