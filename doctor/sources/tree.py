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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, BinaryIO, Literal, TypeVar

from doctor.errors import DoctorError
from doctor.record import record
from doctor.safe_open import open_regular, path_kind
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

FILE, DIR, LINK = "file", "dir", "link"
T = TypeVar("T")


def _limits() -> tuple[int, ...]:
    """The limits a tarball was read under (a layout read under others is not reused)."""
    from doctor.sources.fasttar import FAST_MAX_BYTES

    return (MAX_FILE_BYTES, MAX_TAR_BYTES, MAX_STREAM_BYTES, MAX_MEMBERS, MAX_PATH_DEPTH, MAX_NAME_CHARS,
            FAST_MAX_BYTES)


def split_path(path: str) -> list[str]:
    """Split a relative or absolute POSIX path into components, dropping ``.`` and empties."""
    if path and "//" not in path and "/." not in path and path[0] not in "/." and path[-1] != "/":
        return path.split("/")  # already normal: no empty or "." component (the common case)
    return [p for p in path.split("/") if p and p != "."]


class Tree(ABC):
    """A rooted, read-only tree. Paths are relative (``sys/bus/pci/devices``); ``""`` is the root."""

    def __init__(self) -> None:
        #: resolved directories: path -> (result, the paths its walk looked at, when it was traced)
        self._resolved: dict[str, tuple[str | None, set[str] | None]] = {}
        #: when a set: every path whose entry or children a primitive looked at is added to it
        #: (see :meth:`traced`; ``gnd fleet`` reuses a fact when none of them differs)
        self._trace: set[str] | None = None

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
        trace = self._trace
        hit = self._resolved.get(path)
        if hit is not None:
            if trace is None:
                return hit[0]
            if hit[1] is not None:
                trace.update(hit[1])
                return hit[0]
        if trace is None:
            result = self._walk(split_path(path), follow_last=True)
            self._resolved[path] = (result, None)
            return result
        result, looked = self.traced(lambda: self._walk(split_path(path), follow_last=True))
        self._resolved[path] = (result, looked)
        return result

    def traced(self, compute: Callable[[], T]) -> tuple[T, set[str]]:
        """``compute()`` and the paths it looked at (also added to an enclosing trace)."""
        outer = self._trace
        looked: set[str] = set()
        self._trace = looked
        try:
            value = compute()
        finally:
            self._trace = outer
        if outer is not None:
            outer |= looked
        return value, looked

    def resolve(self, path: str, follow_last: bool = True) -> str | None:
        """The symlink-free path that ``path`` names inside the root, or ``None`` if it is missing."""
        parts = split_path(path)
        if not parts:
            return ""
        parent = self._resolve_dir("/".join(parts[:-1])) if len(parts) > 1 else ""
        if parent is None:
            return None
        last = parts[-1]
        if last != "..":  # what _walk does for one last component that is not a link to follow
            candidate = f"{parent}/{last}" if parent else last
            kind = self.kind(candidate)
            if kind is None:
                return None
            if kind != LINK or not follow_last:
                return candidate
        known = parent.split("/") if parent else []  # a resolved path is already normal
        return self._walk([*known, last], follow_last, trusted=len(known))

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


