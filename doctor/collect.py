"""``gnd collect``: write a snapshot tarball of exactly what the specs registry names.

Symlinks are kept as symlinks (the PCI upstream walk needs the resolved device paths), secrets
are filtered by each spec's sanitiser before anything is written, commands run with timeouts,
and a manifest records per-spec status, durations and timeouts.
"""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO

from doctor import __version__, specs
from doctor.errors import DoctorError
from doctor.secrets import mask_text, sanitize
from doctor.sources import MANIFEST, CommandOutput, Source
from doctor.sources.tree import DIR, FILE, LINK, split_path

if TYPE_CHECKING:
    from doctor.facts.watch import WatchRecord

#: Longest host name part of a default snapshot name (a DNS label is at most 63 characters)
MAX_HOST = 63
_HOST_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
#: Numbered alternatives tried for a default snapshot name that exists (``-2`` up to this)
MAX_NUMBERED = 999

#: A transform applied to every file's bytes and link target before writing (redaction).
Transform = Callable[[str, bytes], bytes]


@dataclass
class _Snapshot:
    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    unreadable: int = 0
    #: links already met and where they lead inside the root: each folder and link on the way to
    #: 200,000 files is looked at once, not once per file below it (66 s at 20,000 PCI devices)
    resolved: dict[str, str | None] = field(default_factory=dict)


def _chroot_join(base: str, target: str) -> str:
    """``target`` taken from the folder ``base`` inside the root: absolute means from the root, and
    ``..`` at the root stays at the root (how the snapshot readers resolve links)."""
    parts = [] if target.startswith("/") else split_path(base)
    for part in split_path(target):
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/".join(parts)


def _add_path(src: Source, snap: _Snapshot, path: str, sanitizer: str | None, depth: int = 0) -> bool:
    """Copy one path, recording every symlink met on the way and what it points to (chains of
    links such as ``/etc/alternatives`` or merged-``/usr`` included), so the snapshot resolves the same."""
    tree = src.tree
    if depth > 8:
        return False
    cur = ""
    parts = split_path(path)
    for i, comp in enumerate(parts):
        candidate = f"{cur}/{comp}" if cur else comp
        kind = DIR if candidate in snap.dirs else LINK if candidate in snap.links else tree.kind(candidate)
        last = i == len(parts) - 1
        if kind is None:
            return False
        if kind == LINK:
            target = snap.links.get(candidate) or tree.readlink(candidate)
            if target is None:
                return False
            if candidate not in snap.links:  # else already copied with its target
                snap.links[candidate] = target
                _add_path(src, snap, _chroot_join(cur, target), sanitizer, depth + 1)
            if last:
                return True
            if candidate not in snap.resolved:
                snap.resolved[candidate] = tree.resolve(candidate)
            resolved = snap.resolved[candidate]
            if resolved is None:
                return False
            cur = resolved
            continue
        if kind == DIR:
            snap.dirs.add(candidate)
            cur = candidate
            continue
        if kind == FILE and last:
            if candidate in snap.files:
                return True
            data = tree.read(candidate)
            if data is None:
                snap.unreadable += 1
                return False
            snap.files[candidate] = sanitize(candidate, data, sanitizer)
            return True
        return False
    return True


def _leaf_dirs(snap: _Snapshot) -> list[str]:
    """The folders with nothing below them: the only ones written as members (a reader takes every
    other folder from the names of the members below it, as :class:`~doctor.sources.tree.TarTree` does)."""
    covered = {name.rpartition("/")[0] for table in (snap.files, snap.links, snap.dirs) for name in table}
    return sorted(snap.dirs - covered)


def _add_member(tf: tarfile.TarFile, info: tarfile.TarInfo, data: bytes | None = None) -> None:
    """One member with a plain ustar header (a long name split into its prefix field), or with a pax
    header where ustar cannot hold it (a name over 255 bytes, a link target over 100, non-ASCII)."""
    ascii_only = info.name.isascii() and info.linkname.isascii()
    tf.format = tarfile.USTAR_FORMAT if ascii_only else tarfile.PAX_FORMAT
    body = None if data is None else io.BytesIO(data)
    try:
        tf.addfile(info, body)  # nothing is written when the header cannot be made
    except ValueError:
        tf.format = tarfile.PAX_FORMAT
        tf.addfile(info, body)


