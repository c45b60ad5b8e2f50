"""Read-only trees of files with symlinks resolved inside their root, never outside it.

A :class:`Tree` offers four primitives (kind, readlink, listdir, read) on normalised relative
paths; :meth:`Tree.resolve` builds symlink resolution on top of them, confined to the root: a
``..`` at the root stays at the root and an absolute link target is taken relative to the root,
as a chroot would. Link loops, unreadable files, FIFOs and devices read as missing (``None``).
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import stat
import tarfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any, BinaryIO, Literal

from doctor.errors import DoctorError
from doctor.record import record
from doctor.safe_open import open_regular, path_kind
from doctor.sources import fasttar
from doctor.sources.kinds import inner_folder

#: Largest file read in one go; bigger ones (or endless /proc files) read as missing.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Largest total of member data a tarball may unpack to in memory (files over MAX_FILE_BYTES not counted).
MAX_TAR_BYTES = 512 * 1024 * 1024
#: Largest total a tarball may decompress to, skipped oversized files included (CPU bound).
MAX_STREAM_BYTES = 2 * 1024 * 1024 * 1024
#: Most members a tarball may have (a snapshot has about 2,500; a large sosreport tens of thousands).
MAX_MEMBERS = 200_000
#: Deepest member path, in components, and longest member name or link target, in characters.
MAX_PATH_DEPTH = 64
MAX_NAME_CHARS = 4096
MAX_LINK_HOPS = 40

FILE, DIR, LINK = fasttar.FILE, fasttar.DIR, fasttar.LINK


def _is_plain(path: str) -> bool:
    """Whether ``path`` is relative and already normal: no empty, ``.`` or ``..`` component."""
    return bool(path) and "//" not in path and "/." not in path and path[0] not in "/." and path[-1] != "/"


def split_path(path: str) -> list[str]:
    """Split a relative or absolute POSIX path into components, dropping ``.`` and empties."""
    if _is_plain(path):
        return path.split("/")  # already normal: no empty or "." component (the common case)
    return [p for p in path.split("/") if p and p != "."]


class Tree(ABC):
    """A rooted, read-only tree. Paths are relative (``sys/bus/pci/devices``); ``""`` is the root."""

    def __init__(self) -> None:
        self._resolved: dict[str, str | None] = {}  # directory path -> its resolved path
        #: resolved paths found to be directories (not links): a walk through one again needs no
        #: ``kind`` (20,000 PCI device links share their ``devices/pci0000:00/...`` prefixes; each
        #: walk asked the file system for every component, 35 ``lstat`` calls a device)
        self._dirs: set[str] = set()
        #: files a read found larger than its cap (``read`` returned ``None`` for them)
        self.over_cap: set[str] = set()

    @abstractmethod
    def kind(self, path: str) -> str | None:
        """``file``, ``dir``, ``link`` or ``None`` (missing or another type) without following links."""

    @abstractmethod
    def readlink(self, path: str) -> str | None:
        """The raw target of the link at ``path``."""

    @abstractmethod
    def listdir(self, path: str) -> list[str] | None:
        """Names in the directory at (already resolved) ``path``."""

    @abstractmethod
    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        """Contents of the regular file at (already resolved) ``path``; ``None`` if over ``cap``."""

    def listing(self, path: str) -> dict[str, str | None] | None:
        """Each name in the directory at (already resolved) ``path`` with its :meth:`kind`, in one listing, in
        no particular order (what :class:`doctor.sources.Folder` reads a device's attributes by, with no path
        resolved again)."""
        names = self.listdir(path)
        if names is None:
            return None
        return {name: self.kind(f"{path}/{name}" if path else name) for name in names}

    def _resolve_dir(self, path: str) -> str | None:
        resolved = self._resolved
        if path in resolved:
            return resolved[path]
        result: str | None
        if _is_plain(path):  # its folder resolved (once for all the names in it), then one step
            folder, _, last = path.rpartition("/")
            base = self._resolve_dir(folder) if folder else ""
            candidate = None if base is None else f"{base}/{last}" if base else last
            kind = None if candidate is None else DIR if candidate in self._dirs else self.kind(candidate)
            if kind == DIR:
                self._dirs.add(candidate)  # type: ignore[arg-type]
            if kind == LINK:  # walked whole, so that its hops count with the folder's
                result = self._walk(split_path(path), follow_last=True)
            else:
                result = None if kind is None else candidate
        else:
            result = self._walk(split_path(path), follow_last=True)
        resolved[path] = result
        return result

    def resolve(self, path: str, follow_last: bool = True) -> str | None:
        """The symlink-free path that ``path`` names inside the root, or ``None`` if it is missing."""
        if _is_plain(path):
            folder, _, last = path.rpartition("/")
        else:
            parts = split_path(path)
            if not parts:
                return ""
            folder, last = "/".join(parts[:-1]), parts[-1]
        parent = self._resolve_dir(folder) if folder else ""
        if parent is None:
            return None
        known = parent.split("/") if parent else []  # a resolved path is already normal
        if last == "..":
            return self._walk([*known, last], follow_last, trusted=len(known))
        # what _walk does for one last component, without asking for its kind twice
        candidate = f"{parent}/{last}" if parent else last
        kind = self.kind(candidate)
        if kind is None:
            return None
        if kind != LINK or not follow_last:
            return candidate
        target = self.readlink(candidate)  # the link's first hop, taken here
        if target is None:
            return None
        if target.startswith("/"):
            known = []
        return self._walk([*known, *split_path(target)], follow_last, trusted=len(known), hops=1)

    def _walk(self, parts: list[str], follow_last: bool, trusted: int = 0, hops: int = 0) -> str | None:
        """``parts`` resolved, the first ``trusted`` of them already (hops: links already followed on the way)."""
        resolved: list[str] = parts[:trusted]
        todo = parts[trusted:]
        while todo:
            comp = todo.pop(0)
            if comp == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/".join([*resolved, comp])
            if candidate in self._dirs:
                resolved.append(comp)
                continue
            kind = self.kind(candidate)
            if kind is None:
                return None
            if kind == DIR:
                self._dirs.add(candidate)
            if kind == LINK and (todo or follow_last):
                hops += 1
                target = self.readlink(candidate)
                if hops > MAX_LINK_HOPS or target is None:
                    return None
                if target.startswith("/"):
                    resolved = []
                todo = split_path(target) + todo
                continue
            resolved.append(comp)
        return "/".join(resolved)


def _printable(text: str) -> str:
    """``text`` with undecodable bytes (lone surrogates from the file system) replaced by U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class OsTree(Tree):
    """A directory on disk (``/`` for the live host). OS-level links are never followed."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = os.path.abspath(root)
        self._prefix = self.root.rstrip("/") + "/"

    def _full(self, path: str) -> str:
        return self._prefix + path if path else self.root

    def kind(self, path: str) -> str | None:
        try:
            mode = os.lstat(self._full(path)).st_mode
        except (OSError, ValueError):
            return None
        if stat.S_ISLNK(mode):
            return LINK
        if stat.S_ISDIR(mode):
            return DIR
        if stat.S_ISREG(mode):
            return FILE
        return None

    def readlink(self, path: str) -> str | None:
        try:
            target = os.readlink(self._full(path))
        except (OSError, ValueError):
            return None
        return target if target.isascii() else _printable(target)

    def listdir(self, path: str) -> list[str] | None:
        """Names in the directory; a name that is not valid UTF-8 is left out (it could not be reported)."""
        try:
            names = os.listdir(self._full(path))
        except (OSError, ValueError):
            return None
        return sorted(n for n in names if n.isascii() or _printable(n) == n)

    def listing(self, path: str) -> dict[str, str | None] | None:
        """One ``scandir``: the kinds come with the names (the directory entry's type), no ``lstat`` a name."""
        out: dict[str, str | None] = {}
        try:
            with os.scandir(self._full(path)) as listing:
                for entry in listing:
                    name = entry.name
                    if not (name.isascii() or _printable(name) == name):
                        continue  # as listdir: a name that is not valid UTF-8 could not be reported
                    try:  # most names are files: asked first
                        out[name] = FILE if entry.is_file(follow_symlinks=False) else LINK if entry.is_symlink() \
                            else DIR if entry.is_dir(follow_symlinks=False) else None
                    except OSError:
                        out[name] = None
        except (OSError, ValueError):
            return None
        return out

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self._full(path), flags)
        except (OSError, ValueError):
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None
            # a file on disk is read whole when its size is: no read more to see the end (half the reads of
            # a snapshot's thousands of small files); sysfs (4096) and /proc (0) sizes are not the contents'
            # size, and there a read that returns nothing ends it, as before
            size = info.st_size
            chunks: list[bytes] = []
            total = 0
            while total <= cap:
                chunk = os.read(fd, min(65536, cap + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
                if total == size:
                    break
            if total > cap:
                self.over_cap.add(path)
                return None
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)


def _member_name(name: str) -> str:
    """A member name's normal form; :class:`DoctorError` (one line) if absolute, escaping or over a limit."""
    if len(name) <= MAX_NAME_CHARS and name.count("/") < MAX_PATH_DEPTH and name[:1] not in ("/", "\\", ".") \
            and "//" not in name and "/." not in name and name[-1:] != "/":
        return name  # already normal: no empty, "." or ".." component (the common case)
    if name.startswith(("/", "\\")):
        raise DoctorError(f"unsafe tarball: member {name!r} has an absolute path")
    if len(name) > MAX_NAME_CHARS:
        raise DoctorError(f"tarball refused: member name longer than {MAX_NAME_CHARS} characters (limit)")
    parts = split_path(name)
    if ".." in parts:
        raise DoctorError(f"unsafe tarball: member {name!r} escapes the archive with '..'")
    if len(parts) > MAX_PATH_DEPTH:
        raise DoctorError(f"tarball refused: member path deeper than {MAX_PATH_DEPTH} components (limit)")
    return "/".join(parts)


def _accepted_name(name: str) -> str | None:
    try:
        return _member_name(name)
    except DoctorError:
        return None


#: what ``tarfile`` raises on the all-zero end-of-archive block (not in its typeshed stubs)
_END_OF_ARCHIVE: type[Exception] = tarfile.EOFHeaderError  # type: ignore[attr-defined]
_META_TYPES = frozenset((tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                         tarfile.SOLARIS_XHDTYPE))


class _Info(tarfile.TarInfo):
    """TarInfo that notes why the member loop ended and refuses oversized extended headers.

    ``tarfile`` ends its member loop silently on an invalid or missing header after the first
    member, which made a corrupt or truncated archive look whole; :class:`TarTree` accepts the end
    only when it was the all-zero end-of-archive block (``EOFHeaderError``).
    """

    @classmethod
    def fromtarfile(cls, tarfile_: tarfile.TarFile) -> _Info:
        buf = tarfile_.fileobj.read(tarfile.BLOCKSIZE)  # type: ignore[union-attr]
        try:
            obj = cls.frombuf(buf, tarfile_.encoding, tarfile_.errors)  # type: ignore[arg-type]
        except tarfile.HeaderError as exc:
            tarfile_.gnd_end = type(exc)  # type: ignore[attr-defined]
            raise
        if obj.type in _META_TYPES and obj.size > MAX_NAME_CHARS * 16:
            raise DoctorError(f"tarball refused: extended header larger than {MAX_NAME_CHARS * 16} bytes (limit)")
        obj.offset = tarfile_.fileobj.tell() - tarfile.BLOCKSIZE  # type: ignore[union-attr]
        return obj._proc_member(tarfile_)  # type: ignore[attr-defined,no-any-return]


#: what a truncated or corrupt archive raises (zlib and lzma errors are not OSErrors)
_CORRUPT = (tarfile.TarError, EOFError, OSError, ValueError, UnicodeError, zlib.error, lzma.LZMAError)


class TarTree(Tree):
    """A tarball (``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``) read into memory.

    Nothing is written to disk and nothing is followed on this machine: link targets, absolute or
    relative, are kept as they are and resolved inside the archive's root (chroot semantics).
    Member *names* that are absolute or contain ``..`` make the tarball refused with one line; so
    does a corrupt or truncated archive (a compressed stream that fails its check, a tar that ends
    without its end-of-archive block) and one over a limit (members, path depth, bytes).
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._blob = b""  # the fast path's tar bytes, which ``_data`` offsets point into
        self._kinds: dict[str, str] = {}  # member -> FILE, DIR or LINK
        self._targets: dict[str, str] = {}  # link -> its target
        self._data: dict[str, int | bytes] = {}  # file -> its bytes, or where they start in ``_blob``
        fh = open_regular(path, "tarball")
        try:
            if not self._load_fast(fh):
                fh.seek(0)
                self._load(fh)
        except DoctorError:
            raise
        except _CORRUPT as exc:
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__  # one line, however tarfile words it
            raise DoctorError(f"cannot read tarball {path}: truncated or corrupt ({reason})") from None
        finally:
            fh.close()
        self._children: dict[str, set[str]] | None = None  # built on first need (see :meth:`_folders`)
        #: no link has a member below it (set by :meth:`_folders`): a member's own name is its resolved path
        self._plain_members = False
        self._strip_single_top()

    def _load_fast(self, fh: BinaryIO) -> bool:
        """Index a well-formed gzip or plain tar in one go (see :mod:`doctor.sources.fasttar`); ``False``
        (nothing kept) when the archive needs the slow path, which then decides any refusal."""
        try:
            raw = fh.read(fasttar.FAST_MAX_BYTES + 1)
            with fasttar.inflated(raw) as view:
                if len(view) > MAX_STREAM_BYTES:
                    return False  # the slow path counts what it streams, and refuses
                whole = view.obj  # the index points into it: a reused buffer is copied
                tar = whole if type(whole) is bytes and len(whole) == len(view) else bytes(view)
            del raw
            limits = fasttar.Limits(MAX_MEMBERS, MAX_STREAM_BYTES, MAX_TAR_BYTES, MAX_FILE_BYTES,
                                    MAX_NAME_CHARS * 16, MAX_NAME_CHARS, _accepted_name, MAX_NAME_CHARS, MAX_PATH_DEPTH)
            found = fasttar.index(tar, limits)
        except (fasttar.Fallback, OSError, MemoryError):
            return False
        self._blob = tar
        self._kinds, self._targets, self._data = found
        return True

    def _load(self, fh: BinaryIO) -> None:
        """Read the archive with ``tarfile`` (any compression, any member), refusing in one line."""
        path = self.path
        kinds: dict[str, str] = {}
        targets: dict[str, str] = {}
        data: dict[str, int | bytes] = {}
        held = streamed = members = 0
        head = fh.read(6)
        fh.seek(0)
        # "r:*" tries xz on anything: on a run of zero bytes (xz stream padding) lzma reads to the end of
        # the file, minutes for a zero-filled file of a few GiB (a node's upload lost in a crash)
        mode: Literal["r:", "r:*"] = "r:" if head[:4] == b"\0\0\0\0" else "r:*"
        with tarfile.open(fileobj=fh, mode=mode, tarinfo=_Info, errors="replace") as tf:
            while (member := tf.next()) is not None:
                tf.members.pop()  # type: ignore[attr-defined]  # tarfile would keep every TarInfo
                members += 1
                if members > MAX_MEMBERS:
                    raise DoctorError(f"tarball {path} refused: more than {MAX_MEMBERS} members (limit)")
                name = _member_name(member.name)
                streamed += member.size
                if streamed > MAX_STREAM_BYTES:
                    raise DoctorError(f"tarball {path} refused: unpacks to more than "
                                      f"{MAX_STREAM_BYTES >> 20} MiB (limit)")
                if not name:
                    continue
                if member.issym():
                    if len(member.linkname) > MAX_NAME_CHARS:
                        raise DoctorError(f"tarball {path} refused: link target longer than {MAX_NAME_CHARS} "
                                          "characters (limit)")
                    kinds[name], targets[name] = LINK, member.linkname
                    data.pop(name, None)
                elif member.islnk():
                    src = "/".join(split_path(member.linkname))
                    if kinds.get(src) == FILE:
                        kinds[name] = FILE
                        targets.pop(name, None)
                        if src in data:
                            data[name] = data[src]
                        else:
                            data.pop(name, None)
                elif member.isdir():
                    if kinds.get(name) != DIR:
                        kinds[name] = DIR
                        targets.pop(name, None)
                        data.pop(name, None)
                elif member.isfile():
                    kinds[name] = FILE
                    targets.pop(name, None)
                    if member.size > MAX_FILE_BYTES:
                        data.pop(name, None)
                        continue
                    held += member.size
                    if held > MAX_TAR_BYTES:
                        raise DoctorError(f"tarball {path} refused: its files hold more than "
                                          f"{MAX_TAR_BYTES >> 20} MiB (limit)")
                    fobj = tf.extractfile(member)
                    data[name] = fobj.read(member.size) if fobj is not None else b""
            if getattr(tf, "gnd_end", None) is not _END_OF_ARCHIVE:
                raise tarfile.ReadError("archive ends before its end-of-archive block")
            stream = tf.fileobj
            if isinstance(stream, (gzip.GzipFile, bz2.BZ2File, lzma.LZMAFile)):
                # read to the end of the compressed stream, so that its CRC is checked
                budget = MAX_STREAM_BYTES - streamed
                while chunk := stream.read(1 << 20):
                    budget -= len(chunk)
                    if budget < 0:
                        raise DoctorError(f"tarball {path} refused: unpacks to more than "
                                          f"{MAX_STREAM_BYTES >> 20} MiB (limit)")
        self._kinds, self._targets, self._data = kinds, targets, data

    def _folders(self) -> dict[str, set[str]]:
        """Each folder's names, in one pass over the members (at open); a folder that only holds
        members (no member of its own) becomes a directory here."""
        children = self._children
        if children is None:
            children = self._children = {"": set()}
            kinds = self._kinds
            implied: list[str] = []

            def attach(name: str) -> None:
                parent, _, base = name.rpartition("/")
                names = children.get(parent)
                if names is None:
                    names = children[parent] = set()
                    if parent not in kinds:
                        implied.append(parent)
                names.add(base)

            for name, kind in kinds.items():
                if kind == DIR and name not in children:
                    children[name] = set()
                attach(name)
            while implied:  # ancestors of implied folders
                name = implied.pop()
                kinds[name] = DIR
                attach(name)
            kinds.pop("", None)
            self._plain_members = not any(kinds.get(folder) == LINK for folder in children)
        return children

    def _strip_single_top(self) -> None:
        top = self._folders()[""]
        only = inner_folder(top, lambda name: self._kinds.get(name) == DIR)
        if only is None:
            return
        cut = len(only) + 1

        def strip(table: dict[str, Any]) -> dict[str, Any]:
            return {k[cut:]: v for k, v in table.items() if k.startswith(only + "/")}

        self._kinds, self._targets, self._data = strip(self._kinds), strip(self._targets), strip(self._data)
        # the folders below the top are the same folders, named from it: kept, not listed again
        children = strip(self._children or {})
        children[""] = (self._children or {}).get(only, set())
        self._children = children
        self._plain_members = not any(self._kinds.get(folder) == LINK for folder in children)

    def entries(self) -> dict[str, tuple[str, str | None, bool]]:
        """Every member: its kind, link target and whether it is a file too large to read (for tests)."""
        self._folders()
        return {"": (DIR, None, False)} | {
            k: (v, self._targets.get(k), v == FILE and k not in self._data) for k, v in self._kinds.items()}

    def resolve(self, path: str, follow_last: bool = True) -> str | None:
        if self._plain_members and self._children is not None:  # the folders are known, none under a link
            kind = self._kinds.get(path)
            if kind in (FILE, DIR):  # a member named by its own (normal) name, every folder above real
                return path
        return super().resolve(path, follow_last)

    def kind(self, path: str) -> str | None:
        return self._kinds.get(path) if path else DIR

    def listing(self, path: str) -> dict[str, str | None] | None:
        if path and self._kinds.get(path) != DIR:
            return None
        kinds = self._kinds
        return {name: kinds.get(f"{path}/{name}" if path else name) for name in self._folders().get(path, ())}

    def readlink(self, path: str) -> str | None:
        return self._targets.get(path)

    def listdir(self, path: str) -> list[str] | None:
        if path and self._kinds.get(path) != DIR:
            return None
        return sorted(self._folders().get(path, ()))

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        data = self._data.get(path)
        if isinstance(data, int):  # where the fast path found it: copied out on first read
            start, size = fasttar.span(data)
            if size > cap:
                self.over_cap.add(path)
                return None
            data = self._data[path] = self._blob[start:start + size]
        if data is None:
            if self._kinds.get(path) == FILE:  # a member too large to keep
                self.over_cap.add(path)
            return None
        if len(data) > cap:
            self.over_cap.add(path)
            return None
        return data


@record
class Link:
    """A symlink to place in an :class:`OverlayTree`."""

    target: str


class OverlayTree(Tree):
    """A base tree with files replaced, added (bytes/str), linked (:class:`Link`) or removed (``None``).

    This is how tests describe a fault: a few changed files on top of a recorded base tree.
    """

    def __init__(self, base: Tree, changes: Mapping[str, bytes | str | Link | None]) -> None:
        super().__init__()
        self.base = base
        self._changes: dict[str, bytes | Link | None] = {}
        self._added_dirs: dict[str, set[str]] = {}
        for raw, value in changes.items():
            path = "/".join(split_path(raw))
            self._changes[path] = value.encode() if isinstance(value, str) else value
            if value is not None:
                parts = path.split("/")
                for i in range(len(parts)):
                    self._added_dirs.setdefault("/".join(parts[:i]), set()).add(parts[i])

    def _removed(self, path: str) -> bool:
        parts = path.split("/")
        return any(self._changes.get("/".join(parts[: i + 1]), 0) is None for i in range(len(parts)))

    def kind(self, path: str) -> str | None:
        if path in self._changes:
            value = self._changes[path]
            if value is None:
                return None
            return LINK if isinstance(value, Link) else FILE
        if self._removed(path):
            return None
        if path in self._added_dirs:
            return DIR
        return self.base.kind(path)

    def readlink(self, path: str) -> str | None:
        value = self._changes.get(path)
        if isinstance(value, Link):
            return value.target
        return None if path in self._changes else self.base.readlink(path)

    def listdir(self, path: str) -> list[str] | None:
        names = set(self.base.listdir(path) or []) | self._added_dirs.get(path, set())
        if not names and self.kind(path) != DIR:
            return None
        return sorted(n for n in names if self.kind(f"{path}/{n}" if path else n) is not None)

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        if path in self._changes:
            value = self._changes[path]
            if isinstance(value, bytes) and len(value) > cap:
                self.over_cap.add(path)
                return None
            return value if isinstance(value, bytes) else None
        data = self.base.read(path, cap)
        if data is None and path in self.base.over_cap:
            self.over_cap.add(path)
        return data


def is_tarball(path: str) -> bool:
    """Whether ``path`` names a file that ``tarfile`` can open."""
    suffixes = "".join(PurePosixPath(path).suffixes[-2:]).lower()
    if suffixes.endswith((".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".tbz2", ".txz")):
        return True
    if path_kind(path) != "file":
        return False  # never open a FIFO or device to sniff it
    try:
        with open_regular(path) as fh:
            head = fh.read(512)
    except DoctorError:
        return False
    return head[:2] == b"\x1f\x8b" or head[:3] == b"BZh" or head[:6] == b"\xfd7zXZ\x00" or head[257:262] == b"ustar"
