"""Sources: one read-only interface over the live host, snapshots (directory or tarball) and sosreports.

A source answers "read this path", "list this folder", "resolve this link" and "give me the
output of this command" for one root, and knows nothing about GPUs. :func:`open_source` picks
the implementation from the argument.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from doctor import specs
from doctor.deadline import Deadline, DeadlineReached
from doctor.errors import DoctorError
from doctor.record import record
from doctor.safe_open import path_kind
from doctor.sources.kinds import MANIFEST, SNAPSHOT, SOSREPORT, SOURCE_MARKERS, inner_folder, source_kind
from doctor.sources.tree import DIR, FILE, LINK, MAX_FILE_BYTES, OsTree, TarTree, Tree, is_tarball, split_path

LIVE = "live"
T = TypeVar("T")


@record
class CommandOutput:
    """A command's output, or why there is none. ``where`` names the evidence (command or file)."""

    spec: str
    text: str | None
    where: str
    reason: str | None = None
    duration_s: float | None = None
    timed_out: bool = False
    returncode: int | None = None
    #: not run, or stopped, because ``--deadline`` passed (:mod:`doctor.deadline`)
    by_deadline: bool = False


class TextReads:
    """Text and first-line reads over ``read_bytes`` (a :class:`Source`'s paths, a :class:`Folder`'s names)."""

    __slots__ = ()

    def read_bytes(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        raise NotImplementedError

    def read_text(self, path: str, cap: int = MAX_FILE_BYTES) -> str | None:
        """Text of the file at ``path`` (undecodable bytes replaced), or ``None``."""
        data = self.read_bytes(path, cap)
        return None if data is None else data.decode("utf-8", "replace")

    def read_line(self, path: str) -> str | None:
        """First line of a sysfs-style attribute file, stripped; ``None`` if missing or empty."""
        text = self.read_text(path, cap=65536)
        if text is None:
            return None
        text = text.strip()
        return text.splitlines()[0].strip() if text else None


class Source(TextReads):
    """Read-only access to one root. Subclasses differ only in how commands are answered."""

    kind = SNAPSHOT
    #: whether these are the host's own files, read on the host (the live host, or a tree handed over as
    #: its root): only then may ``gnd fix-script`` write steps that run unattended. A snapshot, sosreport
    #: or bug report is a copy that anyone may have edited, and comes from another machine.
    host_root = False

    def __init__(self, tree: Tree, location: str) -> None:
        self.tree = tree
        self.location = location
        self._commands: dict[str, CommandOutput] = {}
        #: every relative path read through this source, when recording is switched on
        self.accessed: set[str] | None = None
        #: what was there but not read whole, by path, with why: a file larger than the read's cap, or
        #: a listing cut at a count cap (:meth:`capped`); the facts built from it are incomplete and
        #: :mod:`doctor.inputs` turns that into ``unknown``, never ``pass``
        self.unread: dict[str, str] = {}
        #: the whole run's time limit (``--deadline``); only a live host's commands take time to answer
        self.deadline: Deadline | None = None
        #: commands the deadline stopped or kept from starting, by cache key
        self.cut: dict[str, CommandOutput] = {}
        #: cache keys of the commands asked for (cache hits too), when the runner is listening
        self.asked: set[str] | None = None

    # --- files -----------------------------------------------------------------------------
    def _note(self, path: str) -> None:
        if self.accessed is not None:
            self.accessed.add("/".join(split_path(path)))

    def read_bytes(self, path: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        """Bytes of the file at ``path`` (links followed inside the root), or ``None``."""
        self._note(path)
        real = self.tree.resolve(path)
        if real is None:
            return None
        data = self.tree.read(real, cap)  # trees return None for anything but a regular file
        if data is None and real in self.tree.over_cap:  # there, but larger than ``cap``: not read
            self.unread["/".join(split_path(path))] = "larger than the read limit, not read"
        return data

    def capped(self, items: list[T], cap: int, where: str, what: str) -> list[T]:
        """The first ``cap`` of ``items``; more than that is noted as ``where`` not read whole.

        The one way a fact builder bounds a count (processes, routes, lines, events): hitting the cap
        is an input the runner reports ``unknown`` through :mod:`doctor.inputs`, never a silent cut."""
        if len(items) > cap:
            self.unread["/".join(split_path(where))] = (f"{len(items):,} {what}, over the limit of {cap:,}: "
                                                         f"only the first {cap:,} read")
            return items[:cap]
        return items

    def exists(self, path: str) -> bool:
        self._note(path)
        return self.tree.resolve(path) is not None

    def is_dir(self, path: str) -> bool:
        real = self.tree.resolve(path)
        return real is not None and self.tree.kind(real) == DIR

    def listdir(self, path: str) -> list[str]:
        """Names in a directory (following links); empty if missing."""
        self._note(path)
        real = self.tree.resolve(path)
        if real is None:
            return []
        return self.tree.listdir(real) or []

    def folder(self, path: str) -> Folder:
        """The directory at ``path``, resolved once and listed once: its files read by name (see :class:`Folder`)."""
        self._note(path)
        real = self.tree.resolve(path)
        kinds = self.tree.listing(real) if real is not None else None
        return Folder(self, "/".join(split_path(path)), real, kinds or {})

    def realpath(self, path: str) -> str | None:
        """The link-free path inside the root, like ``readlink -f`` (relative, no leading ``/``)."""
        self._note(path)
        return self.tree.resolve(path)

    def readlink(self, path: str) -> str | None:
        """The raw target of a symlink (its parents resolved), or ``None``."""
        self._note(path)
        real = self.tree.resolve(path, follow_last=False)
        if real is None or self.tree.kind(real) != LINK:
            return None
        return self.tree.readlink(real)

    def link_name(self, path: str) -> str | None:
        """Basename of a symlink's target (e.g. the driver name of ``.../driver``)."""
        target = self.readlink(path)
        return target.rstrip("/").rsplit("/", 1)[-1] if target else None

    def glob(self, pattern: str) -> list[str]:
        """Paths matching a pattern with ``*``/``?``/``[..]`` per component and ``{a,b}``."""
        out: list[str] = []
        for expanded in specs.expand_braces(pattern):
            out.extend(self._glob_one(split_path(expanded)))
        return sorted(dict.fromkeys(out))

    def _glob_one(self, parts: list[str]) -> list[str]:
        paths = [""]
        for i, comp in enumerate(parts):
            last = i == len(parts) - 1
            nxt: list[str] = []
            magic = any(c in comp for c in "*?[")
            for base in paths:
                if magic:
                    names = [n for n in self.listdir(base) if fnmatch.fnmatchcase(n, comp)]
                else:
                    names = [comp]
                for name in names:
                    candidate = f"{base}/{name}" if base else name
                    if last:
                        if self.tree.resolve(candidate, follow_last=False) is not None:
                            nxt.append(candidate)
                    elif self.is_dir(candidate):
                        nxt.append(candidate)
            paths = nxt
        return paths

    def spec_paths(self, spec: specs.Spec) -> list[str]:
        """Files of a file spec present in this source (sosreport paths included; ``{netdev}`` matches any name)."""
        patterns = spec.paths + (tuple(p.replace(specs.NETDEV, "*") for p in spec.sos_paths)
                                 if self.kind == SOSREPORT else ())
        out: list[str] = []
        for pattern in patterns:
            out.extend(self.glob(pattern))
        return sorted(dict.fromkeys(out))

    def roce_netdevs(self) -> list[str]:
        """Interfaces under ``sys/class/net`` on the PCI function of an RDMA device with an Ethernet port
        (RoCE): the ones per-interface commands run for. Names that fail :func:`specs.valid_netdev` are left out."""
        present = [n for n in self.listdir("sys/class/net")[:4096] if specs.valid_netdev(n)]
        if not present:
            return []
        by_pci: dict[str, list[str]] = {}
        for name in present:
            real = self.realpath(f"sys/class/net/{name}/device")
            if real:
                by_pci.setdefault(real, []).append(name)
        out: set[str] = set()
        for dev in self.listdir("sys/class/infiniband")[:1024]:
            base = f"sys/class/infiniband/{dev}"
            layers = [self.read_line(f"{base}/ports/{p}/link_layer") for p in self.listdir(f"{base}/ports")[:64]]
            if not any((layer or "").lower() == "ethernet" for layer in layers):
                continue
            real = self.realpath(f"{base}/device")
            if real:
                out.update(by_pci.get(real, ()))
        return sorted(out)

    # --- commands ----------------------------------------------------------------------------
    def prefetch(self, names: Iterable[str]) -> None:
        """Start these command specs early where that is possible (the live host); elsewhere nothing."""

    def netdev_command(self, name: str, netdev: str) -> CommandOutput:
        """Output of the per-interface command spec ``name`` for ``netdev`` (cached); an unsafe name is refused."""
        key = f"{name}\0{netdev}"

        def compute() -> CommandOutput:
            spec = specs.get(name)
            if not specs.valid_netdev(netdev):
                shown = ascii(netdev)[:40]
                return CommandOutput(spec.name, None, f"{spec.argv[0]} for interface {shown}",
                                     reason=f"refused interface name {shown} (not a safe netdev name)")
            return self._netdev_command(spec, netdev)

        return self._cached_command(key, compute)

    def _cached_command(self, key: str, compute: Callable[[], CommandOutput]) -> CommandOutput:
        """A command's output, computed once."""
        if self.asked is not None:
            self.asked.add(key)
        hit = self._commands.get(key)
        if hit is None:
            hit = self._commands[key] = compute()
            if hit.by_deadline:
                self.cut[key] = hit
        return hit

    def _netdev_command(self, spec: specs.Spec, netdev: str) -> CommandOutput:
        path = spec.snapshot_path_for(netdev)
        text = self.read_text(path)
        if text is not None:
            return CommandOutput(spec.name, text, path)
        for sos_path in spec.sos_paths_for(netdev):
            text = self.read_text(sos_path)
            if text is not None:
                return CommandOutput(spec.name, text, sos_path)
        reason = self.manifest_reason(spec.name) or f"{path} not in this {self.kind}"
        return CommandOutput(spec.name, None, path, reason=reason)

    def command(self, name: str) -> CommandOutput:
        """Output of the command spec ``name`` (cached)."""
        return self._cached_command(name, lambda: self._command(specs.get(name)))

    def _command(self, spec: specs.Spec) -> CommandOutput:
        path = spec.snapshot_path
        if spec.argv:
            text = self.read_text(path)
            if text is not None:
                return CommandOutput(spec.name, text, path)
        for sos_path in spec.sos_paths:
            text = self.read_text(sos_path)
            if text is not None:
                return CommandOutput(spec.name, text, sos_path)
        reason = self.manifest_reason(spec.name) or f"{path if spec.argv else spec.name} not in this {self.kind}"
        return CommandOutput(spec.name, None, path, reason=reason)

    # --- identity -----------------------------------------------------------------------------
    def manifest(self) -> dict[str, object] | None:
        """The collector's manifest of a snapshot, if there is one and it is valid JSON."""
        text = self.read_text(MANIFEST, cap=4 * 1024 * 1024)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply (a crafted node)
            return None
        return data if isinstance(data, dict) else None

    def manifest_reason(self, spec_name: str) -> str | None:
        manifest = self.manifest()
        if not manifest:
            return None
        status = manifest.get("specs", {})
        entry = status.get(spec_name) if isinstance(status, dict) else None
        if isinstance(entry, dict) and entry.get("status") not in (None, "ok"):
            detail = entry.get("detail")
            return f"{spec_name}: {entry.get('status')} when collected" + (f" ({detail})" if detail else "")
        return None

    def collected_at(self) -> str | None:
        manifest = self.manifest()
        value = manifest.get("collected_at") if manifest else None
        return value if isinstance(value, str) else None

    def as_root(self) -> bool | None:
        """Whether what this source holds was read as root (the collector's manifest records its uid);
        ``None``: not recorded. Advice to "run as root" is given only when this is not ``True``."""
        manifest = self.manifest()
        uid = manifest.get("uid") if manifest else None
        return uid == 0 if isinstance(uid, int) and not isinstance(uid, bool) else None


class Folder(TextReads):
    """One directory of a source, resolved once and listed once with each name's kind.

    A PCI device's dozen attribute files are read by name through it: a regular file straight from
    the resolved folder (no path resolved, no ``lstat``, again), a name that is not in the listing
    not looked up at all, and a link resolved inside the root as any path is (:meth:`Source.read_bytes`).
    What is read is noted and capped exactly as through the source.
    """

    __slots__ = ("source", "path", "real", "kinds")

    def __init__(self, source: Source, path: str, real: str | None, kinds: dict[str, str | None]) -> None:
        self.source = source
        self.path = path  # as the checks name it (``sys/bus/pci/devices/0000:17:00.0``)
        self.real = real  # where it is inside the root; None when missing
        self.kinds = kinds  # name -> FILE, DIR, LINK or None (another type)

    def __contains__(self, name: str) -> bool:
        return name in self.kinds

    def _in(self, name: str) -> str:
        return f"{self.path}/{name}" if self.path else name

    def read_bytes(self, name: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        """Bytes of the file ``name`` in this folder, as :meth:`Source.read_bytes` of its path gives them."""
        kind = self.kinds.get(name)
        if kind != FILE:  # a link is resolved as any path; anything else is no file
            return self.source.read_bytes(self._in(name), cap) if kind == LINK else None
        src, tree = self.source, self.source.tree
        src._note(self._in(name))
        real = f"{self.real}/{name}" if self.real else name
        data = tree.read(real, cap)
        if data is None and real in tree.over_cap:
            src.unread[self._in(name)] = "larger than the read limit, not read"
        return data

    def link_name(self, name: str) -> str | None:
        """Basename of the target of the link ``name`` (:meth:`Source.link_name`)."""
        if self.kinds.get(name) != LINK:
            return None
        self.source._note(self._in(name))
        target = self.source.tree.readlink(f"{self.real}/{name}" if self.real else name)
        return target.rstrip("/").rsplit("/", 1)[-1] if target else None

    def exists(self, name: str) -> bool:
        """Whether ``name`` is there (a link: whether its target is, inside the root)."""
        kind = self.kinds.get(name)
        return kind is not None and (kind != LINK or self.source.exists(self._in(name)))

    def listdir(self, name: str) -> list[str]:
        """Names in the folder ``name`` of this one (:meth:`Source.listdir`)."""
        return self.source.listdir(self._in(name)) if self.kinds.get(name) in (DIR, LINK) else []


class SnapshotSource(Source):
    """A directory or tarball laid out like ``/`` plus ``commands/`` (what ``gnd collect`` writes)."""

    kind = SNAPSHOT


class SosreportSource(Source):
    """A sosreport directory or tarball (``sos_commands/``, ``sos_reports/``, mirrored ``proc/``...)."""

    kind = SOSREPORT

    def collected_at(self) -> str | None:
        """``start_time`` of sos's own manifest, as ISO 8601."""
        text = self.read_text("sos_reports/manifest.json", cap=8 * 1024 * 1024)
        try:
            value = json.loads(text).get("start_time") if text else None
        except (ValueError, AttributeError, RecursionError):
            return None
        return value.replace(" ", "T", 1) if isinstance(value, str) else None


class LiveSource(Source):
    """The host the doctor runs on: files under ``/`` and commands run with timeouts."""

    kind = LIVE
    host_root = True

    def __init__(self, root: str = "/", run_commands: bool | None = None) -> None:
        super().__init__(OsTree(root), root)
        #: run commands here (default only for ``/``); otherwise read ``commands/`` under the root
        self.run_commands = (root == "/") if run_commands is None else run_commands
        #: commands started by :meth:`prefetch`, not yet asked for
        self._started: dict[str, CommandOutput | Callable[[], CommandOutput]] = {}

    def as_root(self) -> bool | None:
        """This process's own privilege when it reads this host; a root folder's recorded one otherwise."""
        return os.geteuid() == 0 if self.run_commands else super().as_root()

    def prefetch(self, names: Iterable[str]) -> None:
        """Start these command specs now, to run while the doctor does other work; :meth:`command` waits
        for their output (each waited on for at most its timeout once asked for)."""
        if not self.run_commands:
            return
        for name in names:
            spec = specs.get(name)
            if spec.argv and name not in self._commands and name not in self._started:
                self._started[name] = start_command(spec, deadline=self.deadline)

    def _command(self, spec: specs.Spec) -> CommandOutput:
        if not self.run_commands:
            # a recorded tree used as a host root (``gnd collect --root``): commands come from it
            return super()._command(spec)
        if not spec.argv:
            return CommandOutput(spec.name, None, spec.name, reason=f"{spec.name} exists only in sosreports")
        started = self._started.pop(spec.name, None)
        if started is not None:
            return started if isinstance(started, CommandOutput) else started()
        return run_command(spec, deadline=self.deadline)

    def _netdev_command(self, spec: specs.Spec, netdev: str) -> CommandOutput:
        if not self.run_commands:
            return super()._netdev_command(spec, netdev)
        argv = spec.argv_for(netdev)
        if netdev not in self.listdir("sys/class/net"):
            return CommandOutput(spec.name, None, " ".join(argv), reason=f"no interface {netdev} under /sys/class/net")
        hung = next((o for k, o in self._commands.items() if k.startswith(f"{spec.name}\0") and o.timed_out), None)
        if hung is not None:  # one hung run per spec: the next interfaces would hang the same way
            return CommandOutput(spec.name, None, " ".join(argv), reason=f"not run: {hung.reason}", timed_out=True)
        return run_command(spec, argv, deadline=self.deadline)


def run_command(spec: specs.Spec, argv: tuple[str, ...] | None = None,
                deadline: Deadline | None = None) -> CommandOutput:
    """Run a command spec (or ``argv``, one interface's instance of it) with its timeout, shortened to what
    is left of ``deadline``; a missing or hung program is a normal answer."""
    started = start_command(spec, argv, deadline)
    return started if isinstance(started, CommandOutput) else started()


def start_command(spec: specs.Spec, argv: tuple[str, ...] | None = None,
                  deadline: Deadline | None = None) -> CommandOutput | Callable[[], CommandOutput]:
    """Start a command spec: what :func:`run_command` answers at once (not found, could not run, the
    deadline passed), or a function that waits for it (at most its timeout, or what is left of
    ``deadline``) and returns its output."""
    argv = argv or spec.argv
    where = " ".join(argv)
    if deadline is not None and deadline.passed:
        return CommandOutput(spec.name, None, where, reason=f"{where}: not run, {deadline.describe()} was reached",
                             timed_out=True, by_deadline=True)
    exe = shutil.which(argv[0])
    if exe is None:
        return CommandOutput(spec.name, None, where, reason=f"{argv[0]} not found on PATH")
    import subprocess  # imported when a command actually runs: a snapshot run never does

    start = time.monotonic()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin:/usr/sbin:/sbin"), "LC_ALL": "C"}
    try:
        proc = subprocess.Popen([exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return CommandOutput(spec.name, None, where, reason=f"{where} could not run: {exc.strerror}")
    return lambda: _finish_command(spec, proc, start, where, deadline)


def _kill(proc: Any) -> None:
    """Kill the whole process group: a hung nvidia-smi's children must not keep the pipes open."""
    import subprocess

    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=2)


def _finish_command(spec: specs.Spec, proc: Any, start: float, where: str,
                    deadline: Deadline | None = None) -> CommandOutput:
    import subprocess

    left = deadline.remaining() if deadline is not None else spec.timeout
    try:
        stdout, stderr = proc.communicate(timeout=min(spec.timeout, left))
    except subprocess.TimeoutExpired:
        _kill(proc)
        if deadline is not None and left < spec.timeout:
            return CommandOutput(spec.name, None, where, reason=f"{where}: stopped, {deadline.describe()} was reached",
                                 duration_s=time.monotonic() - start, timed_out=True, by_deadline=True)
        return CommandOutput(spec.name, None, where, reason=f"{where} timed out after {spec.timeout:g} s",
                             duration_s=time.monotonic() - start, timed_out=True)
    except DeadlineReached:
        _kill(proc)
        raise
    duration = time.monotonic() - start
    out = stdout[:MAX_FILE_BYTES].decode("utf-8", "replace")
    if proc.returncode != 0 and not out.strip():
        err = stderr.decode("utf-8", "replace").strip().splitlines()
        detail = err[0] if err else f"exit status {proc.returncode}"
        return CommandOutput(spec.name, None, where, reason=f"{where} failed: {detail}",
                             duration_s=duration, returncode=proc.returncode)
    return CommandOutput(spec.name, out, where, duration_s=duration, returncode=proc.returncode)


def _classify(tree: Tree, location: str) -> Source:
    kind = source_kind(tree.listdir("") or [])
    if kind == SOSREPORT:
        return SosreportSource(tree, location)
    if kind == SNAPSHOT:
        return SnapshotSource(tree, location)
    raise DoctorError(
        f"{location} is not a snapshot or sosreport: no sys/, proc/, commands/ or sos_commands/ inside"
    )


def _ticket_report(folder: str) -> Source | None:
    """The nvidia-bug-report log in a folder that is no snapshot or sosreport (its only such file), else None."""
    from doctor.sources import bugreport

    try:
        names = sorted(os.listdir(folder))[:10_000]
    except OSError:
        return None
    logs = [n for n in names if n.startswith("nvidia-bug-report") and ".log" in n and not n.endswith(".old.gz")
            and os.path.isfile(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n))]
    logs = [n for n in logs if bugreport.sniff(os.path.join(folder, n))]
    return bugreport.open_bugreport(os.path.join(folder, logs[0])) if len(logs) == 1 else None


def open_source(arg: str | None) -> Source:
    """Open the live host (``None`` or ``/``), a snapshot or a sosreport (directory or tarball), or an
    nvidia-bug-report log (``.log`` or ``.log.gz``)."""
    if arg is None or os.path.abspath(arg) == "/":
        return LiveSource("/")
    kind = path_kind(arg)
    if kind is None:
        raise DoctorError(f"{arg}: no such file or directory")
    if kind == "other":  # a FIFO or device would block or never end: only files and directories
        raise DoctorError(f"{arg}: not a regular file or directory; give a snapshot or sosreport")
    if kind == "dir":
        tree: Tree = OsTree(arg)
        names = tree.listdir("")
        if names is None:
            raise DoctorError(f"{arg}: cannot list the directory (permission denied?)")
        inner = inner_folder(names, lambda name: os.path.isdir(os.path.join(arg, name)))
        root = os.path.join(arg, inner) if inner else arg
        if source_kind(OsTree(root).listdir("") or []) is None:
            report = _ticket_report(root)
            if report is not None:  # a ticket folder holding the bug report someone attached
                return report
        return _classify(OsTree(root) if inner else tree, arg)
    if not os.access(arg, os.R_OK):
        raise DoctorError(f"{arg}: permission denied")
    from doctor.sources import bugreport  # recognised by its first lines, whatever the file is named

    if bugreport.sniff(arg):
        return bugreport.open_bugreport(arg)
    if not is_tarball(arg):
        raise DoctorError(f"{arg} is not a directory or a tarball (.tar, .tar.gz, .tgz, .tar.bz2, .tar.xz)")
    return _classify(TarTree(arg), arg)


__all__ = ["CommandOutput", "Folder", "LiveSource", "SnapshotSource", "SosreportSource", "Source", "open_source",
           "LIVE", "SNAPSHOT", "SOSREPORT", "MANIFEST", "DIR", "FILE", "LINK", "SOURCE_MARKERS"]