def _write_tar(out_path: str, snap: _Snapshot, manifest: dict[str, Any], transform: Transform | None,
               numbered: bool = False) -> str:
    """The tarball written to ``out_path`` (replaced whole), or with ``numbered`` to the first of
    ``out_path``, ``NAME-2.tar.gz``, ``NAME-3.tar.gz`` ... that does not exist; returns the name written."""
    from doctor.output import atomic_file, new_file

    if not numbered:
        with atomic_file(out_path) as raw:
            _tar_into(raw, snap, manifest, transform)
        return out_path
    with new_file(numbered_names(out_path)) as (raw, taken):
        _tar_into(raw, snap, manifest, transform)
    return taken[0]


def numbered_names(path: str, most: int = MAX_NUMBERED) -> Iterator[str]:
    """``path``, then ``path`` with ``-2`` ... ``-most`` before its ``.tar.gz`` (or last) suffix."""
    stem, suffix = (path[: -len(".tar.gz")], ".tar.gz") if path.endswith(".tar.gz") else os.path.splitext(path)
    yield path
    for n in range(2, most + 1):
        yield f"{stem}-{n}{suffix}"


def _tar_into(raw: BinaryIO, snap: _Snapshot, manifest: dict[str, Any], transform: Transform | None) -> None:
    now = int(time.time())  # whole seconds: a float mtime would make every member carry a PAX header
    with tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tf:
        for d in _leaf_dirs(snap):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, now
            _add_member(tf, info)
        for name, target in sorted(snap.links.items()):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, now
            _add_member(tf, info)
        body = json.dumps(manifest, indent=2, sort_keys=True).encode()
        for name, data in [*sorted(snap.files.items()), (MANIFEST, body)]:  # the manifest last
            if transform is not None:
                data = transform(name, data)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, now
            _add_member(tf, info, data)


