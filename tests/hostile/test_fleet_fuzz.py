"""Differential fuzzing of the fleet's fast path: crafted snapshot tarballs read after an honest one.

`gnd fleet` reads each tarball with its own gzip/tar reader (``fasttar``), one node after another
in each worker process. Snapshots come from broken or malicious nodes, so node N+1 may be a crafted
variation of node N. For each mutated node (seeded, see ``tests/hostile/tarfuzz.py``) this compares:

- tree level (cheap, many cases): the tree a fleet worker reads (after the previous nodes), the
  tree the fast reader gives on its own, and the tree the hardened tarfile path gives; the same
  tree member for member, or the same one-line refusal;
- result level (a full check, fewer cases): what a fleet worker gives for the node (``load_node``
  and the summary it sends) and what ``gnd check --format json`` of that file alone gives through
  the hardened reader, timings aside; or both refuse with the same one line.

Never a traceback, a hang (an alarm per case) or a different result. ``GND_FUZZ_ITERATIONS`` (mutated
nodes per tree-level scenario, default 40; the result level runs an eighth as many per snapshot)
and ``GND_FUZZ_SEED`` make a longer or other run: ``GND_FUZZ_ITERATIONS=2000 pytest
tests/hostile/test_fleet_fuzz.py``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import resource
import signal
import tarfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from doctor.cli import main
from doctor.collect import collect
from doctor.errors import DoctorError
from doctor.fleet import fleet
from doctor.fleet.load import load_node, node_of
from doctor.result_io import to_result
from doctor.sources import open_source
from doctor.sources.tree import TarTree
from fixtures.tools.make_node import HEALTHY, render
from tests.fleet.fleetgen import FleetWriter, collector_tar, manifest, renumbered, volatile_files
from tests.helpers import tar_outcome
from tests.hostile import tarfuzz

ITERATIONS = int(os.environ.get("GND_FUZZ_ITERATIONS", "40"))
SEED = int(os.environ.get("GND_FUZZ_SEED", "20261201"))
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: result fields that differ between two runs of the same input
TIMING = {"generated_at", "duration_s", "duration_ms"}


class Hung(Exception):
    pass


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise Hung("a read or check blocked")

    old = signal.signal(signal.SIGALRM, ring)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# --- tree level ------------------------------------------------------------------------------------

_TREE = render(HEALTHY)


def _small(name: str) -> bool:
    return name.startswith(("etc/", "proc/cmdline", "proc/sys/net/core", "proc/interrupts", "proc/meminfo",
                            "proc/4242", "proc/1873", "commands/nvidia")) or "0000:3c:00.0" in name


FILES = {k: v for k, v in _TREE.files.items() if _small(k)}
LINKS = {k: v for k, v in _TREE.links.items() if _small(k)}
LONG = {"sys/devices/pci0000:00/" + "/".join(f"0000:{i:02x}:00.0" for i in range(1, 12)) + "/vendor": b"0x10de\n"}


def _node(host: str, when: int, files: dict[str, bytes] | None = None, links: dict[str, str] | None = None) -> bytes:
    """A small snapshot as `gnd collect` lays it out (PAX, directories, links, files, manifest)."""
    return collector_tar({**FILES, **LONG, "etc/hostname": f"{host}\n".encode(), **(files or {})},
                         {**LINKS, **(links or {})}, manifest(host, when), when)


def _old_style(tar: bytes) -> bytes:
    """Regular files typed ``\\0`` (AREGTYPE), as old tar writers do."""
    buf = bytearray(tar)
    for h in tarfuzz.headers(buf):
        if h.kind == b"0":
            buf[h.offset + 156] = 0
            tarfuzz.resum(buf, h.offset)
    return bytes(buf)


def _gnu(host: str, when: int) -> bytes:
    """GNU format (long names in ``L`` headers), no directory members (every directory implicit)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, target in sorted(LINKS.items()):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, when
            tf.addfile(info)
        for name, data in sorted({**FILES, **LONG, "etc/hostname": f"{host}\n".encode()}.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), when
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _renumbered_node(host: str, when: int, node_id: int) -> bytes:
    files, links = renumbered({**FILES, **LONG, "etc/hostname": f"{host}\n".encode()}, LINKS, node_id)
    return collector_tar(files, links, manifest(host, when), when)