def _printable(text: str) -> str:
    """``text`` with undecodable bytes (lone surrogates from the file system) replaced by U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


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


@dataclass(slots=True)
class _Entry:
    kind: str
    data: bytes | None = None
    target: str | None = None
    too_large: bool = False
    view: memoryview | None = None  # the fast path's file data, copied to bytes only when read


#: accepted member names -> normal form, under the limits in the last entry's key (bounded; a fleet
#: worker meets the same few thousand names in every snapshot)
_SAFE_NAMES: dict[str, str] = {}
_SAFE_LIMITS: list[int] = [0, 0]


def _safe_member_name(name: str) -> str:
    if _SAFE_LIMITS[0] != MAX_NAME_CHARS or _SAFE_LIMITS[1] != MAX_PATH_DEPTH or len(_SAFE_NAMES) >= 1 << 16:
        _SAFE_NAMES.clear()
        _SAFE_LIMITS[:] = [MAX_NAME_CHARS, MAX_PATH_DEPTH]
    known = _SAFE_NAMES.get(name)
    if known is None:
        known = _SAFE_NAMES[name] = _check_member_name(name)  # a refused name raises, and is not kept
    return known


def _check_member_name(name: str) -> str:
    if name.startswith("/") or "\\" in name and name.startswith("\\"):
        raise DoctorError(f"unsafe tarball: member {name!r} has an absolute path")
    if len(name) > MAX_NAME_CHARS:
        raise DoctorError(f"tarball refused: member name longer than {MAX_NAME_CHARS} characters (limit)")
    parts = split_path(name)
    if ".." in parts:
        raise DoctorError(f"unsafe tarball: member {name!r} escapes the archive with '..'")
    if len(parts) > MAX_PATH_DEPTH:
        raise DoctorError(f"tarball refused: member path deeper than {MAX_PATH_DEPTH} components (limit)")
    return "/".join(parts)


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


def _state(entries: dict[str, _Entry], children: dict[str, set[str]], path: str) -> object:
    entry = entries.get(path)
    if entry is None:
        return None
    data = entry.data if entry.data is not None or entry.view is None else bytes(entry.view)
    kids = children.get(path)
    return entry.kind, entry.target, entry.too_large, data, None if kids is None else frozenset(kids)


class _Reference:
    """A tree read earlier in this process, that later trees are compared with (``gnd fleet``).

    A fleet's snapshots of one configuration hold mostly the same files. When asked
    (:meth:`TarTree.match_reference`), a tree is compared entry by entry with the kept references;
    the first that differs in few paths becomes the tree's ``_base`` and those paths its ``_delta``
    (otherwise the tree becomes a reference itself). What was computed from one tree (a glob, a
    fact) holds for another with the same reference unless something it looked at differs in
    either delta (:meth:`TarTree.unchanged`). At most :attr:`KEEP` are kept (the most recently
    matched), so memory does not grow with the number of archives read.
    """

    KEEP = 4
    _kept: list[_Reference] = []

    def __init__(self, entries: dict[str, _Entry], children: dict[str, set[str]]) -> None:
        self.entries = entries
        self.children = children
        #: values computed from trees matched to this reference (:meth:`TarTree.reuse`,
        #: ``doctor/fleet/memo.py``), let go with it
        self.memo: dict[object, Any] = {}

    def state(self, path: str) -> object:
        """What :meth:`TarTree.state` gives for ``path`` in this reference's tree."""
        return _state(self.entries, self.children, path)

    @classmethod
    def match(cls, entries: dict[str, _Entry], children: dict[str, set[str]],
              like: tuple[dict[str, _Entry], dict[str, set[str]], list[str]] | None = None
              ) -> tuple[_Reference, set[str]]:
        """A kept reference and the paths where this tree differs from it, or a new reference.

        ``like``: the tables this tree's were copied from and the paths it changed (layout.py: files
        replaced, members renamed and their directories); a reference holding those tables differs
        from it in those paths at most (each is compared where it matters, so more is harmless)."""
        limit = max(64, len(entries) // 10)
        for i, ref in enumerate(cls._kept):
            if like is not None and ref.entries is like[0] and ref.children is like[1]:
                delta: set[str] | None = set(like[2]) if len(like[2]) <= limit else None
            else:
                delta = ref.delta(entries, children, limit)
            if delta is not None:
                if i:
                    cls._kept.insert(0, cls._kept.pop(i))
                return ref, delta
        ref = cls(entries, children)  # a tree is not changed once read: its tables are shared
        cls._kept.insert(0, ref)
        del cls._kept[cls.KEEP:]
        return ref, set()

    def delta(self, entries: dict[str, _Entry], children: dict[str, set[str]], limit: int) -> set[str] | None:
        """Paths whose entry or children differ between this reference and a tree; None past ``limit``."""
        if abs(len(entries) - len(self.entries)) > limit or abs(len(children) - len(self.children)) > limit:
            return None
        out: set[str] = set(self.entries.keys() ^ entries.keys())
        mine = self.entries
        for name, entry in entries.items():
            ref = mine.get(name)
            if ref is entry or ref is None:
                continue
            if ref.kind != entry.kind or ref.target != entry.target or ref.too_large != entry.too_large \
                    or (ref.data if ref.data is not None else ref.view) != \
                    (entry.data if entry.data is not None else entry.view):
                out.add(name)
                if len(out) > limit:
                    return None
        kids = self.children
        if kids is not children:  # a tree laid out like this one's shares its table (layout.py)
            out.update(name for name, names in children.items() if kids.get(name) != names)
            out.update(kids.keys() - children.keys())
        return out if len(out) <= limit else None


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
        self._entries: dict[str, _Entry] = {"": _Entry(DIR)}
        self._children: dict[str, set[str]] = {"": set()}
        #: the reference this tree was matched to and the paths where it differs (see match_reference)
        self._base: _Reference | None = None
        self._delta: set[str] | None = None
        #: the tables this tree's were copied from, and the files it replaced (layout.py)
        self._like: tuple[dict[str, _Entry], dict[str, set[str]], list[str]] | None = None
        fh = open_regular(path, "tarball")
        try:
            if not self._load_fast(fh):
                self._entries, self._children = {"": _Entry(DIR)}, {"": set()}
                fh.seek(0)
                self._load(fh)
        except DoctorError:
            raise
        except _CORRUPT as exc:
            reason = " ".join(str(exc).split())[:300] or type(exc).__name__  # one line, however tarfile words it
            raise DoctorError(f"cannot read tarball {path}: truncated or corrupt ({reason})") from None
        finally:
            fh.close()
        self._strip_single_top()

    def _load_fast(self, fh: BinaryIO) -> bool:
        """Read a well-formed gzip or plain tar in one go (see :mod:`doctor.sources.fasttar`).

        A tar laid out like one read before in this process (another node's snapshot of the same
        configuration) is not parsed again: see :mod:`doctor.sources.layout`. ``False`` (nothing
        kept) when the archive needs the slow path, which then decides any refusal.
        """
        from doctor.sources import fasttar, layout

        try:
            raw = fh.read(fasttar.FAST_MAX_BYTES + 1)
            limits = _limits()
            with fasttar.inflated(raw) as view:
                if len(view) > MAX_STREAM_BYTES:
                    return False  # the slow path counts what it streams, and refuses
                known = layout.recall(view, limits)
                if known is not None:
                    like, cut = known
                    if self._like_layout(like, cut, view):
                        return True
                    self._entries, self._children = {"": _Entry(DIR)}, {"": set()}
                whole = view.obj
                tar = whole if type(whole) is bytes and len(whole) == len(view) else bytes(view)
            del raw
            heads: list[int] = []
            files: dict[str, tuple[int, int]] = {}
            named: dict[int, tuple[str, str]] = {}
            counts = [0, 0, 0]
            fasttar.members(tar, MAX_NAME_CHARS * 16,
                            self._member_adder(memoryview(tar), counts, files, heads, named), heads)
        except (fasttar.Fallback, OSError, MemoryError):
            return False
        if "" not in files:  # no hard link (its entry copies another's data): keep the layout
            index = {h + 512: i for i, h in enumerate(heads)}
            # members may be renamed later only when no name is met twice (see layout.Layout)
            once = {n for _, n in named.values()}
            exact = len(once) == len(named)
            implicit = frozenset(n for n, e in self._entries.items() if e.kind == DIR and n and n not in once)
            layout.remember(layout.Layout(tar, heads, {index[offset]: (name, size)
                                                       for name, (offset, size) in files.items()},
                                          (self._entries, self._children), limits,
                                          caps=(MAX_FILE_BYTES, MAX_TAR_BYTES, MAX_STREAM_BYTES),
                                          totals=(counts[2], counts[1]), members=named if exact else None,
                                          implicit=implicit))
        return True

    def _like_layout(self, like: Any, cut: Any, view: memoryview) -> bool:
        """Make this tree the kept ``like`` layout's with what ``cut`` found different (layout.py):
        files with other data, members with other names or link targets. ``False`` (nothing kept)
        when a renamed member would make the tree anything but the same members renamed (a name
        met twice, a directory it would make implicitly, something left without its parent, a
        directory the earlier tree made implicitly left empty): the caller then reads the archive
        member by member."""
        entries, children = like.tables
        changed, renamed = cut
        # entries are shared, and the children table (never changed once read); the few files of
        # its own are copied (the view is a buffer reused for the next one)
        mine = dict(entries)
        for name, offset, size in changed:
            mine[name] = _Entry(FILE, bytes(view[offset:offset + size]))
        touched = [name for name, _, _ in changed]
        kids = children
        if renamed:
            kids = dict(children)
            copied: set[str] = set()

            def children_of(parent: str) -> set[str]:
                if parent not in copied:
                    kids[parent] = set(kids[parent])
                    copied.add(parent)
                return kids[parent]

            gone = {like.members[r.index][1] for r in renamed}
            for r in reversed(renamed):  # what is under a directory before it
                kind, old = like.members[r.index]
                parent, _, base = old.rpartition("/")
                if mine.pop(old, None) is None or parent not in kids:
                    return False
                children_of(parent).discard(base)
                if kind == "dir":
                    if any(f"{old}/{child}" not in gone for child in children[old]):
                        return False  # something under it keeps its name: its parent would be implicit
                    kids.pop(old)
                touched += (old, parent)
            for r in renamed:
                kind, raw, link = r.member()
                try:
                    name = _safe_member_name(raw)
                except DoctorError:
                    return False
                parent, _, base = name.rpartition("/")
                above = mine.get(parent)
                if not name or name in mine or above is None or above.kind != DIR or parent not in kids:
                    return False
                if kind == "symlink":
                    mine[name] = _Entry(LINK, target=link)
                elif kind == "dir":
                    mine[name] = _Entry(DIR)
                    kids[name] = set()
                    copied.add(name)
                elif kind == "file" and not link:
                    mine[name] = _Entry(FILE, bytes(view[r.offset:r.offset + r.size]))
                else:
                    return False
                children_of(parent).add(base)
                touched += (name, parent)
            if any(not kids.get(d) for d in like.implicit.intersection(touched)):
                return False  # reading member by member would not make that directory
        self._entries, self._children = mine, kids
        self._like = entries, children, touched
        return True

    def _member_adder(self, blob: memoryview, counts: list[int], files: dict[str, tuple[int, int]],
                      heads: list[int] | None = None,
                      named: dict[int, tuple[str, str]] | None = None) -> Callable[[str, str, str, int, int], None]:
        """The fast path's per-member callback: adds to this tree, counting toward the limits in ``counts``;
        ``files`` maps each name whose entry holds a member's data to its (offset, size) (``""``: a hard link);
        ``named`` maps the header index (in ``heads``) of each member kept to its (kind, name)."""
        from doctor.sources import fasttar

        def member(kind: str, name: str, linkname: str, offset: int, size: int) -> None:
            counts[0] += 1
            counts[1] += size
            if counts[0] > MAX_MEMBERS or counts[1] > MAX_STREAM_BYTES:
                raise fasttar.Fallback
            try:
                name = _safe_member_name(name)
            except DoctorError:
                raise fasttar.Fallback from None
            if not name:
                return
            if named is not None and heads is not None and kind != "hardlink":
                named[len(heads) - 1] = kind, name
            files.pop(name, None)  # a later member of that name replaces the entry
            if kind == "symlink":
                if len(linkname) > MAX_NAME_CHARS:
                    raise fasttar.Fallback
                self._add(name, _Entry(LINK, target=linkname))
            elif kind == "hardlink":
                files[""] = (0, 0)
                src = self._entries.get("/".join(split_path(linkname)))
                if src is not None and src.kind == FILE:
                    self._add(name, _Entry(FILE, src.data, too_large=src.too_large, view=src.view))
            elif kind == "dir":
                self._add(name, _Entry(DIR))
            elif size > MAX_FILE_BYTES:
                self._add(name, _Entry(FILE, None, too_large=True))
            else:
                counts[2] += size
                if counts[2] > MAX_TAR_BYTES:
                    raise fasttar.Fallback
                self._add(name, _Entry(FILE, b"" if not size else None, view=blob[offset:offset + size]))
                if size:
                    files[name] = (offset, size)

        return member

    def _load(self, fh: BinaryIO) -> None:
        path = self.path
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
                name = _safe_member_name(member.name)
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
                    self._add(name, _Entry(LINK, target=member.linkname))
                elif member.islnk():
                    src = self._entries.get("/".join(split_path(member.linkname)))
                    if src is not None and src.kind == FILE:
                        self._add(name, _Entry(FILE, src.data, too_large=src.too_large))
                elif member.isdir():
                    self._add(name, _Entry(DIR))
                elif member.isfile():
                    if member.size > MAX_FILE_BYTES:
                        self._add(name, _Entry(FILE, None, too_large=True))
                        continue
                    held += member.size
                    if held > MAX_TAR_BYTES:
                        raise DoctorError(f"tarball {path} refused: its files hold more than "
                                          f"{MAX_TAR_BYTES >> 20} MiB (limit)")
                    fobj = tf.extractfile(member)
                    data = fobj.read(member.size) if fobj is not None else b""
                    self._add(name, _Entry(FILE, data))
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

    def _ensure_dir(self, path: str) -> None:
        """Make ``path`` and its missing ancestors directories; stops at the first one known."""
        child: str | None = None
        while True:
            known = path in self._children
            if not known:
                self._children[path] = set()
                self._entries.setdefault(path, _Entry(DIR))
            if child is not None:
                self._children[path].add(child)
            if known:
                return
            path, _, child = path.rpartition("/")

    def _add(self, name: str, entry: _Entry) -> None:
        parent, _, base = name.rpartition("/")
        self._ensure_dir(parent)
        self._children[parent].add(base)
        existing = self._entries.get(name)
        if existing is not None and existing.kind == DIR and entry.kind == DIR:
            return
        self._entries[name] = entry
        if entry.kind == DIR:
            self._children.setdefault(name, set())

    def match_reference(self) -> None:
        """Compare this tree with the kept references (see :class:`_Reference`); ``gnd fleet`` asks."""
        if self._base is None:
            self._base, self._delta = _Reference.match(self._entries, self._children, self._like)

    def state(self, path: str) -> object:
        """Everything a primitive can tell about ``path`` (entry and children), to compare two trees."""
        return _state(self._entries, self._children, path)

    def unchanged(self, looked: frozenset[str], own: dict[str, object], delta: frozenset[str]) -> bool:
        """Whether every path in ``looked`` is here as it was in the tree that noted it: one matched
        to this tree's reference, differing from it in ``delta`` (their states in ``own``)."""
        base = self._base
        if base is None or self._delta is None:
            return False
        for path in looked & (self._delta | delta):
            before = own[path] if path in own else base.state(path)
            if self.state(path) != before:
                return False
        return True

    def reuse(self, key: object, compute: Callable[[], T]) -> T:
        """``compute()`` (a pure function of this tree), or its value on an earlier tree matched to the
        same reference when nothing it looked at differs (``gnd fleet``: a glob over ``/proc/sys``)."""
        base = self._base
        if base is None or self._delta is None:
            return compute()
        rec = base.memo.get(key)
        if rec is not None and self.unchanged(rec[0], rec[1], rec[2]):
            if self._trace is not None:
                self._trace.update(rec[0])
            return rec[3]  # type: ignore[return-value]
        value, looked = self.traced(compute)
        if len(base.memo) >= 4096:
            base.memo.clear()
        base.memo[key] = (frozenset(looked), {p: self.state(p) for p in looked & self._delta},
                          frozenset(self._delta), value)
        return value

    def _strip_single_top(self) -> None:
        only = inner_folder(self._children.get("", set()), lambda name: self._entries[name].kind == DIR)
        if only is None:
            return
        self._like = None
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
        if self._trace is not None:
            self._trace.add(path)
        entry = self._entries.get(path)
        return entry.kind if entry else None

    def readlink(self, path: str) -> str | None:
        if self._trace is not None:
            self._trace.add(path)
        entry = self._entries.get(path)
        return entry.target if entry and entry.kind == LINK else None

    def listdir(self, path: str) -> list[str] | None:
        if self._trace is not None:
            self._trace.add(path)
        entry = self._entries.get(path)
        if entry is None or entry.kind != DIR:
            return None
        return sorted(self._children.get(path, set()))

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        if self._trace is not None:
            self._trace.add(path)
        entry = self._entries.get(path)
        if entry is None or entry.kind != FILE or entry.too_large:
            return None
        if entry.data is None and entry.view is not None:
            if len(entry.view) > cap:
                return None
            entry.data = bytes(entry.view)
            entry.view = None
        if entry.data is None:
            return None
        return entry.data if len(entry.data) <= cap else None


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
            return value if isinstance(value, bytes) and len(value) <= cap else None
        return self.base.read(path, cap)


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
