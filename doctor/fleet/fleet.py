"""Fleet analysis: many nodes in parallel, streamed into small aggregates, then outliers and groups.

Each worker analyses one source (a snapshot, a sosreport or a saved JSON result) and returns a
small summary dict: check statuses, the findings that say something, and the facts digest. The
parent never holds facts; it folds each summary into column stores (digest key -> value -> nodes,
finding -> nodes) so memory grows with the number of *distinct* values, plus a few bytes per node.

Outlier nodes are the nodes that hold a finding at or above ``--fail-on`` that most nodes lack:
a finding (check, subject, severity) held by fewer than half of the analysed nodes (two of ten
nodes sharing a fault are both outliers; a finding below ``--fail-on`` never makes one). Apart
from them, configuration drift: a digest key where a clear majority shares one value and a few
nodes (at most 5 %) hold another (the one GPU at x8 where 63 others run x16), whether or not any
check fired; it is shown beside the outliers and names their facts, but makes no node an outlier
by itself. Nodes whose non-identity facts are identical form a configuration group.
"""

from __future__ import annotations

import contextlib
import glob
import os
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from doctor.errors import DoctorError
from doctor.findings import INFO, PASS, SEVERITIES, at_least, severity_order, stable_subject
from doctor.i18n import N_, join
from doctor.record import record
from doctor.sources.kinds import inner_folder, source_kind

if TYPE_CHECKING:
    from doctor.fleet.load import Node
    from doctor.runner import Result