#: name -> (the earlier nodes a worker reads, in turn; the honest next node that is mutated)
SCENARIOS: dict[str, tuple[list[bytes], bytes]] = {
    # another node of the same configuration
    "alike": ([_node("node-a", 1_700_000_001)], _node("node-b", 1_700_000_777)),
    # counters of other lengths
    "volatile": ([_node("node-a", 1_700_000_001), _node("node-c", 1_700_000_002, volatile_files(FILES, 5))],
                 _node("node-b", 1_700_000_777, volatile_files(FILES, 3))),
    # processes under other pids
    "renamed": ([_node("node-a", 1_700_000_001), _renumbered_node("node-c", 1_700_000_002, 9)],
                _renumbered_node("node-b", 1_700_000_777, 7)),
    "old-style": ([_old_style(_node("node-a", 1_700_000_001))], _old_style(_node("node-b", 1_700_000_777))),
    "gnu": ([_gnu("node-a", 1_700_000_001)], _gnu("node-b", 1_700_000_777)),
}


def _slow(monkeypatch: pytest.MonkeyPatch, fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with the fast reader off: the hardened tarfile path."""
    with monkeypatch.context() as m:
        m.setattr(TarTree, "_load_fast", lambda self, fh: False)
        return fn(*args)


def _first_difference(a: Any, b: Any) -> str:
    if isinstance(a, str) or isinstance(b, str):
        return f"{a if isinstance(a, str) else 'a tree'} / {b if isinstance(b, str) else 'a tree'}"
    paths = sorted(k for k in a[0].keys() | b[0].keys() if a[0].get(k) != b[0].get(k))
    kids = sorted(k for k in a[1].keys() | b[1].keys() if a[1].get(k) != b[1].get(k))
    return f"entries {paths[:3]}: {[(a[0].get(k), b[0].get(k)) for k in paths[:1]]}; children {kids[:3]}"


@dataclass
class Tally:
    """What a fuzz run met: mutations per family, outcomes."""

    families: Counter[str]
    outcomes: Counter[str]

    def __str__(self) -> str:
        return f"{dict(self.families)} {dict(self.outcomes)}"


@pytest.mark.parametrize("twin", [False, True], ids=["next-crafted", "both-crafted-alike"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_mutated_next_node_reads_as_a_fresh_hardened_read(scenario: str, twin: bool, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``twin``: the previous node is crafted the same way (the same mutation at the same places)."""
    earlier, honest = SCENARIOS[scenario]
    prev_paths = []
    for i, tar in enumerate(earlier):
        prev_paths.append(tmp_path / f"prev-{i}.tar.gz")
        prev_paths[-1].write_bytes(gzip.compress(tar, compresslevel=1, mtime=0))
    rng = random.Random(f"{SEED}-{scenario}-{twin}")
    tally = Tally(Counter(), Counter())
    path = tmp_path / "next.tar.gz"
    failures = []
    for case in range(ITERATIONS if not twin else max(3, ITERATIONS // 2)):
        if twin:
            state = rng.getstate()
            prev_paths[-1].write_bytes(tarfuzz.mutate(earlier[-1], rng)[2])
            rng.setstate(state)
        family, label, data = tarfuzz.mutate(honest, rng)
        path.write_bytes(data)
        signal.alarm(20)
        plain = _slow(monkeypatch, tar_outcome, path)
        fresh = tar_outcome(path)
        for prev in prev_paths:
            tar_outcome(prev)  # a crafted one may be refused: the worker goes on
        worker = tar_outcome(path)
        signal.alarm(0)
        tally.families[family] += 1
        tally.outcomes["refused" if isinstance(plain, str) else "read"] += 1
        for name, got in (("fresh fast read", fresh), ("fleet worker", worker)):
            if got != plain:
                failures.append(f"case {case} {family}: {label}: {name} differs: {_first_difference(got, plain)}")
        if isinstance(plain, str):
            assert "\n" not in plain and "Traceback" not in plain, plain
    assert not failures, "\n".join(failures[:10])
    # the run exercised what it is for (else the equality above proves little)
    assert tally.outcomes["refused"] and tally.outcomes["read"], tally


# --- regressions the fuzzing found ------------------------------------------------------------------

def _write(path: Path, tar: bytes | bytearray) -> Path:
    path.write_bytes(gzip.compress(bytes(tar), mtime=0))
    return path


def _after(monkeypatch: pytest.MonkeyPatch, earlier: Path, crafted: Path) -> tuple[Any, Any]:
    """(what a worker that read ``earlier`` gets for ``crafted``, what the hardened reader gets)."""
    plain = _slow(monkeypatch, tar_outcome, crafted)
    TarTree(str(earlier))
    return tar_outcome(crafted), plain


def test_an_old_style_file_renamed_to_a_directory_name_with_data_is_refused_as_tarfile_refuses_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``\\0``-typed member whose name ends in ``/`` is a directory to tarfile, which does not skip
    its data: the hardened read refuses the archive, and so does a worker after an honest node."""
    buf = bytearray(_old_style(_node("node-b", 1_700_000_777)))
    head = next(h for h in tarfuzz.headers(buf) if h.name == b"proc/cmdline")
    buf[head.offset:head.offset + 100] = b"proc/cmdline/".ljust(100, b"\0")
    tarfuzz.resum(buf, head.offset)
    worker, plain = _after(monkeypatch, _write(tmp_path / "a.tar.gz", _old_style(_node("node-a", 1_700_000_001))),
                           _write(tmp_path / "b.tar.gz", buf))
    assert isinstance(plain, str) and plain.startswith("refused: ") and "truncated or corrupt" in plain
    assert worker == plain


# --- result level: a full check, as a fleet worker runs it and as `gnd check` runs it ---------------

#: mutations that mostly leave a readable archive with a different tree
RESULT_FAMILIES = ["data", "data", "data", "field", "rename", "rename", "resize", "resize", "kind", "bytes", "reorder", "padding", "pax", "longname",
                   "truncate", "gzip-members", "trailing", "zero-early"]


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[Path], bytes]]:
    """name -> (earlier snapshots a worker reads in turn, the tar bytes of an honest next node)."""
    d = tmp_path_factory.mktemp("fuzzsnap")
    writer = FleetWriter(HEALTHY)
    first = writer.write(d / "gpu-node-a.tar.gz", "gpu-node-a", 1)
    # volatile nodes (counters and readings of other lengths, processes under other pids), as a real fleet's
    other = writer.write(d / "gpu-node-c.tar.gz", "gpu-node-c", 3, files=volatile_files(writer.files, 3),
                         renumber=True)
    honest = writer.write(d / "gpu-node-b.tar.gz", "gpu-node-b", 2, files=volatile_files(writer.files, 2),
                          renumber=True)
    out = {"generated fleet": ([first, other], gzip.decompress(honest.read_bytes()))}
    host = [d / f"this-host-{i}.tar.gz" for i in range(2)]
    for path in host:  # real snapshots of this host, collected in turn
        collect(open_source(None), str(path))
    out["this host"] = ([host[0]], gzip.decompress(host[1].read_bytes()))
    sick = [d / f"sick-{i}.tar.gz" for i in range(2)]
    for path in sick:  # a fixture tree, collected as `gnd collect` writes it
        collect(open_source(str(FIXTURES / "hgx-h100-sick")), str(path))
    out["fixture"] = ([sick[0]], gzip.decompress(sick[1].read_bytes()))
    return out


def _plain_check(path: Path, dest: Path, monkeypatch: pytest.MonkeyPatch,
                 capsys: pytest.CaptureFixture[str]) -> dict[str, Any] | str:
    """`gnd check --format json` of ``path`` alone (hardened reader, fresh worker state): the result,
    or the refusal's one line."""
    capsys.readouterr()
    code = _slow(monkeypatch, main, ["check", str(path), "--format", "json", "-o", str(dest)])
    err = capsys.readouterr().err
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gnd: error: "), err[-2000:]
        return lines[0].removeprefix("gnd: error: ")
    assert code in (0, 1) and "Traceback" not in err, err[-2000:]
    result: dict[str, Any] = json.loads(dest.read_text())
    return result


def _worker(path: Path) -> tuple[dict[str, Any] | str, dict[str, Any]]:
    """A fleet worker's result for ``path`` (or its one-line refusal), and the summary it sends."""
    try:
        got: dict[str, Any] | str = load_node(str(path), fleet._CHECKS).result.to_dict()
    except DoctorError as exc:
        got = str(exc)
    summary = fleet.analyse(str(path))
    summary.pop("duration_s")
    return got, summary


@pytest.mark.parametrize("base", ["generated fleet", "this host", "fixture"])
def test_mutated_next_node_gets_the_result_of_a_plain_check(base: str, snapshots: dict[str, tuple[list[Path], bytes]],
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    earlier, honest = snapshots[base]
    rng = random.Random(f"{SEED}-result-{base}")
    fleet._init_worker()
    path = tmp_path / "next.tar.gz"
    outcomes: Counter[str] = Counter()
    failures = []
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    last = gzip.decompress(earlier[-1].read_bytes())
    crafted_prev = tmp_path / "prev.tar.gz"
    for case in range(max(3, ITERATIONS // 8)):
        prevs = earlier
        if case % 3 == 2:  # the previous node crafted the same way
            state = rng.getstate()
            crafted_prev.write_bytes(tarfuzz.mutate(last, rng, RESULT_FAMILIES)[2])
            rng.setstate(state)
            prevs = [*earlier[:-1], crafted_prev]
        family, label, data = tarfuzz.mutate(honest, rng, RESULT_FAMILIES)
        path.write_bytes(data)
        signal.alarm(60)
        plain = _plain_check(path, tmp_path / "plain.json", monkeypatch, capsys)
        for prev in prevs:  # the worker's previous nodes
            with contextlib.suppress(DoctorError):  # a crafted one refused: the worker goes on
                load_node(str(prev), fleet._CHECKS)
        got, summary = _worker(path)
        signal.alarm(0)
        outcomes["refused" if isinstance(plain, str) else "checked"] += 1
        where = f"case {case} {family}: {label}{' (after one crafted alike)' if prevs is not earlier else ''}"
        if isinstance(plain, str):
            if got != plain or summary != {"path": str(path), "error": plain}:
                failures.append(f"{where}: plain refuses ({plain}), the worker gives {str(got)[:200]} / {summary}")
            continue
        if isinstance(got, str) or _stable(got) != _stable(plain):
            diff = got if isinstance(got, str) else [k for k in plain if _stable(got.get(k)) != _stable(plain[k])]
            failures.append(f"{where}: the worker's result differs from a plain check: {diff}")
        if summary != fleet._summary(node_of(str(path), to_result(plain))):
            failures.append(f"{where}: the worker's summary differs from a plain check's")
    assert not failures, "\n".join(failures[:10])
    assert outcomes["checked"], outcomes
    # no huge allocation on the way (a declared size is never believed before the bytes are there)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 512 * 1024, "peak memory grew by 512 MiB"


# --- saved JSON results: `gnd fleet`, `gnd diff`, `gnd report` and `gnd fix-script` read crafted ones ---

@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`gnd check --format json` of the sick fixture node (findings with fixes, a full inventory)."""
    path = tmp_path_factory.mktemp("saved") / "sick.json"
    assert main(["check", str(FIXTURES / "hgx-h100-sick"), "--format", "json", "-o", str(path)]) in (0, 1)
    return path


def _json_commands(good: Path, crafted: Path, out: Path) -> dict[str, list[str]]:
    return {
        "fleet": ["fleet", str(good), str(good), str(crafted), "--jobs", "1", "--format", "json", "-o", str(out / "f.json")],
        "diff": ["diff", str(good), str(crafted), "--cross-host", "-o", str(out / "d.txt")],
        "diff html": ["diff", str(crafted), str(good), "--cross-host", "--format", "html", "-o", str(out / "d.html")],
        "report html": ["report", "--from-json", str(crafted), "-o", str(out / "r.html")],
        "report md": ["report", "--from-json", str(crafted), "-o", str(out / "r.md")],
        "fix-script": ["fix-script", "--from-json", str(crafted), "-o", str(out / "fix.sh")],
    }


def _json_outcomes(gnd: Any, good: Path, crafted: Path, out: Path) -> dict[str, Any]:
    """Each command's outcome on ``crafted``: it ran (0 or 1) or refused with one ``gnd: error:`` line;
    `gnd fleet` ran and names ``crafted`` among its unreadable sources with one line, or read it."""
    outcomes = {}
    for name, argv in _json_commands(good, crafted, out).items():
        outcome = gnd(*argv, timeout=60)
        assert "Traceback" not in outcome.err, (name, outcome.err[-2000:])
        if outcome.code == 2:
            outcome.refused()
        else:
            outcome.ran()
        outcomes[name] = outcome
        if name == "fleet":
            rows = {r["path"]: r["error"] for r in json.loads((out / "f.json").read_text())["nodes"]}
            assert rows[str(good)] is None
            error = rows[str(crafted)]
            assert error is None or ("\n" not in error and "Error:" not in error), error
    return outcomes


def test_crafted_saved_results_give_reports_or_one_line_errors(gnd: Any, saved: Path, tmp_path: Path) -> None:
    from tests.hostile import jsonfuzz

    good = json.loads(saved.read_text())
    rng = random.Random(f"{SEED}-json")
    crafted = tmp_path / "crafted.json"
    codes: Counter[int] = Counter()
    for _ in range(max(3, ITERATIONS // 8)):
        _, raw = jsonfuzz.mutate(good, rng)
        crafted.write_bytes(raw)
        codes.update(o.code for o in _json_outcomes(gnd, saved, crafted, tmp_path).values())
    assert codes[0] + codes[1], codes


def test_an_inventory_of_other_shapes_is_reported_not_a_traceback(gnd: Any, saved: Path, tmp_path: Path) -> None:
    """A NIC's interfaces as a number, a device's parent as a list, a GPU's name as a list: the report's
    topology, its GPU list and the fix script's host context iterated or hashed them."""
    data = json.loads(saved.read_text())
    inventory = data["inventory"]
    inventory["nics"][0]["netdevs"] = 1e308
    inventory["nics"][1]["rdma"] = float("nan")
    inventory["topology"][-1]["parent"] = ["0000:00:01.0"]
    inventory["gpus"][0]["name"] = []
    inventory["host"] = ["gpu-node-13"]
    crafted = tmp_path / "shapes.json"
    crafted.write_text(json.dumps(data))
    outcomes = _json_outcomes(gnd, saved, crafted, tmp_path)
    for name in ("report html", "report md", "fix-script", "diff", "fleet"):
        assert outcomes[name].code in (0, 1), name
    html = (tmp_path / "r.html").read_text()
    assert "<svg" in html  # the topology is drawn from the rest


def test_half_a_surrogate_pair_is_refused_with_one_line(gnd: Any, saved: Path, tmp_path: Path) -> None:
    """``"\\ud800"`` is valid JSON but no text: every writer of the result failed on it (a traceback
    while encoding the report); it is refused where the result is read, like text that is not UTF-8."""
    data = json.loads(saved.read_text())
    data["findings"][0]["title"] = "\ud800"
    crafted = tmp_path / "surrogate.json"
    crafted.write_text(json.dumps(data))  # ASCII: the escape itself
    outcomes = _json_outcomes(gnd, saved, crafted, tmp_path)
    for name in ("report html", "report md", "fix-script", "diff"):
        outcomes[name].refused("surrogate.json", "not valid JSON")
    rows = {r["path"]: r["error"] for r in json.loads((tmp_path / "f.json").read_text())["nodes"]}
    assert "not valid JSON" in rows[str(crafted)]
    data["findings"][0]["title"] = "\U0001f600 a whole pair"  # escaped as \ud83d\ude00: read as it is
    crafted.write_text(json.dumps(data))
    assert gnd("report", "--from-json", str(crafted), "-o", str(tmp_path / "ok.html")).code in (0, 1)
    assert "\U0001f600 a whole pair" in (tmp_path / "ok.html").read_text()


def test_a_rank_of_infinity_is_a_malformed_result_not_a_traceback(gnd: Any, saved: Path, tmp_path: Path) -> None:
    """``Infinity`` is a number to Python's JSON reader; a finding's rank is an integer (OverflowError)."""
    data = json.loads(saved.read_text())
    data["findings"][0]["rank"] = float("inf")
    crafted = tmp_path / "rank.json"
    crafted.write_text(json.dumps(data))  # written as Infinity
    outcomes = _json_outcomes(gnd, saved, crafted, tmp_path)
    for name in ("report html", "report md", "fix-script", "diff"):
        outcomes[name].refused("malformed", "infinity")


def test_gnd_fleet_over_crafted_nodes_gives_each_its_plain_result_or_refusal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The whole command, two worker processes: honest nodes of one configuration and crafted variations of
    them in one folder; each row is the node's `gnd check` (statuses) or its one-line refusal."""
    folder = tmp_path / "fleet"
    folder.mkdir()
    rng = random.Random(f"{SEED}-cli")
    for i in range(4):
        (folder / f"node-{i}.tar.gz").write_bytes(gzip.compress(_old_style(_node(f"node-{i}", 1_700_000_000 + i))))
    honest = _old_style(_node("node-x", 1_700_000_100))
    buf = bytearray(honest)  # the old-style regression above, among its own kind
    head = next(h for h in tarfuzz.headers(buf) if h.name == b"proc/cmdline")
    buf[head.offset:head.offset + 100] = b"proc/cmdline/".ljust(100, b"\0")
    tarfuzz.resum(buf, head.offset)
    (folder / "node-x0.tar.gz").write_bytes(gzip.compress(bytes(buf)))
    for i in range(1, 6):
        (folder / f"node-x{i}.tar.gz").write_bytes(tarfuzz.mutate(honest, rng, RESULT_FAMILIES)[2])
    out = tmp_path / "fleet.json"
    signal.alarm(120)
    code = main(["fleet", str(folder), "--jobs", "2", "--format", "json", "-o", str(out)])
    signal.alarm(0)
    assert code == 1  # unreadable sources, at least
    rows = {Path(r["path"]).name: r for r in json.loads(out.read_text())["nodes"]}
    assert len(rows) == 10
    for name, row in sorted(rows.items()):
        plain = _plain_check(folder / name, tmp_path / "plain.json", monkeypatch, capsys)
        if isinstance(plain, str):
            assert row["error"] == plain, name
        else:
            assert row["error"] is None, (name, row["error"])
            assert row["statuses"] == {c["id"]: c["status"] for c in plain["checks"] if c["id"] in row["statuses"]}
            assert set(row["statuses"]) >= {c["id"] for c in plain["checks"] if c["status"] != "not_applicable"}
    assert rows["node-x0.tar.gz"]["error"] and "truncated or corrupt" in rows["node-x0.tar.gz"]["error"]
