"""Hostile input, second pass: the fleet result cache, sosreports, baselines.

`gnd fleet --cache DIR` keeps each snapshot's result in DIR; an entry may be damaged (cut, empty,
another shape, huge), something other than a file (a directory, a FIFO, a symlink out of DIR, a
hard link), written by someone else (writable by others), or another snapshot's result under this
snapshot's name. Each such entry is ignored: the node gets the honest result of its snapshot, the
entry is replaced atomically by a fresh one (never written through a link), and no temporary file
is left behind. Entries this user wrote itself are trusted (that is the cache's point).
"""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from doctor.cli import main
from doctor.fleet import fleet
from tests.helpers import HEALTHY, SICK
from tests.hostile import jsonfuzz

SEED = int(os.environ.get("GND_FUZZ_SEED", "20261201"))


class Hung(Exception):
    pass


#: a hang guard, not a speed bound: a read that blocks (a FIFO in a snapshot, a cache entry that is a
#: device) never returns, and this ends the test instead of the whole run; every test here takes seconds
HANG_GUARD_S = 300


@pytest.fixture(autouse=True)
def _alarm() -> Iterator[None]:
    def ring(signum: int, frame: object) -> None:
        raise Hung("a read blocked")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(HANG_GUARD_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture(autouse=True)
def _no_cache_after() -> Iterator[None]:
    """analyse_fleet leaves its --cache folder set for later direct analyse() calls: cleared."""
    yield
    fleet._CACHE_DIR = None


@pytest.fixture(scope="module")
def snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two snapshots (sick, healthy), their honest fleet rows and their cache entries' bytes."""
    root = tmp_path_factory.mktemp("snaps")
    for name, src in (("sick", SICK), ("healthy", HEALTHY)):
        assert main(["collect", "--root", str(src), "-o", str(root / f"{name}.tar.gz")]) == 0
    cache = root / "cache"
    out: dict[str, Any] = {"root": root}
    for name in ("sick", "healthy"):
        path = str(root / f"{name}.tar.gz")
        report = fleet.analyse_fleet([path], 1, cache_dir=str(cache))
        key = fleet._cache_key(path)
        assert key
        entry = cache / f"{key}.json"
        out[name] = {"path": path, "key": key, "row": _row(report), "entry": entry.read_bytes()}
    assert out["sick"]["row"] != out["healthy"]["row"]  # so a wrong entry shows
    return out


def _row(report: fleet.FleetReport) -> tuple[Any, ...]:
    r = report.rows[0]
    return r.error, r.worst, r.statuses, [(f.check, f.subject, f.severity) for f in report.common]


def _entry(cache: Path, key: str) -> Path:
    cache.mkdir(exist_ok=True)
    return cache / f"{key}.json"


def _run(snap: dict[str, Any], cache: Path) -> tuple[Any, ...]:
    return _row(fleet.analyse_fleet([snap["path"]], 1, cache_dir=str(cache)))


def _rewritten(cache: Path, snap: dict[str, Any]) -> None:
    """The entry is now a fresh regular file holding this snapshot's result; nothing else is left."""
    entry = cache / f"{snap['key']}.json"
    assert not entry.is_symlink() and entry.is_file()
    assert json.loads(entry.read_bytes())["cache_key"] == snap["key"]
    assert os.stat(entry).st_mode & 0o077 == 0
    assert sorted(p.name for p in cache.iterdir()) == [entry.name]


DAMAGED: dict[str, Callable[[Path, dict[str, Any]], None]] = {
    "cut": lambda e, s: e.write_bytes(s["sick"]["entry"][:len(s["sick"]["entry"]) // 2]),
    "empty": lambda e, s: e.write_bytes(b""),
    "not an object": lambda e, s: e.write_bytes(b"[]"),
    "not a result": lambda e, s: e.write_bytes(b'{"findings": []}'),
    "findings not a list": lambda e, s: e.write_bytes(
        s["sick"]["entry"].replace(b'"findings": [', b'"findings": 5, "x": [', 1)),
    "nested": lambda e, s: e.write_bytes(b"[" * 100_000 + b"]" * 100_000),
    "binary": lambda e, s: e.write_bytes(bytes(range(256)) * 64),
    "huge": lambda e, s: e.write_bytes(s["sick"]["entry"][:-1] + b' ,"pad": "' + b"x" * (17 << 20) + b'"}'),
    "another snapshot's entry": lambda e, s: e.write_bytes(s["healthy"]["entry"]),
    "no key (an older gnd's entry)": lambda e, s: e.write_bytes(
        json.dumps({k: v for k, v in json.loads(s["sick"]["entry"]).items() if k != "cache_key"}).encode()),
    "writable by others": lambda e, s: (e.write_bytes(s["healthy"]["entry"].replace(
        s["healthy"]["key"].encode(), s["sick"]["key"].encode())), e.chmod(0o666)),
    "a FIFO": lambda e, s: os.mkfifo(e),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_entry_is_ignored_and_replaced(snaps: dict[str, Any], tmp_path: Path, damage: str) -> None:
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    DAMAGED[damage](_entry(cache, sick["key"]), snaps)
    assert _run(sick, cache) == sick["row"]
    _rewritten(cache, sick)
    assert _run(sick, cache) == sick["row"]  # and read back from the cache


def test_an_entry_in_the_cache_is_used(snaps: dict[str, Any], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The trap for the tests above: a sound entry of this user is read, not analysed again."""
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    _entry(cache, sick["key"]).write_bytes(sick["entry"])
    os.chmod(cache / f"{sick['key']}.json", 0o600)

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("analysed again despite a sound entry")

    monkeypatch.setattr("doctor.fleet.load.load_node", boom)
    assert _run(sick, cache) == sick["row"]


def test_a_symlink_entry_is_not_followed_for_reading_or_writing(snaps: dict[str, Any], tmp_path: Path) -> None:
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    # the healthy node's result, with the sick node's key, elsewhere: followed, it would pass the node
    outside = tmp_path / "elsewhere.json"
    forged = snaps["healthy"]["entry"].replace(snaps["healthy"]["key"].encode(), sick["key"].encode())
    outside.write_bytes(forged)
    outside.chmod(0o600)
    _entry(cache, sick["key"]).symlink_to(outside)
    assert _run(sick, cache) == sick["row"]
    assert outside.read_bytes() == forged  # not written through
    _rewritten(cache, sick)


def test_a_dangling_symlink_entry_creates_nothing_outside(snaps: dict[str, Any], tmp_path: Path) -> None:
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    target = tmp_path / "created-by-gnd"
    _entry(cache, sick["key"]).symlink_to(target)
    assert _run(sick, cache) == sick["row"]
    assert not target.exists()
    _rewritten(cache, sick)


def test_a_hard_linked_entry_is_not_trusted(snaps: dict[str, Any], tmp_path: Path) -> None:
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    other = tmp_path / "other.json"
    other.write_bytes(snaps["healthy"]["entry"].replace(snaps["healthy"]["key"].encode(), sick["key"].encode()))
    other.chmod(0o600)
    os.link(other, _entry(cache, sick["key"]))
    assert _run(sick, cache) == sick["row"]
    assert json.loads(other.read_bytes())["cache_key"] == sick["key"]  # the other name kept its bytes
    assert other.read_bytes() != (cache / f"{sick['key']}.json").read_bytes()
    _rewritten(cache, sick)


def test_an_entry_that_cannot_be_replaced_leaves_no_temporary_file(snaps: dict[str, Any], tmp_path: Path) -> None:
    """A directory where the entry goes: the node is analysed, the cache write fails quietly."""
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    entry = _entry(cache, sick["key"])
    entry.mkdir()
    (entry / "x").write_text("x")
    assert _run(sick, cache) == sick["row"]
    assert sorted(p.name for p in cache.iterdir()) == [entry.name]
    assert entry.is_dir()


def test_seeded_mutations_of_an_entry_never_break_the_run(snaps: dict[str, Any], tmp_path: Path) -> None:
    """An entry this user wrote, changed in place: read when it is still a result for this key, else
    analysed again; never an error row or a traceback."""
    sick = snaps["sick"]
    cache = tmp_path / "cache"
    original = json.loads(sick["entry"])
    rng = random.Random(SEED)
    reanalysed = 0
    for _ in range(40):
        label, raw = jsonfuzz.mutate(original, rng)
        entry = _entry(cache, sick["key"])
        entry.write_bytes(raw)
        entry.chmod(0o600)
        row = _run(sick, cache)
        assert row[0] is None, (label, row[0])
        if entry.read_bytes() != raw:  # ignored and replaced: the honest result
            reanalysed += 1
            assert row == sick["row"], label
    assert reanalysed  # some mutations do damage the entry


# --------------------------------------------------------------------------------------------
# sosreports (directories and tarballs) and JSON files inside sources
# --------------------------------------------------------------------------------------------

LSPCI = "sos_commands/pci/lspci_-nnvv"
TIMING = {"generated_at", "duration_s", "duration_ms", "collected_at"}


def _check(gnd: Any, path: Path) -> tuple[int, dict[str, Any]]:
    outcome = gnd("check", str(path), "--format", "json")
    outcome.ran()
    data = json.loads(outcome.out)
    assert data["source"]["kind"] == "sosreport"
    return outcome.code, data


def _verdicts(data: dict[str, Any]) -> tuple[Any, ...]:
    return (sorted((c["id"], c["status"]) for c in data["checks"]),
            sorted((f["check"], f["subject"], f["severity"], f["title"]) for f in data["findings"]))


def _sos(root: Path) -> Path:
    from tests.test_sosreport import make_sosreport

    return make_sosreport(root / "sosreport-node-1")


#: ways to spoil the sosreport's lspci output that must read as "lspci missing", nothing else
SPOILED: dict[str, Callable[[Path], None]] = {
    "a FIFO": lambda p: os.mkfifo(p),
    "a symlink to /dev/zero": lambda p: p.symlink_to("/dev/zero"),
    "a symlink out of the tree": lambda p: p.symlink_to("/etc/passwd"),
    "a relative symlink out of the tree": lambda p: p.symlink_to("../../../../../../../../etc/passwd"),
    "a symlink to itself": lambda p: p.symlink_to(p.name),
    "a directory": lambda p: p.mkdir(),
    "over the 16 MiB file cap": lambda p: p.write_bytes(b"00:00.0 x\n" * (17 << 17)),
}


@pytest.fixture(scope="module")
def lspci_gone(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, ...]:
    """What gnd check gives for the sosreport without its lspci output (the honest reading)."""
    from doctor.pipeline import analyse

    root = _sos(tmp_path_factory.mktemp("gone"))
    (root / LSPCI).unlink()
    data = json.loads(json.dumps(analyse(str(root)).to_dict()))
    return _verdicts(data)


@pytest.mark.parametrize("how", list(SPOILED))
def test_a_spoiled_sos_commands_file_reads_as_missing(gnd: Any, tmp_path: Path, lspci_gone: tuple[Any, ...],
                                                      how: str) -> None:
    root = _sos(tmp_path)
    (root / LSPCI).unlink()
    SPOILED[how](root / LSPCI)
    _, data = _check(gnd, root)
    assert _verdicts(data) == lspci_gone
    assert any(f["check"] == "pcie.link_downgrade" and f["severity"] == "unknown" for f in data["findings"])


@pytest.mark.parametrize("name", ["sos_reports/manifest.json", "gnd-manifest.json"])
def test_a_deeply_nested_manifest_is_ignored(gnd: Any, tmp_path: Path, name: str) -> None:
    """sos's manifest and gnd's: a crafted node nests its JSON 100,000 deep (was a RecursionError)."""
    root = _sos(tmp_path)
    (root / name).write_text("[" * 100_000 + "]" * 100_000)
    code, data = _check(gnd, root)
    honest = _sos(tmp_path / "honest")
    if name == "gnd-manifest.json":
        (honest / name).write_text("not json")
    else:
        (honest / name).unlink()
    assert _verdicts(data) == _verdicts(_check(gnd, honest)[1])


def test_control_characters_from_a_sosreport_never_reach_the_terminal(gnd: Any, tmp_path: Path) -> None:
    root = _sos(tmp_path)
    (root / "hostname").write_bytes(b"evil\x1b]0;owned\x07\x1b[2J\x9b31m\n")
    (root / "sos_reports/manifest.json").write_text(json.dumps({"start_time": "2026\x1b[31m\u202e"}))
    outcome = gnd("check", str(root))
    outcome.ran()
    shown = outcome.out + outcome.err
    assert not [c for c in shown if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0 or c == "\u202e"]


@pytest.mark.parametrize("mode", ["xz", "gz"])
def test_a_truncated_sosreport_tarball_is_refused_in_one_line(gnd: Any, tmp_path: Path, mode: str) -> None:
    import tarfile

    root = _sos(tmp_path)
    (root / "sos_commands/big").write_bytes(os.urandom(256 << 10))  # compressed bytes after the files gnd reads
    whole = tmp_path / f"sosreport-node-1.tar.{mode}"
    with tarfile.open(whole, f"w:{mode}") as tf:
        tf.add(root, arcname=root.name)
    raw = whole.read_bytes()
    for cut in (len(raw) // 3, len(raw) - 40):
        whole.write_bytes(raw[:cut])
        outcome = gnd("check", str(whole), "--format", "json")
        outcome.refused(str(whole))


def test_colliding_member_names_in_a_sosreport_tarball(gnd: Any, tmp_path: Path) -> None:
    """The same path twice (the later one wins, as tar extracts it) and two top-level folders."""
    from tests.hostile.conftest import tar_bytes
    from tests.test_sosreport import LSPCI as LSPCI_TEXT

    good = LSPCI_TEXT.encode()
    members: list[tuple[str, bytes | None, str | None]] = [
        (f"sosreport-a/{LSPCI}", b"garbage\n", None), (f"sosreport-a/{LSPCI}", good, None),
        ("sosreport-a/hostname", b"sos-node\n", None)]
    archive = tmp_path / "sosreport-a.tar.gz"
    archive.write_bytes(tar_bytes(members, "w:gz"))
    _, data = _check(gnd, archive)
    assert any(f["check"] == "pcie.link_downgrade" and f["severity"] == "high" for f in data["findings"])
    # a second top-level folder: which one is the sosreport is ambiguous, so neither is taken
    archive.write_bytes(tar_bytes([*members, ("sosreport-b/sos_commands/x", b"x", None)], "w:gz"))
    gnd("check", str(archive), "--format", "json").refused("not a snapshot or sosreport")


# --------------------------------------------------------------------------------------------
# baselines (gnd check --baseline F)
# --------------------------------------------------------------------------------------------


def _baseline(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "base.toml"
    path.write_text(text)
    return path


def test_many_baseline_entries_are_located_in_one_pass(gnd: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each deviation names its baseline line; finding them must not rescan the file per entry (3,000
    sysctls the node lacks took 3,000 scans of 3,000 lines: 8,000 took 40 s)."""
    from doctor.parsers import toml_io

    n = 3000
    path = _baseline(tmp_path, "version = 1\n\n[sysctl]\n" + "".join(f"\"k.k{i}\" = 1\n" for i in range(n)))
    calls = [0]
    split = toml_io._split_dotted

    def counted(text: str) -> list[str]:
        calls[0] += 1
        return split(text)

    monkeypatch.setattr(toml_io, "_split_dotted", counted)
    outcome = gnd("check", str(HEALTHY), "--baseline", str(path), "--only", "baseline.deviation",
                  "--format", "json")
    outcome.ran()
    found = {f["subject"]: f for f in json.loads(outcome.out)["findings"]}
    assert len(found) == n
    assert [e["value"] for e in found["sysctl k.k2999"]["evidence"] if e["source"] == "baseline"] == \
        [f"{path}:{n + 3}"]
    assert calls[0] <= 2 * (n + 3)


@pytest.mark.parametrize("text", ["a = " + "[" * 100_000 + "]" * 100_000,
                                  "a = " + "{b = " * 50_000 + "1" + "}" * 50_000])
def test_a_baseline_nested_too_deeply_is_refused_in_one_line(gnd: Any, tmp_path: Path, text: str) -> None:
    path = _baseline(tmp_path, text)
    gnd("check", str(HEALTHY), "--baseline", str(path)).refused(str(path), "nested too deeply")


def test_a_redaction_map_nested_too_deeply_is_refused_in_one_line(gnd: Any, tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    gnd("collect", "--root", str(HEALTHY), "--redact", "--redact-map", str(path),
        "-o", str(tmp_path / "x.tar.gz")).refused(str(path), "nested too deeply")
    assert not (tmp_path / "x.tar.gz").exists()


def test_a_baseline_with_too_many_entries_is_refused_in_one_line(gnd: Any, tmp_path: Path) -> None:
    from doctor.facts.baseline import MAX_ENTRIES

    lines = [f'"k.k{i}" = 1' for i in range(MAX_ENTRIES - 1)]
    path = _baseline(tmp_path, "[sysctl]\n" + "\n".join(lines) + '\n[kernel.cmdline]\nquiet = ""\n')
    gnd("check", str(HEALTHY), "--baseline", str(path), "--only", "baseline.deviation").ran()  # at the limit
    path = _baseline(tmp_path, "[sysctl]\n" + "\n".join(lines) + '\n[gpus]\nmodels = ["a", "b"]\n')
    gnd("check", str(HEALTHY), "--baseline", str(path)).refused(str(path), "10,001 entries")


#: values a crafted node gives that `gnd baseline` writes into TOML
CRAFTED_NODE = {
    "cmdline": ("proc/cmdline", 'ro a"b=1 \'c\'=\'d e\' x=\\u001b k=v=w =z k2= \x1b[31m=1 \u202e=2 [sysctl]=3 #c=4 é=ü\n'),
    "sysctl": ("proc/sys/net/core/rmem_max", '1"\n2 \\ \x1b]0;x\x07 \u2028 """\n'),
    "hostname": ("proc/sys/kernel/hostname", 'h\n[sysctl]\n"net.core.wmem_max" = "0"\n'),
}


@pytest.mark.parametrize("what", list(CRAFTED_NODE))
def test_a_crafted_node_s_baseline_round_trips(gnd: Any, tmp_path: Path, what: str) -> None:
    """`gnd baseline` of a node whose values carry quotes, newlines, TOML syntax and control
    characters: valid TOML with nothing raw for a terminal, and that node checked against it matches."""
    import shutil

    from doctor.parsers import toml_io

    node = tmp_path / "node"
    shutil.copytree(HEALTHY, node, symlinks=True)
    rel, text = CRAFTED_NODE[what]
    (node / rel).write_text(text)
    outcome = gnd("baseline", str(node))
    assert outcome.code == 0, outcome.err
    assert not [c for c in outcome.out if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) < 0xa0
                or c in "\u2028\u202e"]
    data = toml_io.loads(outcome.out, "baseline")
    assert data["sysctl"]["net.core.wmem_max"] == (HEALTHY / "proc/sys/net/core/wmem_max").read_text().strip()
    path = _baseline(tmp_path, outcome.out)
    checked = gnd("check", str(node), "--baseline", str(path), "--only", "baseline.deviation", "--format", "json")
    checked.ran()
    assert [f["severity"] for f in json.loads(checked.out)["findings"]] == ["pass"]


def test_a_huge_file_is_not_hashed_for_the_cache(tmp_path: Path) -> None:
    """A 3 GiB file (sparse here) named like a snapshot: refused as the analysis refuses it, without
    first reading all of it for a cache key, and nothing stored."""
    from doctor.sources.tree import MAX_STREAM_BYTES

    huge = tmp_path / "node.tar.gz"
    with open(huge, "wb") as fh:
        fh.truncate(MAX_STREAM_BYTES + (1 << 30))
    assert fleet._cache_key(str(huge)) is None
    cache = tmp_path / "cache"
    report = fleet.analyse_fleet([str(huge)], 1, cache_dir=str(cache))
    assert report.rows[0].error and list(cache.iterdir()) == []


@pytest.mark.parametrize("name", ["node.tar.gz", "sosreport-node.tar.xz"])
def test_a_zero_filled_tarball_is_refused_at_once(gnd: Any, tmp_path: Path, name: str) -> None:
    """A node's upload lost in a crash: the file's size, all zero bytes. tarfile's "r:*" tried xz on
    it, and lzma read the zeros to the end as stream padding (200 MiB: 21 s; 3 GiB: 4 minutes)."""
    path = tmp_path / name
    size = 256 << 20
    with open(path, "wb") as fh:
        fh.truncate(size)
    before = _bytes_read()
    gnd("check", str(path)).refused(str(path))
    # what was read counted, not timed: the refusal comes from the first blocks (the snapshot probe reads
    # a quarter of this file at most), never from decompressing the whole file
    assert _bytes_read() - before < size // 2


def _bytes_read() -> int:
    """Bytes this process has read through read(2) and the like (``rchar`` of ``/proc/self/io``)."""
    try:
        text = Path("/proc/self/io").read_text()
    except OSError:
        pytest.skip("no /proc/self/io here")
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("rchar:")))


def _plugin_check(facts: object) -> list[Any]:
    from doctor.findings import Finding

    return [Finding("high", "node", "a plugin's finding")]


def test_an_entry_made_before_a_plugin_was_installed_is_not_reused(snaps: dict[str, Any], tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The key covers the checks loaded: results stored without a plugin's checks are not the
    result of a run that has them."""
    from doctor import registry

    sick = snaps["sick"]
    cache = tmp_path / "cache"
    _entry(cache, sick["key"]).write_bytes(sick["entry"])
    os.chmod(cache / f"{sick['key']}.json", 0o600)
    builtin = registry.load_checks
    extra = registry.Check("hello.world", "Hello", "plugin", _plugin_check, plugin="gnd-hello")
    monkeypatch.setattr(registry, "load_checks", lambda: ([*builtin()[0], extra], []))
    monkeypatch.setattr(fleet, "_CHECKS", None)
    assert fleet._cache_key(sick["path"]) != sick["key"]
    report = fleet.analyse_fleet([sick["path"]], 1, cache_dir=str(cache))
    assert "hello.world" in report.checks
    assert any(f.check == "hello.world" for f in report.common)
    monkeypatch.undo()
    monkeypatch.setattr(fleet, "_CHECKS", None)
    assert fleet._cache_key(sick["path"]) == sick["key"]
