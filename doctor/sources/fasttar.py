"""A fast reader for plain, well-formed tarballs (what ``gnd collect`` writes), all in memory.

:class:`~doctor.sources.tree.TarTree` tries this first: the whole archive is decompressed in
memory (gzip or none, capped at :data:`FAST_MAX_BYTES`; see :func:`inflated`) and its
ustar/GNU/pax headers are parsed with slices of one buffer, with no ``TarInfo`` per member and no data copied until a file is read.
It accepts only what it understands exactly as ``tarfile`` would; anything else (a failed
checksum or CRC, a truncated stream, trailing padding, sparse or device members, global or unusual
pax records, a base-256 number, any limit reached) raises :class:`Fallback`, and ``TarTree``
reads the archive again the slow, hardened way, which gives the one-line refusal. So a refusal is
never decided here, and an archive read here gives the same tree as the slow path.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

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


Member = Callable[[str, str, str, int, int], None]


def members(blob: bytes, meta_max: int, on_member: Member) -> None:
    """Call ``on_member(kind, name, linkname, offset, size)`` for each member of the tar ``blob``.

    ``kind`` is ``file``, ``dir``, ``symlink`` or ``hardlink``; ``offset``/``size`` locate a file's
    data in ``blob``. Names are as ``tarfile`` gives them (GNU long names and pax paths applied).
    """
    pos = 0
    end = len(blob)
    pending: dict[str, str] = {}
    valid: set[bytes] = set()  # numeric fields already checked (mode, ids, mtime, devices repeat)
    while True:
        if pos + _BLOCK > end:
            raise Fallback  # ends without its end-of-archive block
        buf = blob[pos:pos + _BLOCK]
        if buf == _ZERO_BLOCK:
            if pending or pos == 0:
                raise Fallback
            return  # end of archive: what follows is ignored, as tarfile does
        chksum = _octal(buf[148:156])
        if chksum != 256 + sum(buf) - sum(buf[148:156]):
            raise Fallback  # bad (or signed) checksum
        numeric = buf[100:124] + buf[136:148] + buf[329:345]
        if numeric not in valid:
            for lo, hi in _NUMERIC:
                _octal(buf[lo:hi])
            valid.add(numeric)
        size = _octal(buf[124:136])
        kind = buf[156:157]
        data = pos + _BLOCK
        if kind in (b"L", b"K", b"x"):
            if size > meta_max or data + size > end:
                raise Fallback
            payload = blob[data:data + size]
            if kind == b"x":
                for key, value in _pax(payload).items():
                    pending.setdefault(key, value)
            else:
                pending.setdefault("name" if kind == b"L" else "linkname", _text(payload))
            pos = data + -(-size // _BLOCK) * _BLOCK
            continue
        name = _text(buf[0:100])
        if kind == b"\0" and name.endswith("/"):
            kind = b"5"
        if kind == b"5":
            name = name.rstrip("/")
        if buf[345]:  # a ustar prefix (tarfile reads the field whatever the format)
            prefix = _text(buf[345:500])
            if prefix:
                name = prefix + "/" + name
        if pending:
            name = pending.get("name", name)
            linkname = pending["linkname"] if "linkname" in pending else _text(buf[157:257])
        else:
            linkname = _text(buf[157:257]) if buf[157] else ""
        pending = {}
        if kind in (b"0", b"\0"):
            if data + size > end:
                raise Fallback  # truncated member data
            on_member("file", name, linkname, data, size)
            pos = data + -(-size // _BLOCK) * _BLOCK
            continue
        if size:
            raise Fallback  # tarfile does not skip data of non-regular members
        if kind == b"5":
            on_member("dir", name, linkname, data, 0)
        elif kind == b"2":
            on_member("symlink", name, linkname, data, 0)
        elif kind == b"1":
            on_member("hardlink", name, linkname, data, 0)
        else:
            raise Fallback  # devices, FIFOs, sparse, contiguous, global pax, vendor types
        pos = data
