"""Read-only trees of files with symlinks resolved inside their root, never outside it.

A :class:`Tree` offers four primitives (kind, readlink, listdir, read) on normalised relative
paths; :meth:`Tree.resolve` builds symlink resolution on top of them, confined to the root: a
``..`` at the root stays at the root and an absolute link target is taken relative to the root,
as a chroot would. Link loops, unreadable files, FIFOs and devices read as missing (``None``).
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from doctor.errors import DoctorError

#: Largest file read in one go; bigger ones (or endless /proc files) read as missing.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Largest total of member data a tarball may unpack to in memory.
MAX_TAR_BYTES = 1024 * 1024 * 1024
MAX_LINK_HOPS = 40

FILE, DIR, LINK = "file", "dir", "link"


def split_path(path: str) -> list[str]:
    """Split a relative or absolute POSIX path into components, dropping ``.`` and empties."""
    return [p for p in path.split("/") if p and p != "."]


class Tree(ABC):
    """A rooted, read-only tree. Paths are relative (``sys/bus/pci/devices``); ``""`` is the root."""

    def __init__(self) -> None:
        self._resolved: dict[str, str | None] = {}

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

    def _resolve_dir(self, path: str) -> str | None:
        if path in self._resolved:
            return self._resolved[path]
        result = self._walk(split_path(path), follow_last=True)
        self._resolved[path] = result
        return result

    def resolve(self, path: str, follow_last: bool = True) -> str | None:
        """The symlink-free path that ``path`` names inside the root, or ``None`` if it is missing."""
        parts = split_path(path)
        if not parts:
            return ""
        parent = self._resolve_dir("/".join(parts[:-1])) if len(parts) > 1 else ""
        if parent is None:
            return None
        return self._walk(split_path(parent) + [parts[-1]], follow_last, trusted=len(split_path(parent)))

    def _walk(self, parts: list[str], follow_last: bool, trusted: int = 0) -> str | None:
        resolved: list[str] = parts[:trusted]
        todo = parts[trusted:]
        hops = 0
        while todo:
            comp = todo.pop(0)
            if comp == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/".join([*resolved, comp])
            kind = self.kind(candidate)
            if kind is None:
                return None
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


class OsTree(Tree):
    """A directory on disk (``/`` for the live host). OS-level links are never followed."""

    def __init__(self, root: str) -> None:
        super().__init__()
        self.root = os.path.abspath(root)

    def _full(self, path: str) -> str:
        return os.path.join(self.root, path) if path else self.root

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
            return os.readlink(self._full(path))
        except (OSError, ValueError):
            return None

    def listdir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(self._full(path)))
        except (OSError, ValueError):
            return None

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self._full(path), flags)
        except (OSError, ValueError):
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks: list[bytes] = []
            total = 0
            while total <= cap:
                chunk = os.read(fd, min(65536, cap + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            if total > cap:
                return None
            return b"".join(chunks)
        except OSError:
            return None
        finally:
            os.close(fd)


@dataclass
class _Entry:
    kind: str
    data: bytes | None = None
    target: str | None = None
    too_large: bool = False


def _safe_member_name(name: str) -> str:
    if name.startswith("/") or "\\" in name and name.startswith("\\"):
        raise DoctorError(f"unsafe tarball: member {name!r} has an absolute path")
    parts = split_path(name)
    if ".." in parts:
        raise DoctorError(f"unsafe tarball: member {name!r} escapes the archive with '..'")
    return "/".join(parts)


def _check_link_target(name: str, target: str) -> None:
    if target.startswith("/"):
        raise DoctorError(f"unsafe tarball: link {name!r} points to the absolute path {target!r}")
    depth = len(split_path(name)) - 1
    for part in split_path(target):
        depth += -1 if part == ".." else 1
        if depth < 0:
            raise DoctorError(f"unsafe tarball: link {name!r} -> {target!r} points outside the archive")


class TarTree(Tree):
    """A tarball (``.tar``, ``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.tar.xz``) read into memory.

    Nothing is written to disk. Members whose names or link targets leave the archive make the
    whole tarball refused with one line; a truncated or corrupt archive likewise.
    """

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self._entries: dict[str, _Entry] = {"": _Entry(DIR)}
        self._children: dict[str, set[str]] = {"": set()}
        total = 0
        import tarfile  # only tarball sources pay for it

        try:
            with tarfile.open(path, "r:*") as tf:
                for member in tf:
                    name = _safe_member_name(member.name)
                    if not name:
                        continue
                    if member.issym():
                        _check_link_target(name, member.linkname)
                        self._add(name, _Entry(LINK, target=member.linkname))
                    elif member.islnk():
                        target = _safe_member_name(member.linkname)
                        src = self._entries.get(target)
                        if src is not None and src.kind == FILE:
                            self._add(name, _Entry(FILE, src.data, too_large=src.too_large))
                    elif member.isdir():
                        self._add(name, _Entry(DIR))
                    elif member.isfile():
                        if member.size > MAX_FILE_BYTES:
                            self._add(name, _Entry(FILE, None, too_large=True))
                            continue
                        total += member.size
                        if total > MAX_TAR_BYTES:
                            raise DoctorError(f"tarball {path} unpacks to more than {MAX_TAR_BYTES >> 20} MiB")
                        fobj = tf.extractfile(member)
                        data = fobj.read(member.size) if fobj is not None else b""
                        self._add(name, _Entry(FILE, data))
        except DoctorError:
            raise
        except (tarfile.TarError, EOFError, OSError, ValueError, UnicodeDecodeError) as exc:
            reason = str(exc) or type(exc).__name__
            raise DoctorError(f"cannot read tarball {path}: truncated or corrupt ({reason})") from None
        self._strip_single_top()

    def _add(self, name: str, entry: _Entry) -> None:
        parts = name.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent not in self._entries:
                self._entries[parent] = _Entry(DIR)
                self._children.setdefault(parent, set())
            self._children.setdefault("/".join(parts[: i - 1]), set()).add(parts[i - 1])
        self._children.setdefault("/".join(parts[:-1]), set()).add(parts[-1])
        existing = self._entries.get(name)
        if existing is not None and existing.kind == DIR and entry.kind == DIR:
            return
        self._entries[name] = entry
        if entry.kind == DIR:
            self._children.setdefault(name, set())

    def _strip_single_top(self) -> None:
        top = self._children.get("", set())
        markers = {"sys", "proc", "etc", "commands", "sos_commands", "sos_reports"}
        if len(top) != 1 or top & markers:
            return
        (only,) = top
        if self._entries[only].kind != DIR:
            return
        prefix = only + "/"
        self._entries = {"": _Entry(DIR)} | {
            k[len(prefix):]: v for k, v in self._entries.items() if k.startswith(prefix)
        }
        self._children = {
            ("" if k == only else k[len(prefix):]): v
            for k, v in self._children.items()
            if k == only or k.startswith(prefix)
        }

    def kind(self, path: str) -> str | None:
        entry = self._entries.get(path)
        return entry.kind if entry else None

    def readlink(self, path: str) -> str | None:
        entry = self._entries.get(path)
        return entry.target if entry and entry.kind == LINK else None

    def listdir(self, path: str) -> list[str] | None:
        entry = self._entries.get(path)
        if entry is None or entry.kind != DIR:
            return None
        return sorted(self._children.get(path, set()))

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        entry = self._entries.get(path)
        if entry is None or entry.kind != FILE or entry.too_large or entry.data is None:
            return None
        return entry.data if len(entry.data) <= cap else None


@dataclass(frozen=True)
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
            return value if isinstance(value, bytes) and len(value) <= cap else None
        return self.base.read(path, cap)


def is_tarball(path: str) -> bool:
    """Whether ``path`` names a file that ``tarfile`` can open."""
    suffixes = "".join(PurePosixPath(path).suffixes[-2:]).lower()
    if suffixes.endswith((".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".tbz2", ".txz")):
        return True
    try:
        import tarfile

        return tarfile.is_tarfile(path)
    except OSError:
        return False