#: A fact value held by at most this share of nodes (and at least one) is configuration drift...
OUTLIER_SHARE = 0.05
#: ...provided the most common value is held by more than this share of nodes. A finding at or above
#: ``--fail-on`` is an outlier finding when the nodes that lack it are more than this share (it is held
#: by fewer than half of the analysed nodes: "most nodes lack it").
MAJORITY_SHARE = 0.5
#: Fewer analysed nodes than this: no outlier vote (two nodes cannot outvote each other).
MIN_NODES_FOR_OUTLIERS = 3
#: A key with at least this many distinct values (and at least half as many as nodes) names machines.
IDENTITY_MIN_DISTINCT = 3
ABSENT = "(absent)"
MAX_ERROR = 300
TARBALL_SUFFIXES = (".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
STATUS_LETTER = {"critical": "C", "high": "H", "medium": "M", "low": "L", "unknown": "?", "info": "i",
                 "pass": ".", "not_applicable": "-"}

# --------------------------------------------------------------------------------------------
# Finding the sources
# --------------------------------------------------------------------------------------------


def _is_source_dir(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError:
        return True  # let the worker report why it cannot be read
    if source_kind(names) is not None:
        return True
    inner = inner_folder(names, lambda name: os.path.isdir(os.path.join(path, name)))  # an unpacked sosreport-NAME/
    try:
        return inner is not None and source_kind(os.listdir(os.path.join(path, inner))) is not None
    except OSError:
        return False


def _looks_like_source(path: str) -> bool:
    if os.path.isdir(path):
        return True
    low = path.lower()
    return low.endswith(TARBALL_SUFFIXES) or low.endswith(".json")


def expand_paths(patterns: Iterable[str]) -> list[str]:
    """Sources named by PATH arguments: a source itself, a folder of sources (one level) or a glob;
    each a local path or a URL (object storage: :func:`doctor.fleet.remote.expand`)."""
    from doctor.fleet.remote import is_url

    out: list[str] = []
    for pattern in patterns:
        if is_url(pattern):
            from doctor.fleet.remote import expand

            out.extend(expand(pattern))
            continue
        matches = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not matches:
            out.append(pattern)  # reported as unreadable: no such file
        for path in matches:
            if os.path.isdir(path) and not _is_source_dir(path):
                try:
                    children = sorted(os.listdir(path))
                except OSError:
                    out.append(path)
                    continue
                out.extend(os.path.join(path, c) for c in children
                           if not c.startswith(".") and _looks_like_source(os.path.join(path, c)))
            else:
                out.append(path)
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------------------------
# The worker
# --------------------------------------------------------------------------------------------

_CHECKS: list[Any] | None = None


def _init_worker() -> None:
    global _CHECKS
    if _CHECKS is None:
        from doctor.registry import load_checks
        from doctor.sources.fasttar import keep_large_blocks

        keep_large_blocks()  # each snapshot inflated in one call, its memory reused for the next
        _CHECKS = load_checks()[0]


def _checks_key() -> str:
    """The checks a result depends on: each check's id and plugin, with the plugin module's
    ``__version__`` (installing, removing or upgrading a plugin changes what a node's result holds)."""
    import sys

    _init_worker()
    if _CHECKS_KEY[0] is _CHECKS:
        return _CHECKS_KEY[1]
    parts = []
    for c in _CHECKS or ():
        module = getattr(c.func, "__module__", "") or ""
        version = getattr(sys.modules.get(module.split(".", 1)[0]), "__version__", "") if c.plugin != "builtin" else ""
        parts.append(f"{c.id}\0{c.plugin}\0{version}")
    _CHECKS_KEY[:] = [_CHECKS, "\n".join(parts)]
    return _CHECKS_KEY[1]


#: (the checks list, its key) last made by :func:`_checks_key`
_CHECKS_KEY: list[Any] = [None, ""]


def _start_worker() -> None:
    """A pool worker's start: the checks (inherited when forked), and the youngest generation of the
    garbage collector collected every 5,000 allocations rather than 700 (a node makes tens of
    thousands of short-lived objects; on snapshots whose processes and counters differ from node to
    node this halves the time spent collecting, about 0.5 ms per node)."""
    import gc

    gc.set_threshold(5000, *gc.get_threshold()[1:])
    _init_worker()


def _summary(node: Node) -> dict[str, Any]:
    """What a worker sends for one node, all from its (masked) result: each check's status, the
    findings that say something (check, subject, severity, title) and the facts digest."""
    result = node.result
    statuses = {str(c.get("id")): str(c.get("status")) for c in result.checks if isinstance(c, dict)}
    findings = [(f.check, f.subject, str(f.severity), f.title) for f in result.findings
                if f.severity not in (PASS, INFO)]
    name = node.digest.get("host.hostname") or result.source.get("hostname") or \
        os.path.basename(node.path.rstrip("/"))
    return {"path": node.path, "kind": node.kind, "name": str(name), "error": None, "statuses": statuses,
            "findings": findings, "digest": node.digest}


#: folder of cached results (``--cache``): set before the workers fork, read by each of them
_CACHE_DIR: str | None = None


def _cache_key(path: str) -> str | None:
    """sha256 of a snapshot file plus the tool version, the result schema and the checks loaded (plugins included);
    directories (they change in place) and files larger than a source may stream get none."""
    if not os.path.isfile(path):
        return None
    import hashlib

    from doctor import __version__
    from doctor.errors import DoctorError
    from doctor.runner import SCHEMA_VERSION
    from doctor.safe_open import open_regular
    from doctor.sources.tree import MAX_STREAM_BYTES

    # the result's schema too: an entry written before a field was added (2.2's acts) is not this run's result
    digest = hashlib.sha256(__version__.encode() + b"\0" + SCHEMA_VERSION.encode() + b"\0" + _checks_key().encode()
                            + b"\0")
    try:
        with open_regular(path, "snapshot") as fh:  # never blocks: swapped for a FIFO after the check above
            if os.fstat(fh.fileno()).st_size > MAX_STREAM_BYTES:
                return None  # more than a source may stream: not hashed whole (the analysis refuses it early)
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    except (OSError, DoctorError):
        return None
    return digest.hexdigest()


#: A cache entry larger than this is damaged (a result is a few hundred KiB): ignored, never read.
MAX_CACHE_ENTRY_BYTES = 16 * 1024 * 1024


def _cached_result(cached: str, key: str) -> Result | None:
    """The result stored at ``cached`` for the snapshot whose key is ``key``, or None when there is
    none that can be trusted: missing, not a regular file (a symlink is not followed), a hard link,
    not owned by this user or writable by others (someone else wrote it), larger than
    :data:`MAX_CACHE_ENTRY_BYTES`, not a valid result, or stored for another key. The caller
    analyses the snapshot again and replaces the entry."""
    import stat

    from doctor.result_io import own_result

    try:
        fd = os.open(cached, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != os.geteuid() \
                or st.st_mode & 0o022 or st.st_size > MAX_CACHE_ENTRY_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_CACHE_ENTRY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > MAX_CACHE_ENTRY_BYTES:
        return None
    try:
        # masked and sanitised when stored, by this version with these checks (the key says so): read as
        # it was written, not masked or sanitised again
        return own_result(raw, cached, key)
    except DoctorError:  # every damage, another key: analysed again and replaced
        return None


def _store(cache_path: str, data: dict[str, Any], key: str) -> None:
    """Write ``data`` (with ``key``) to ``cache_path`` atomically: a new file renamed over the entry,
    so a symlink, FIFO or anything else there is replaced, never followed or written through."""
    import json
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(cache_path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # UTF-8, not ASCII escapes: the text as it is (a result that cannot be, a lone surrogate in a
            # fix's argv, is not stored); encoded in one call (json.dump writes piece by piece, 4x slower)
            fh.write(json.dumps({**data, "cache_key": key}, ensure_ascii=False))
        os.replace(tmp, cache_path)
    except (OSError, ValueError, TypeError):
        if tmp is not None:  # a cache that cannot be written only costs time; leave no temporary file
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _load(path: str) -> Node:
    """``path`` analysed as ``gnd check`` analyses it (:func:`doctor.fleet.load.load_node`), or, with
    ``--cache``, the result kept for a snapshot file of the same content (stored when there is none)."""
    from doctor.fleet.load import load_node, node_of
    from doctor.fleet.remote import is_url
    from doctor.result_io import is_json_result

    if is_url(path):  # fetched whole (bounded) and read as the local file it then is
        from dataclasses import replace

        from doctor.fleet.remote import fetched

        with fetched(path) as local:
            try:
                return replace(_load(local), path=path)
            except DoctorError as exc:  # named by its URL, not by the copy that is gone
                raise DoctorError(str(exc).replace(local, path)) from None
    if is_json_result(path):
        return load_node(path)
    _init_worker()
    key = _cache_key(path) if _CACHE_DIR else None
    if _CACHE_DIR is None or key is None:
        return load_node(path, _CHECKS)
    cached = os.path.join(_CACHE_DIR, f"{key}.json")
    result = _cached_result(cached, key)
    if result is not None:
        return node_of(path, result)
    node = load_node(path, _CHECKS)
    _store(cached, node.result.to_dict(), key)
    return node


def analyse(path: str) -> dict[str, Any]:
    """Summary of one source; never raises (an unreadable source comes back with ``error``)."""
    start = time.monotonic()
    try:
        out = _summary(_load(path))
    except DoctorError as exc:
        out = {"path": path, "error": str(exc)}
    except MemoryError:
        out = {"path": path, "error": "out of memory while reading it"}
    except Exception as exc:  # one bad source must not end a fleet run
        out = {"path": path, "error": f"{type(exc).__name__}: {exc}".splitlines()[0][:300]}
    out["duration_s"] = round(time.monotonic() - start, 4)
    return out


#: the digest this process last sent whole, and its number (see :func:`_sent`)
_SENT: list[Any] = [None, None]
_SENT_COUNT = [0]
_NO_VALUE = object()


def _sent(summary: dict[str, Any], state: list[Any] = _SENT) -> dict[str, Any]:
    """``summary`` as a worker sends it: its digest (a few hundred keys, nearly all as on this worker's
    previous node) as the keys that differ from the digest it last sent whole, ``digest_delta`` =
    (that digest's number, changed or added keys with their values, removed keys); or whole, with
    ``digest_base`` = its number, when too much differs. :meth:`Aggregate.add` folds either.
    ``state``: [the digest last sent whole, its number], this process's by default."""
    digest = summary.get("digest")
    if type(digest) is not dict:
        return summary
    base, number = state
    if base is not None and number[0] == os.getpid():  # not a parent's, inherited by a fork
        get = base.get
        changes = {k: v for k, v in digest.items() if get(k, _NO_VALUE) != v}
        added = sum(1 for k in changes if k not in base)
        removed = [k for k in base if k not in digest] if len(base) + added > len(digest) else []
        if len(changes) + len(removed) <= max(16, len(digest) // 8):
            out = {k: v for k, v in summary.items() if k != "digest"}
            out["digest_delta"] = (number, changes, removed)
            return out
    _SENT_COUNT[0] += 1
    state[:] = [digest, (os.getpid(), _SENT_COUNT[0])]
    return {**summary, "digest_base": state[1]}


def _indexed(item: tuple[int, str]) -> tuple[int, dict[str, Any]]:
    return item[0], _sent(analyse(item[1]))


def analyse_batch(items: list[tuple[int, str]], cache_dir: str | None) -> list[tuple[int, dict[str, Any]]]:
    """(index, summary as :func:`_sent` sends it) for each (index, path), in this process, against bases of
    this batch only (so batches may be folded in any order): the task of a worker of another engine
    (``--dask``). ``cache_dir``: as ``--cache``, a folder of this machine, created when missing."""
    global _CACHE_DIR
    _start_worker()
    _CACHE_DIR = cache_dir
    if cache_dir:
        with contextlib.suppress(OSError):  # a cache that cannot be made only costs time
            os.makedirs(cache_dir, exist_ok=True)
    state: list[Any] = [None, None]
    return [(index, _sent(analyse(path), state)) for index, path in items]


def checks_key() -> str:
    """Which checks a result comes from: :func:`_checks_key` (each check, its plugin and the plugin's version)."""
    return _checks_key()


def run_parallel(paths: list[str], jobs: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, summary as :func:`_sent` sends it) for each path as workers finish; ``jobs`` <= 1 runs
    in this process. Each worker's summaries come in the order it made them."""
    items = list(enumerate(paths))
    _SENT[:] = [None, None]  # a new run: this process (and the workers forked from it) sent nothing yet
    if jobs <= 1 or len(paths) <= 1:
        for item in items:
            yield _indexed(item)
        return
    import multiprocessing

    if _CHECKS is None:
        _init_worker()  # loaded once here, inherited by forked workers
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    chunk = max(1, min(16, len(paths) // (jobs * 8) or 1))
    # a worker keeps only bounded caches; a fresh one every 10,000 nodes all the same
    with ctx.Pool(processes=jobs, initializer=_start_worker, maxtasksperchild=10_000) as pool:
        yield from pool.imap_unordered(_indexed, items, chunksize=chunk)


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


@dataclass
class NodeRow:
    path: str
    name: str = ""
    kind: str = ""
    error: str | None = None
    statuses: tuple[str, ...] = ()  # per check in Aggregate.checks order ("" when not run)
    worst: str = PASS
    duration_s: float = 0.0


@dataclass
class Aggregate:
    """Column stores filled one node summary at a time."""

    rows: list[NodeRow]
    checks: dict[str, int] = field(default_factory=dict)
    facts: dict[str, dict[str, array[int]]] = field(default_factory=dict)
    #: per (check, subject, severity): the title of its first node in input order and its nodes (the
    #: first of them that node)
    findings: dict[tuple[str, str, str], tuple[str, array[int]]] = field(default_factory=dict)
    _status_cache: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)
    #: digests sent whole (``digest_base``) that later nodes were sent against, by number: the digest,
    #: its nodes, and per key the nodes whose value is not the digest's; folded into ``facts`` when the
    #: worker sends another (it never refers to this one again) or by :meth:`settle`
    _bases: dict[tuple[int, int], tuple[dict[str, str], array[int], dict[str, list[int]]]] = \
        field(default_factory=dict)
    _live: dict[int, tuple[int, int]] = field(default_factory=dict)  # worker pid -> its latest base

    def add(self, index: int, summary: dict[str, Any]) -> None:
        row = self.rows[index]
        row.duration_s = float(summary.get("duration_s") or 0)
        if summary.get("error"):
            row.error = " ".join(str(summary["error"]).split())[:MAX_ERROR]
            row.name = os.path.basename(row.path.rstrip("/")) or row.path
            return
        row.name, row.kind = summary["name"], summary["kind"]
        statuses: dict[str, str] = summary["statuses"]
        for cid in statuses:
            self.checks.setdefault(cid, len(self.checks))
        vec = [""] * len(self.checks)
        for cid, status in statuses.items():
            vec[self.checks[cid]] = status
        key = tuple(vec)
        row.statuses = self._status_cache.setdefault(key, key)
        worst = PASS
        for check, subject, severity, title in summary["findings"]:
            fkey = (check, stable_subject(subject), severity)  # one server, whatever its pid on each node
            entry = self.findings.get(fkey)
            if entry is None:
                self.findings[fkey] = (title, array("i", (index,)))
            elif index < entry[1][0]:  # the title of the first node in input order, whichever worker ends first
                entry[1].append(entry[1][0])
                entry[1][0] = index
                self.findings[fkey] = (title, entry[1])
            else:
                entry[1].append(index)
            if severity_order(severity) < severity_order(worst):
                worst = severity
        row.worst = worst
        delta = summary.get("digest_delta")
        if delta is not None:  # the worker's base digest but for a few keys
            number, changes, removed = delta
            base, members, other = self._bases[number]
            members.append(index)
            for k in removed:
                other.setdefault(k, []).append(index)
            for k, v in changes.items():
                if k in base:
                    other.setdefault(k, []).append(index)
                self._fold(k, v, array("i", (index,)))
            return
        number = summary.get("digest_base")
        if number is None:
            for k, v in summary["digest"].items():
                self._fold(k, v, array("i", (index,)))
            return
        earlier = self._live.get(number[0])
        if earlier is not None:  # that worker refers to its earlier base no more
            self._settle(earlier)
        self._live[number[0]] = number
        self._bases[number] = (summary["digest"], array("i", (index,)), {})

    def _fold(self, key: str, value: str, nodes: array[int]) -> None:
        values = self.facts.get(key)
        if values is None:
            values = self.facts[key] = {}
        held = values.get(value)
        if held is None:
            values[value] = nodes
        else:
            held.extend(nodes)

    def _settle(self, number: tuple[int, int]) -> None:
        base, members, other = self._bases.pop(number)
        for k, v in base.items():
            differ = other.get(k)
            if differ is None:
                self._fold(k, v, array("i", members))
            else:
                skip = set(differ)
                self._fold(k, v, array("i", (i for i in members if i not in skip)))

    def settle(self) -> None:
        """Fold every base digest still held into ``facts`` (before reading them)."""
        for number in list(self._bases):
            self._settle(number)
        self._live.clear()


@record
class FactOutlier:
    key: str
    majority: str
    majority_nodes: int
    value: str
    nodes: tuple[int, ...]


@record
class FindingGroup:
    check: str
    subject: str
    severity: str
    title: str
    nodes: tuple[int, ...]


#: severities as the outlier reasons write them (``HIGH``; translated when drawn)
SEVERITY_WORDS = {"critical": N_("CRITICAL"), "high": N_("HIGH"), "medium": N_("MEDIUM"), "low": N_("LOW"),
                  "unknown": N_("UNKNOWN"), "info": N_("INFO"), "pass": N_("PASS")}


@dataclass
class FleetReport:
    rows: list[NodeRow]
    checks: list[str]
    ok: list[int]
    common: list[FindingGroup]
    outlier_findings: list[FindingGroup]
    partial: list[FindingGroup]
    fact_outliers: list[FactOutlier]
    groups: list[tuple[str, list[int], list[str]]]  # label, node indices, keys that set it apart
    identity_like: list[str]
    duration_s: float = 0.0
    jobs: int = 1
    fail_on: str = "high"  # the level outlier findings are at or above

    @property
    def outlier_nodes(self) -> list[int]:
        """Nodes holding an outlier finding (:func:`is_outlier_finding`), by name."""
        nodes: set[int] = set()
        for f in self.outlier_findings:
            nodes.update(f.nodes)
        return sorted(nodes, key=lambda i: (self.rows[i].name, self.rows[i].path))

    @property
    def drift_nodes(self) -> list[int]:
        """Nodes holding a fact value few nodes share (configuration drift), by name."""
        nodes = {i for o in self.fact_outliers for i in o.nodes}
        return sorted(nodes, key=lambda i: (self.rows[i].name, self.rows[i].path))

    @property
    def unreadable(self) -> list[NodeRow]:
        return [r for r in self.rows if r.error]

    def reasons(self, index: int) -> list[str]:
        """Why node ``index`` is an outlier, one line each."""
        out = [N_("{key} = {value}  (majority, {n} nodes: {majority})", key=o.key, value=o.value,
                  n=o.majority_nodes, majority=o.majority)
               for o in self.fact_outliers if index in o.nodes]
        out += [join("", (SEVERITY_WORDS.get(f.severity, f.severity.upper()), f" {f.check}  ", f.subject, " — ",
                          f.title))
                for f in self.outlier_findings if index in f.nodes]
        return out

    def group_of(self) -> dict[int, str]:
        return {i: label for label, nodes, _ in self.groups for i in nodes}

    def failing(self, level: str) -> list[int]:
        return [i for i in self.ok if at_least(self.rows[i].worst, level)]

    def to_dict(self) -> dict[str, Any]:
        group_of = self.group_of()

        def names(nodes: Iterable[int]) -> list[str]:
            return [self.rows[i].name for i in nodes]

        def fg(f: FindingGroup) -> dict[str, Any]:
            return {"check": f.check, "subject": f.subject, "severity": f.severity, "title": f.title,
                    "count": len(f.nodes), "nodes": names(f.nodes)}

        return {
            "summary": {"sources": len(self.rows), "analysed": len(self.ok), "unreadable": len(self.unreadable),
                        "groups": len(self.groups), "outlier_nodes": len(self.outlier_nodes),
                        "drift_nodes": len(self.drift_nodes), "fail_on": self.fail_on,
                        "duration_s": round(self.duration_s, 3), "jobs": self.jobs},
            "checks": self.checks,
            "nodes": [{"name": r.name, "path": r.path, "kind": r.kind, "group": group_of.get(i),
                       "worst": r.worst if not r.error else None, "error": r.error,
                       "statuses": {c: s for c, s in zip(self.checks, r.statuses) if s}}
                      for i, r in enumerate(self.rows)],
            "groups": [{"label": label, "count": len(nodes), "nodes": names(nodes), "differs_in": keys}
                       for label, nodes, keys in self.groups],
            "findings": {"common": [fg(f) for f in self.common], "outliers": [fg(f) for f in self.outlier_findings],
                         "partial": [fg(f) for f in self.partial]},
            "fact_outliers": [{"key": o.key, "majority": o.majority, "majority_count": o.majority_nodes,
                               "value": o.value, "nodes": names(o.nodes)} for o in self.fact_outliers],
            "outlier_nodes": [{"name": self.rows[i].name, "path": self.rows[i].path, "reasons": self.reasons(i)}
                              for i in self.outlier_nodes],
            "drift_nodes": [{"name": self.rows[i].name, "path": self.rows[i].path, "reasons": self.reasons(i)}
                            for i in self.drift_nodes],
            "identity_keys_ignored": len(self.identity_like),
            "unreadable": [{"path": r.path, "error": r.error} for r in self.unreadable],
        }


def outlier_max(n: int) -> int:
    """Most nodes a fact value may be held by and still count as configuration drift."""
    return max(1, int(n * OUTLIER_SHARE))


def is_outlier_finding(severity: str, held_by: int, analysed: int, fail_on: str) -> bool:
    """A finding at or above ``fail_on`` that most analysed nodes lack: held by fewer than half of them
    (strictly: the nodes without it are more than :data:`MAJORITY_SHARE` of ``analysed``), in a fleet
    of at least :data:`MIN_NODES_FOR_OUTLIERS` nodes. 1 of 3, 2 of 10 and 49 of 100 nodes are outliers;
    5 of 10 are not (no majority lacks it), nor is any finding below ``fail_on``."""
    return (analysed >= MIN_NODES_FOR_OUTLIERS and held_by > 0 and analysed - held_by > analysed * MAJORITY_SHARE
            and at_least(severity, fail_on))


def _label(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters


def finish(agg: Aggregate, duration_s: float = 0.0, jobs: int = 1, fail_on: str = "high") -> FleetReport:
    """Outliers (findings at or above ``fail_on`` that most nodes lack), drift, fleet-wide findings
    and configuration groups from the aggregate."""
    from doctor.derived.digest import is_identity

    agg.settle()
    ok = [i for i, r in enumerate(agg.rows) if not r.error]
    n = len(ok)
    small = outlier_max(n)
    vote = n >= MIN_NODES_FOR_OUTLIERS
    # findings: on every node / on a few / in between
    common: list[FindingGroup] = []
    outliers: list[FindingGroup] = []
    partial: list[FindingGroup] = []
    for (check, subject, severity), (title, nodes) in agg.findings.items():
        uniq = tuple(sorted(set(nodes)))
        group = FindingGroup(check, subject, severity, title, uniq)
        if len(uniq) >= n:
            common.append(group)
        elif is_outlier_finding(severity, len(uniq), n, fail_on):
            outliers.append(group)
        else:
            partial.append(group)
    for lst in (common, outliers, partial):
        lst.sort(key=lambda f: (severity_order(f.severity), -len(f.nodes), f.check, f.subject))
    # facts: per key, majority vs minority values; deviations from the majority define the groups
    ok_mask = bytearray(len(agg.rows))
    for i in ok:
        ok_mask[i] = 1
    deviations: dict[int, list[str]] = {}
    fact_outliers: list[FactOutlier] = []
    identity_like: list[str] = []
    for key in sorted(agg.facts):
        values = agg.facts[key]
        if is_identity(key):
            continue
        counts = {v: len(nodes) for v, nodes in values.items()}
        present = sum(counts.values())
        if present < n:
            counts[ABSENT] = n - present
        if len(counts) >= max(IDENTITY_MIN_DISTINCT, (n + 1) // 2) and n > 1:
            identity_like.append(key)
            continue
        if len(counts) == 1:
            continue
        majority, majority_count = max(counts.items(), key=lambda kv: (kv[1], kv[0] != ABSENT, kv[0]))
        for value, count in sorted(counts.items()):
            if value == majority:
                continue
            if value == ABSENT:
                seen = bytearray(len(agg.rows))
                for nodes in values.values():
                    for i in nodes:
                        seen[i] = 1
                members = tuple(i for i in ok if not seen[i])
            else:
                members = tuple(sorted(set(values[value])))
            for i in members:
                deviations.setdefault(i, []).append(key)
            if vote and count <= small and majority_count > n * MAJORITY_SHARE:
                fact_outliers.append(FactOutlier(key, majority, majority_count, value, members))
    # groups: nodes with the same deviations (from the majority value of every key) share a config
    by_sig: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i in ok:
        keys = deviations.get(i, [])
        sig = tuple((k, _value_of(agg, k, i)) for k in keys)
        by_sig.setdefault(sig, []).append(i)
    ordered = sorted(by_sig.items(), key=lambda kv: (-len(kv[1]), len(kv[0]), kv[0]))
    groups = [(_label(j), sorted(nodes, key=lambda i: (agg.rows[i].name, agg.rows[i].path)),
               sorted({k for k, _ in sig})) for j, (sig, nodes) in enumerate(ordered)]
    checks = sorted(agg.checks, key=lambda c: agg.checks[c])
    order = sorted(range(len(checks)), key=lambda j: checks[j])
    rows = agg.rows
    for r in rows:
        if r.statuses:
            padded = list(r.statuses) + [""] * (len(checks) - len(r.statuses))
            r.statuses = tuple(padded[j] for j in order)
    return FleetReport(rows, [checks[j] for j in order], ok, common, outliers, partial, fact_outliers, groups,
                       identity_like, duration_s, jobs, fail_on)


def _value_of(agg: Aggregate, key: str, index: int) -> str:
    for value, nodes in agg.facts[key].items():
        if index in nodes:
            return value
    return ABSENT


#: Another way to run the nodes (``--dask``, :mod:`doctor.fleet.dask_engine`): given the paths and the
#: cache folder, (index, summary as :func:`_sent` sends it) for each path, as :func:`run_parallel` yields them.
Engine = Callable[[list[str], "str | None"], Iterable[tuple[int, dict[str, Any]]]]


def analyse_fleet(paths: list[str], jobs: int,
                  progress: Callable[[int, int, dict[str, Any]], None] | None = None,
                  cache_dir: str | None = None, engine: Engine | None = None, fail_on: str = "high") -> FleetReport:
    """Analyse every path with ``jobs`` workers (or ``engine``'s) and fold the results as they arrive.

    With ``cache_dir``, each snapshot tarball's result is kept there under the sha256 of its bytes,
    so a scheduled fleet run analyses only the snapshots it has not seen (with ``engine``, a folder
    the engine's workers create and use).
    """
    global _CACHE_DIR
    if cache_dir is not None and engine is None:
        try:
            os.makedirs(cache_dir, exist_ok=True)
        except OSError as exc:
            from doctor.errors import DoctorError

            raise DoctorError(f"--cache {cache_dir}: cannot create the folder: {exc.strerror}") from None
    _CACHE_DIR = cache_dir if engine is None else None
    start = time.monotonic()
    agg = Aggregate([NodeRow(p) for p in paths])
    results = run_parallel(paths, jobs) if engine is None else engine(paths, cache_dir)
    for done, (index, summary) in enumerate(results, 1):
        agg.add(index, summary)
        if progress is not None:
            progress(done, len(paths), summary)
    return finish(agg, time.monotonic() - start, jobs, fail_on)


def severity_counts(report: FleetReport) -> Counter[str]:
    """Nodes per worst severity."""
    counts: Counter[str] = Counter(report.rows[i].worst for i in report.ok)
    return Counter({s: counts.get(s, 0) for s in SEVERITIES if counts.get(s)})