def _stored(snap: _Snapshot, path: str, output: CommandOutput, spec: specs.Spec,
            entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` completed with what became of one command's ``output``, kept (sanitised) at ``path`` when it ran."""
    if output.text is not None:
        snap.files[path] = sanitize(path, output.text.encode(), spec.sanitizer)
        entry["status"] = "ok"
    else:
        entry["status"] = "timeout" if output.timed_out else "missing"
        entry["detail"] = output.reason or ""
    if output.returncode is not None:
        entry["returncode"] = output.returncode
    return entry


def _collect_per_netdev(src: Source, snap: _Snapshot, spec: specs.Spec) -> dict[str, Any]:
    """Run a per-interface command for each RoCE interface; the entry records each one's status."""
    per: dict[str, dict[str, Any]] = {}
    for netdev in src.roce_netdevs():
        path = spec.snapshot_path_for(netdev)
        per[netdev] = _stored(snap, path, src.netdev_command(spec.name, netdev), spec, {"path": path})
    entry: dict[str, Any] = {"kind": "command", "per_netdev": True, "argv": list(spec.argv),
                             "path": spec.snapshot_path, "netdevs": per}
    failed = [e for e in per.values() if e["status"] != "ok"]
    if not per:
        entry.update(status="skipped", detail="no RoCE interface")
    elif len(failed) < len(per):
        entry["status"] = "ok"
    else:
        entry.update(status=failed[0]["status"], detail=failed[0]["detail"])
    return entry


def safe_host(hostname: str | None) -> str:
    """``hostname`` in a file-name alphabet: ASCII letters, digits, ``.``, ``_`` and ``-`` (anything else,
    ``/`` and non-ASCII letters included, becomes ``_``); never starting with ``.`` or ``-``, at most
    :data:`MAX_HOST` characters; ``host`` when nothing is left."""
    text = "".join(c if c in _HOST_ALPHABET else "_" for c in (hostname or "").strip()[:MAX_HOST])
    text = text.lstrip(".-")
    return text if text.strip("_") else "host"


def default_output(hostname: str | None, now: datetime | None = None) -> str:
    """``gnd-HOST-YYYYMMDDTHHMMSSZ.tar.gz`` in the current directory (UTC; ``HOST`` from :func:`safe_host`)."""
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"gnd-{safe_host(hostname)}-{stamp}.tar.gz"


def snapshot_hostname(src: Source) -> str | None:
    """The host name of the root ``src`` reads: its kernel's, its ``/etc/hostname``, or this machine's for ``/``."""
    name = (src.read_line("proc/sys/kernel/hostname") or src.read_line("etc/hostname")
            or (socket.gethostname() if src.location == "/" else None))
    return None if name is None else mask_text(name)  # a token-shaped name: neither in the manifest nor the file name


def collect(src: Source, out_path: str, transform: Transform | None = None,
            watch: WatchRecord | None = None, numbered: bool = False) -> dict[str, Any]:
    """Collect every spec from ``src`` into the tarball ``out_path``; returns the manifest, with the name
    written under ``"written"``. ``watch``: the samples of ``gnd collect --watch``, stored as
    ``gnd/watch.json`` for ``gnd check`` to judge later. ``numbered``: never replace an existing file
    (a default name): take the first free name of :func:`numbered_names`."""
    if os.path.isdir(out_path):
        raise DoctorError(f"{out_path} is a directory; give a file name for the snapshot (-o FILE.tar.gz)")
    parent = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(parent):
        raise DoctorError(f"cannot write {out_path}: {parent} does not exist")
    start = time.monotonic()
    snap = _Snapshot()
    statuses: dict[str, dict[str, Any]] = {}
    for spec in specs.SPECS:
        t0 = time.monotonic()
        entry: dict[str, Any]
        if spec.per_netdev:
            entry = _collect_per_netdev(src, snap, spec)
        elif spec.is_command:
            entry = _stored(snap, spec.snapshot_path, src.command(spec.name), spec,
                            {"kind": "command", "argv": list(spec.argv), "path": spec.snapshot_path})
        elif spec.paths:
            before_unreadable = snap.unreadable
            count = 0
            for pattern in spec.paths:
                for path in src.glob(pattern):
                    if spec.limit is not None and count >= spec.limit:
                        break
                    count += _add_path(src, snap, path, spec.sanitizer)
            unreadable = snap.unreadable - before_unreadable
            entry = {"kind": "files", "status": "ok" if count else "missing", "files": count}
            if unreadable:
                entry["status"] = "partial" if count else "unreadable"
                entry["unreadable"] = unreadable
                entry["detail"] = (f"{unreadable} files unreadable even as root" if os.geteuid() == 0
                                   else f"{unreadable} files unreadable (run as root to collect them)")
        else:
            continue  # sosreport-only spec: nothing to collect on a host
        entry["duration_s"] = round(time.monotonic() - t0, 3)
        statuses[spec.name] = entry
    if watch is not None:
        from doctor.facts.watch import PATH

        snap.files[PATH] = json.dumps(watch.to_dict(), indent=1).encode()
        statuses["watch"] = {"kind": "watch", "status": "ok", "samples": watch.samples, "duration_s": watch.duration_s}
    hostname = snapshot_hostname(src)
    manifest = {
        "format": "gpu-node-doctor snapshot", "format_version": 1,
        "tool": {"name": "gpu-node-doctor", "version": __version__},
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": hostname, "uid": os.geteuid(), "root": src.location,
        "duration_s": round(time.monotonic() - start, 3), "specs": statuses,
        "files": len(snap.files), "links": len(snap.links),
    }
    try:
        written = _write_tar(out_path, snap, manifest, transform, numbered)
    except OSError as exc:  # read-only mount, /proc, full disk: the user's problem, not the node's
        raise DoctorError(f"cannot write {out_path}: {exc.strerror or exc}") from None
    return {**manifest, "written": written}
