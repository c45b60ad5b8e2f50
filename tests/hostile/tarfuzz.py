"""Seeded mutations of snapshot tarballs, and the outcomes a fleet worker and a plain read give.

Used by ``tests/hostile/test_fleet_fuzz.py``. A *mutation* takes the tar bytes of a legitimate
next node (one laid out like the previous node a worker read) and a ``random.Random``, and gives
the bytes of the file to read (gzip, plain tar or a damaged gzip stream) and a label naming what
it did (so a failure can be replayed from the label and the seed). Everything is deterministic.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

BLOCK = 512
END = bytes(BLOCK)

#: header fields: name -> (start, end)
FIELDS = {"name": (0, 100), "mode": (100, 108), "uid": (108, 116), "gid": (116, 124), "size": (124, 136),
          "mtime": (136, 148), "chksum": (148, 156), "type": (156, 157), "linkname": (157, 257),
          "magic": (257, 265), "uname": (265, 297), "gname": (297, 329), "devmajor": (329, 337),
          "devminor": (337, 345), "prefix": (345, 500), "tail": (500, 512)}
_NUMBERS = [b"-1\0", b"+17\0", b"1_0\0", b"0o17\0", b" 17 \0", b"\x1c17\0", b"zz\0", b"\0" * 8,
            b"\x80" + bytes(6) + b"\x01", b"\xff" * 8, b"8\0", b"0000000\0", b"7777777\0", b"\0 1\0"]
_TYPES = [b"0", b"\0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"S", b"L", b"K", b"x", b"g", b"X",
          b"V", b"M", b"N", b"D", b"A", b"Z", b"\xff"]
_NAMES = [b"../etc/passwd", b"/etc/passwd", b"a/../../b", b"./", b".", b"", b"etc\0/../..", b"..",
          b"proc/../../x", b"proc/cmdline/", b"etc", b"etc/", b"proc", b"\\..\\x", b"\\abs",
          b"/".join([b"d"] * 70), b"etc/\xff\xfe", b"./etc/./hostname", b"etc//hostname", b"sys/x/../../../y"]
_LINKS = [b"../../../../etc/shadow", b"/etc/shadow", b"", b".", b"..", b"proc/cmdline", b"etc/hostname",
          b"/", b"a" * 99, b"gnd-manifest.json", b"../" * 33]


@dataclass(frozen=True)
class Head:
    """One header block of a tar: where it is, its type flag, declared size and name field."""

    offset: int
    kind: bytes
    size: int
    name: bytes

    @property
    def data(self) -> int:
        return self.offset + BLOCK

    @property
    def end(self) -> int:
        """Where the next header starts."""
        return self.data + padded(self.size)


def padded(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


def headers(tar: bytes | bytearray) -> list[Head]:
    """Every header block (extended ones included) of a well-formed tar, up to its end block."""
    out: list[Head] = []
    pos = 0
    while pos + BLOCK <= len(tar) and tar[pos:pos + BLOCK] != END:
        size = int(bytes(tar[pos + 124:pos + 136]).split(b"\0")[0].strip() or b"0", 8)
        out.append(Head(pos, bytes(tar[pos + 156:pos + 157]), size, bytes(tar[pos:pos + 100]).split(b"\0")[0]))
        pos += BLOCK + padded(size)
    return out


def end_of_members(tar: bytes | bytearray) -> int:
    hs = headers(tar)
    return hs[-1].end if hs else 0


def resum(buf: bytearray, head: int) -> None:
    """Give the header at ``head`` the checksum tarfile writes for its bytes."""
    buf[head + 148:head + 156] = b"        "
    buf[head + 148:head + 156] = b"%06o\0 " % sum(buf[head:head + BLOCK])


def header(name: bytes, kind: bytes, size: int = 0, link: bytes = b"", mtime: int = 1_700_000_000,
           mode: int = 0o644) -> bytearray:
    """A ustar header block with its checksum."""
    buf = bytearray(BLOCK)
    buf[0:len(name[:100])] = name[:100]
    buf[100:108] = b"%07o\0" % mode
    buf[108:116] = b"%07o\0" % 0
    buf[116:124] = b"%07o\0" % 0
    buf[124:136] = b"%011o\0" % size if size < 8 ** 11 else b"\x80" + size.to_bytes(11, "big")
    buf[136:148] = b"%011o\0" % mtime
    buf[156:157] = kind
    buf[157:157 + len(link[:100])] = link[:100]
    buf[257:265] = b"ustar\x0000"
    resum(buf, 0)
    return buf


def member_span(tar: bytes | bytearray, hs: list[Head], i: int) -> tuple[int, int]:
    """Byte range of member ``i`` with the extended headers just before it (pax, GNU long names)."""
    start = i
    while start > 0 and hs[start - 1].kind in (b"x", b"L", b"K", b"g"):
        start -= 1
    return hs[start].offset, hs[i].end


def _real(hs: list[Head]) -> list[int]:
    return [i for i, h in enumerate(hs) if h.kind not in (b"x", b"L", b"K", b"g")]


# --- tar-level mutations: (tar, rng) -> (label, new tar) ---------------------------------------------

def m_field(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One header field of one member (extended headers included) set to a crafted or random value,
    the checksum fixed (mostly) or left."""
    buf = bytearray(tar)
    hs = headers(buf)
    h = rng.choice(hs)
    field = rng.choice(list(FIELDS))
    lo, hi = FIELDS[field]
    width = hi - lo
    how = rng.random()
    if field in ("name", "prefix") and how < 0.6:
        own = h.name
        value = rng.choice(_NAMES + [n.name for n in rng.sample(hs, min(4, len(hs)))]
                           + [own + b"/", own + b"//", own + b"x", own[:-1], own + b"/x", b"./" + own, own.upper(),
                              own.rpartition(b"/")[0], own.rpartition(b"/")[0] + b"/new/", b"new/"])
    elif field == "linkname" and how < 0.6:
        value = rng.choice(_LINKS + [n.name for n in rng.sample(hs, min(3, len(hs)))])
    elif field == "type" and how < 0.8:
        value = rng.choice(_TYPES)
    elif field == "size" and how < 0.7:
        value = rng.choice([b"%011o\0" % max(0, h.size + d) for d in (-1, 1, 511, 512, -512, 4096)]
                           + [b"77777777777\0", b"\x80" + (1 << 40).to_bytes(11, "big"),
                              b"%011o\0" % (64 << 20), b"%011o\0" % (17 << 20)] + _NUMBERS)
    elif field in ("mode", "uid", "gid", "mtime", "devmajor", "devminor", "chksum") and how < 0.6:
        value = rng.choice(_NUMBERS + [b"%011o\0" % rng.randrange(8 ** 10)])
    elif field == "magic" and how < 0.6:
        value = rng.choice([b"ustar  \0", b"\0" * 8, b"ustar\x0001", b"gnu\0\0\0\0\0"])
    else:  # random bytes at a random place in the field
        at = rng.randrange(width)
        n = rng.randint(1, min(4, width - at))
        value = bytes(buf[h.offset + lo:h.offset + lo + at]) + rng.randbytes(n)
    value = value[:width].ljust(width, b"\0") if field not in ("size", "mode", "uid", "gid", "mtime",
                                                               "devmajor", "devminor", "chksum") \
        else value[:width].ljust(width, b"\0")
    buf[h.offset + lo:h.offset + hi] = value
    fixed = field != "chksum" and rng.random() < 0.85
    if fixed:
        resum(buf, h.offset)
    return f"field {field}={value!r} at {h.name!r} ({h.kind!r}){' resummed' if fixed else ''}", bytes(buf)


def m_pax(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A pax extended header's records replaced by crafted ones (or one inserted before a member)."""
    hs = headers(tar)
    real = _real(hs)
    records = rng.choice([
        [("path", "../escape")], [("path", "/abs/olute")], [("path", "")], [("path", "a/" * 70 + "x")],
        [("linkpath", "../../../../etc/shadow")], [("size", "99999999999")], [("size", "-1")], [("size", "0")],
        [("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"), ("GNU.sparse.name", "x"),
         ("GNU.sparse.realsize", "10")],
        [("GNU.sparse.size", "10"), ("GNU.sparse.numblocks", "1"), ("GNU.sparse.offset", "0"),
         ("GNU.sparse.numbytes", "10")],
        [("hdrcharset", "BINARY"), ("path", "bin\udcff".encode("utf-8", "surrogateescape").decode("latin-1"))],
        [("mtime", "abc")], [("uid", "-1")], [("mtime", "1e400")], [("comment", "x" * 3000)],
        [("path", "etc/hostname")], [("path", "proc")], [("linkpath", "")], [("SCHILY.xattr.user.x", "1")],
        [("path", "x\0y")], [("atime", "")], [("path", "ok"), ("path", "../second")],
    ])
    data = b"".join(_pax_record(k, v) for k, v in records)
    if rng.random() < 0.3:
        data = rng.choice([b"5 a=\n", b"99 path=x\n", b"0 path=x\n", b"12 path=x\n" + b"junk", b"x" * 20,
                           b"11 path=x\r\n", b"-5 path=x\n"])
    kind = b"g" if rng.random() < 0.1 else b"x"
    pax = header(b"././@PaxHeader", kind, len(data), mtime=0) + data + bytes(-len(data) % BLOCK)
    target = rng.choice(real)
    paxes = [i for i in range(len(hs)) if hs[i].kind == b"x"]
    if paxes and rng.random() < 0.5:
        i = rng.choice(paxes)
        out = tar[:hs[i].offset] + bytes(pax) + tar[hs[i].end:]
        return f"pax records {data[:60]!r} replace the one before {hs[i + 1].name!r}", out
    start, _ = member_span(tar, hs, target)
    return f"pax {kind!r} records {data[:60]!r} before {hs[target].name!r}", tar[:start] + bytes(pax) + tar[start:]


def _pax_record(key: str, value: str) -> bytes:
    body = f" {key}={value}\n".encode("utf-8", "surrogateescape")
    n = len(body)
    while len(str(n)) + len(body) != n:
        n = len(str(n)) + len(body)
    return str(n).encode() + body


def m_longname(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A GNU long-name (``L``) or long-link (``K``) header before a member."""
    hs = headers(tar)
    target = rng.choice(_real(hs))
    kind = rng.choice([b"L", b"K"])
    name = rng.choice([b"a/" * 60 + b"long", b"../escape", b"/abs", b"", b"etc/hostname", b"x" * 5000,
                       b"x" * 70000, b"proc/cmdline\0junk", b"sys/" + b"d" * 200])
    declared = len(name) + 1
    if rng.random() < 0.15:
        declared = rng.choice([0, 1 << 40, len(name) + 4096])
    payload = name + b"\0"
    block = header(b"././@LongLink", kind, declared, mode=0) + payload + bytes(-len(payload) % BLOCK)
    start, _ = member_span(tar, hs, target)
    return f"{kind!r} {name[:40]!r} (declared {declared}) before {hs[target].name!r}", \
        tar[:start] + bytes(block) + tar[start:]


def m_truncate(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """The tar cut at an interesting offset: a header boundary, inside a header, inside data, in the
    end blocks."""
    hs = headers(tar)
    h = rng.choice(hs)
    end = end_of_members(tar)
    at = rng.choice([h.offset, h.offset + 1, h.offset + 148, h.offset + 511, h.data + h.size // 2,
                     h.data + h.size, h.end, end, end + 1, end + BLOCK, end + 2 * BLOCK - 1,
                     len(tar) - 1, len(tar) - BLOCK])
    at = max(0, min(at, len(tar)))
    return f"cut at {at} of {len(tar)} (near {h.name!r})", tar[:at]


def m_reorder(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Two members swapped, one duplicated (right after, or at the end), or one removed."""
    hs = headers(tar)
    real = _real(hs)
    i, j = sorted(rng.sample(real, 2))
    a, b = member_span(tar, hs, i), member_span(tar, hs, j)
    end = end_of_members(tar)
    how = rng.choice(["swap", "dup-next", "dup-end", "drop"])
    if how == "swap":
        out = tar[:a[0]] + tar[b[0]:b[1]] + tar[a[1]:b[0]] + tar[a[0]:a[1]] + tar[b[1]:]
    elif how == "dup-next":
        out = tar[:a[1]] + tar[a[0]:a[1]] + tar[a[1]:]
    elif how == "dup-end":
        out = tar[:end] + tar[a[0]:a[1]] + tar[end:]
    else:
        out = tar[:a[0]] + tar[a[1]:]
    return f"{how} {hs[i].name!r} / {hs[j].name!r}", out


def m_kind(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A member replaced by a symlink, hard link, device, FIFO, directory or sparse file (its data
    dropped, or kept)."""
    buf = bytearray(tar)
    hs = headers(buf)
    real = _real(hs)
    i = rng.choice(real)
    h = hs[i]
    kind = rng.choice([b"1", b"2", b"3", b"4", b"5", b"6", b"S", b"7", b"\0"])
    others = [hs[k].name for k in real if k != i] or [b"x"]
    link = rng.choice([rng.choice(others), h.name, b"../../etc/passwd", b"/etc/passwd", b"nonexistent"])
    keep = rng.random() < 0.25
    new = bytearray(buf[h.offset:h.offset + BLOCK])
    new[156:157] = kind
    new[157:257] = link[:100].ljust(100, b"\0")
    if not keep:
        new[124:136] = b"%011o\0" % 0
    resum(new, 0)
    body = bytes(buf[h.data:h.end]) if keep else b""
    out = bytes(buf[:h.offset]) + bytes(new) + body + bytes(buf[h.end:])
    return f"{h.name!r} as type {kind!r} -> {link[:40]!r}{' keeping its data' if keep else ''}", out


def m_zero_early(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """An end-of-archive block before a member (what follows is ignored), or zeros inside a header."""
    hs = headers(tar)
    h = rng.choice(hs)
    if rng.random() < 0.7:
        return f"end block before {h.name!r}", tar[:h.offset] + END + tar[h.offset:]
    buf = bytearray(tar)
    buf[h.offset:h.offset + BLOCK] = END
    return f"header of {h.name!r} zeroed", bytes(buf)


def m_padding(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Bytes no reader looks at (a member's padding after its data, the header's last 12 bytes, the
    bytes after the end block) or a header field that changes nothing in the tree (owner, ids,
    mode, devices, magic version), the checksum fixed: the tree must not change."""
    buf = bytearray(tar)
    hs = headers(buf)
    h = rng.choice(hs)
    where = rng.choice(["padding", "tail", "after-end", "uid", "gid", "uname", "gname", "mode", "devmajor",
                        "version", "checksum-format"])
    if where == "checksum-format":  # the same checksum written another way tarfile reads
        total = int(bytes(buf[h.offset + 148:h.offset + 156]).split(b"\0")[0].strip() or b"0", 8)
        buf[h.offset + 148:h.offset + 156] = rng.choice([b"%07o\0", b"%07o ", b" %06o\0", b"%o\0".ljust(8, b" "),
                                                         b"%08o"]) % total
    elif where == "padding" and h.end > h.data + h.size:
        at = rng.randrange(h.data + h.size, h.end)
        buf[at] ^= 0xFF
    elif where == "after-end":
        end = end_of_members(buf) + BLOCK
        if end < len(buf):
            buf[end] = 0x41
        else:
            buf += b"A" * rng.choice([1, 511, 512, 1024])
    elif where == "version":
        buf[h.offset + 263:h.offset + 265] = b"  "
        resum(buf, h.offset)
    else:
        lo, hi = FIELDS[where if where != "padding" else "tail"]
        value = {"uname": b"mallory", "gname": b"wheel", "mode": b"0004755\0", "devmajor": b"0000077\0",
                 "uid": b"0001750\0", "gid": b"0001750\0"}.get(where, b"junk")
        buf[h.offset + lo:h.offset + lo + len(value)] = value
        resum(buf, h.offset)
    return f"{where} of {h.name!r}", bytes(buf)


def m_bytes(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """A few random bytes anywhere in one header (checksum fixed or not), or in a member's data."""
    buf = bytearray(tar)
    hs = headers(buf)
    h = rng.choice(hs)
    if h.size and rng.random() < 0.3:
        at = h.data + rng.randrange(h.size)
        buf[at] = rng.randrange(256)
        return f"data byte {at - h.data} of {h.name!r}", bytes(buf)
    for _ in range(rng.randint(1, 3)):
        buf[h.offset + rng.randrange(BLOCK)] = rng.randrange(256)
    fixed = rng.random() < 0.7
    if fixed:
        resum(buf, h.offset)
    return f"header bytes of {h.name!r}{' resummed' if fixed else ''}", bytes(buf)


def m_resize(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One regular file's data longer or shorter (a legitimate volatile member, as counters make),
    then (mostly) another mutation on top."""
    hs = headers(tar)
    files = [i for i in _real(hs) if hs[i].kind in (b"0", b"\0")]
    i = rng.choice(files)
    h = hs[i]
    data = tar[h.data:h.data + h.size]
    data = rng.choice([data + b"%d\n" % rng.randrange(10 ** 6), data[:len(data) // 2], b"", data * 2,
                       data + bytes(512)])
    head = bytearray(tar[h.offset:h.data])
    head[124:136] = b"%011o\0" % len(data)
    resum(head, 0)
    out = tar[:h.offset] + bytes(head) + data + bytes(-len(data) % BLOCK) + tar[h.end:]
    label = f"{h.name!r} resized to {len(data)}"
    if rng.random() < 0.8:
        family = rng.choice(["field", "rename", "rename", "kind", "bytes", "padding", "pax", "reorder"])
        more, out = TAR_MUTATIONS[family](out, rng)
        label += " + " + more
    return label, out


def _with_data(tar: bytes, h: Head, data: bytes) -> bytes:
    """``tar`` with the member at ``h`` holding ``data`` (its size and checksum fixed, padding redone)."""
    head = bytearray(tar[h.offset:h.data])
    head[124:136] = b"%011o\0" % len(data)
    resum(head, 0)
    return tar[:h.offset] + bytes(head) + data + bytes(-len(data) % BLOCK) + tar[h.end:]


def m_data(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One small file that facts read (sysfs, procfs, a command's output, /etc) with other content:
    a digit changed, emptied, a value at a limit, binary, a line repeated."""
    hs = headers(tar)
    files = [i for i in _real(hs) if hs[i].kind in (b"0", b"\0") and hs[i].size < 65536
             and hs[i].name.startswith((b"sys/", b"proc/", b"commands/", b"etc/"))]
    h = hs[rng.choice(files)]
    data = tar[h.data:h.data + h.size]
    digits = [i for i, c in enumerate(data) if 48 <= c <= 57]
    how = rng.choice(["digit", "digit", "empty", "value", "binary", "repeat", "newline"])
    if how == "digit" and digits:
        at = rng.choice(digits)
        data = data[:at] + bytes([48 + (data[at] - 47) % 10]) + data[at + 1:]
    elif how == "empty":
        data = b""
    elif how == "value":
        data = rng.choice([b"0\n", b"-1\n", b"4294967296\n", b"18446744073709551616\n", b"x\n", b"nan\n",
                           b"1e999\n", b"\n", b"0x\n", b"16\n", b"8\n", b"2.5 GT/s PCIe\n"])
    elif how == "binary":
        data = data[:len(data) // 2] + rng.choice([b"\0", b"\xff\xfe", b"\x1b[2J", b"\xed\xa0\x80"]) + data[len(data) // 2:]
    elif how == "repeat":
        data = data + data
    else:
        data = data.rstrip(b"\n") if data.endswith(b"\n") else data + b"\n"
    return f"{h.name!r} {how}", _with_data(tar, h, data)


def m_rename(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One to three members under other names, or symbolic links to other targets (the checksum
    fixed), as a process directory under another pid is."""
    buf = bytearray(tar)
    hs = headers(buf)
    real = _real(hs)
    names = [hs[i].name for i in real]
    labels = []
    for _ in range(rng.randint(1, 3)):
        i = rng.choice(real)
        h = hs[i]
        own = h.name.rstrip(b"/")
        parent = own.rpartition(b"/")[0]
        if h.kind == b"2" and rng.random() < 0.5:
            value = rng.choice(_LINKS + names + [own, parent, b"../" + own])
            buf[h.offset + 157:h.offset + 257] = value[:100].ljust(100, b"\0")
            labels.append(f"{own!r} -> {value[:40]!r}")
        else:
            other = rng.choice(names).rstrip(b"/")
            value = rng.choice([own + b"/", own + b"x", own[:-1] or b"x", parent, parent + b"/new",
                                parent + b"/new/", other, other + b"/" + own.rpartition(b"/")[2],
                                own + b"/" + own.rpartition(b"/")[2], b"new/" + own, b"./" + own, own + b"/.",
                                rng.choice(_NAMES), own.replace(b"4242", b"999"), other.rpartition(b"/")[0] + b"/z"])
            buf[h.offset:h.offset + 100] = value[:100].ljust(100, b"\0")
            labels.append(f"{own!r} named {value[:60]!r}")
        resum(buf, h.offset)
    return "; ".join(labels), bytes(buf)


TAR_MUTATIONS: dict[str, Callable[[bytes, random.Random], tuple[str, bytes]]] = {
    "field": m_field, "pax": m_pax, "longname": m_longname, "truncate": m_truncate, "reorder": m_reorder,
    "kind": m_kind, "zero-early": m_zero_early, "padding": m_padding, "bytes": m_bytes,
}
TAR_MUTATIONS["resize"] = m_resize
TAR_MUTATIONS["rename"] = m_rename
TAR_MUTATIONS["data"] = m_data


# --- stream-level mutations: (tar, rng) -> (label, file bytes) ----------------------------------------

def s_members(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """The tar in two or three gzip members (split anywhere), as ``cat a.gz b.gz`` makes."""
    cuts = sorted(rng.sample(range(1, len(tar)), rng.randint(1, 2)))
    parts = [tar[a:b] for a, b in zip([0, *cuts], [*cuts, len(tar)])]
    return f"gzip members split at {cuts}", b"".join(gzip.compress(p, mtime=0) for p in parts)


def s_trailing(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Something after the gzip stream: zeros, garbage, a gzip magic alone, an empty gzip member."""
    tail = rng.choice([b"\0" * 512, b"\0", b"garbage", b"\x1f\x8b", b"\x1f\x8b\x08\0" + bytes(6),
                       gzip.compress(b"", mtime=0), gzip.compress(b"junk", mtime=0), gzip.compress(END, mtime=0),
                       rng.randbytes(100)])
    return f"trailing {tail[:12]!r}", gzip.compress(tar, mtime=0) + tail


def s_trailer(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Wrong CRC or ISIZE, or the stream cut, or a byte flipped in the compressed data."""
    gz = bytearray(gzip.compress(tar, mtime=0))
    how = rng.choice(["crc", "isize", "cut", "flip", "flags"])
    if how == "crc":
        gz[-8 + rng.randrange(4)] ^= 1 << rng.randrange(8)
    elif how == "isize":
        gz[-4:] = struct.pack("<I", (len(tar) + rng.choice([1, -1, 512, 1 << 31])) % (1 << 32))
    elif how == "cut":
        gz = gz[:rng.randrange(len(gz))]
    elif how == "flip":
        gz[rng.randrange(10, len(gz) - 8)] ^= 1 << rng.randrange(8)
    else:  # header flags: FTEXT, FHCRC, FEXTRA, FNAME, FCOMMENT (without their fields)
        gz[3] = rng.choice([1, 2, 4, 8, 16, 0xE0])
    return f"gzip {how}", bytes(gz)


def s_other(tar: bytes, rng: random.Random) -> tuple[str, bytes]:
    """The tar uncompressed, stored (level 0), as bzip2 or xz, or a raw deflate/zlib stream."""
    how = rng.choice(["plain", "stored", "bz2", "xz", "zlib", "gzip-in-gzip"])
    data = {"plain": lambda: tar, "stored": lambda: gzip.compress(tar, compresslevel=0, mtime=0),
            "bz2": lambda: bz2.compress(tar), "xz": lambda: lzma.compress(tar), "zlib": lambda: zlib.compress(tar),
            "gzip-in-gzip": lambda: gzip.compress(gzip.compress(tar, mtime=0), mtime=0)}[how]()
    return f"stream {how}", data


STREAM_MUTATIONS: dict[str, Callable[[bytes, random.Random], tuple[str, bytes]]] = {
    "gzip-members": s_members, "trailing": s_trailing, "trailer": s_trailer, "other": s_other,
}


def mutate(tar: bytes, rng: random.Random, families: list[str] | None = None) -> tuple[str, str, bytes]:
    """One mutation of ``tar``, chosen by ``rng`` among ``families`` (default all; a name given twice is
    chosen twice as often): (its family, its label, the file's bytes). Tar-level ones are gzipped
    (mostly) or left plain; now and then two are stacked."""
    family = rng.choice(families or list(TAR_MUTATIONS) + list(STREAM_MUTATIONS))
    if family in STREAM_MUTATIONS:
        label, data = STREAM_MUTATIONS[family](tar, rng)
        return family, label, data
    label, out = TAR_MUTATIONS[family](tar, rng)
    if rng.random() < 0.15:
        try:
            more, out = TAR_MUTATIONS[rng.choice(list(TAR_MUTATIONS))](out, rng)
            label += " + " + more
        except (ValueError, IndexError):
            pass  # the first one left nothing the second could work on
    if rng.random() < 0.2:
        return family, label + " (plain tar)", out
    return family, label, gzip.compress(out, compresslevel=1, mtime=0)
