"""The fleet worker's reuse of facts and findings (doctor/fleet/memo.py) is sound only if fact
builders read nothing but the traced Source, and if what it reuses depends on nothing that differs
between the trees. These tests pin both down."""

from __future__ import annotations

import io
import sys
import tarfile
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from doctor.facts import Facts
from doctor.facts.pci_ids import pci_ids
from doctor.fleet import memo
from doctor.pipeline import open_facts
from doctor.sources.tree import _Reference
from fixtures.tools.make_node import HEALTHY
from tests.fleet.fleetgen import FleetWriter

FAMILIES = sorted(name for klass in Facts.__mro__ for name, attr in vars(klass).items()
                  if isinstance(attr, cached_property))
#: audit events that mean reading or running something besides the Source
OUTSIDE = ("open", "os.listdir", "os.scandir", "os.walk", "glob.glob", "subprocess.Popen", "os.system",
           "socket.connect", "shutil.which")
_EVENTS: list[tuple[str, str]] = []
_WATCHING = [False]


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _WATCHING[0] and event in OUTSIDE:
        _EVENTS.append((event, str(args[0]) if args else ""))


sys.addaudithook(_hook)  # cannot be removed; it only records while _WATCHING


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("memo")
    writer = FleetWriter(replace(HEALTHY, node_id=970))
    return [writer.write(d / f"m-{i}.tar.gz", f"m-{i}", 3000 + i) for i in range(3)]


def test_fact_builders_read_only_through_the_source(nodes: list[Path]) -> None:
    """Every fact family built from a snapshot tarball opens, lists or runs nothing on this machine
    (pci.ids, the one host file the PCI facts use, is read once per process before)."""
    pci_ids()
    for name in FAMILIES:  # imports happen on first use: do them before watching
        getattr(Facts(open_facts(str(nodes[0])).source), name)
    _EVENTS.clear()
    _WATCHING[0] = True
    try:
        with open(nodes[0], "rb"):  # the hook does see an open
            pass
        assert _EVENTS and _EVENTS[0][0] == "open"
        _EVENTS.clear()
        for path in nodes[1:]:
            facts = open_facts(str(path), reuse=True)
            _EVENTS.clear()  # opening the tarball itself is reading the source
            for name in FAMILIES:
                getattr(facts, name)
            facts.proc_files.memlock(1)
            facts.proc_files.shm(1)
    finally:
        _WATCHING[0] = False
    assert _EVENTS == []


def test_reused_facts_are_the_recorded_objects_and_host_is_rebuilt(nodes: list[Path]) -> None:
    first, second = (open_facts(str(p), reuse=True) for p in nodes[:2])
    assert isinstance(second, memo.MemoFacts)
    assert second.pci is first.pci and second.gpus is first.gpus  # nothing they read differs
    assert first.host.hostname == "m-0" and second.host.hostname == "m-1"  # each node's own name
    assert second.host.is_vm == first.host.is_vm


def test_a_node_of_another_configuration_gets_its_own_facts(nodes: list[Path], tmp_path: Path) -> None:
    other = FleetWriter(replace(HEALTHY, node_id=970, gpu_links={3: (2.5, 8)}))
    path = other.write(tmp_path / "o.tar.gz", "o-1", 4000)
    a, b = open_facts(str(nodes[0]), reuse=True), open_facts(str(path), reuse=True)
    assert b.pci is not a.pci and b.pci != a.pci  # GPU 3's link differs: built again, not reused
    assert b.cmdline is a.cmdline  # the kernel command line does not


def _unlike(tmp_path: Path, i: int) -> Path:
    """A small snapshot sharing no path with the other ones made here."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for j in range(200):
            info = tarfile.TarInfo(f"proc/u{i}/f{j}")
            info.size = 2
            tf.addfile(info, io.BytesIO(b"1\n"))
    path = tmp_path / f"unlike-{i}.tar"
    path.write_bytes(buf.getvalue())
    return path


def test_kept_references_are_bounded(tmp_path: Path) -> None:
    """However many unlike trees a worker meets, it keeps at most KEEP of them to compare with."""
    for i in range(_Reference.KEEP + 3):
        open_facts(str(_unlike(tmp_path, i)), reuse=True)
    assert len(_Reference._kept) == _Reference.KEEP


def test_a_check_is_reused_only_when_what_it_read_is_equal(nodes: list[Path]) -> None:
    """A check that reads only whether the host is a VM is run once for nodes of one configuration;
    one that reads the host name runs on every node, even while an older node's facts are in use."""
    from doctor.findings import INFO, Finding
    from doctor.registry import Check

    calls: list[str] = []

    def reads_vm(facts: Facts) -> list[Finding]:
        calls.append("vm")
        return [Finding(INFO, "node", f"vm={facts.host.is_vm}", check="t.vm", category="doctor")]

    def reads_name(facts: Facts) -> list[Finding]:
        calls.append("name")
        return [Finding(INFO, str(facts.host.hostname), "name", check="t.name", category="doctor")]

    vm = memo.MemoCheck(Check("t.vm", "vm", "doctor", reads_vm))
    name = memo.MemoCheck(Check("t.name", "name", "doctor", reads_name))
    older = open_facts(str(nodes[0]), reuse=True)
    for path in nodes:
        facts = open_facts(str(path), reuse=True)
        older.sysctls  # noqa: B018  another node's facts built meanwhile note nothing in this one's checks
        assert vm(facts)[0].title == vm(older)[0].title
        assert name(facts)[0].subject == path.name[:-7]
    assert calls.count("vm") == 1 and calls.count("name") == len(nodes)  # once per distinct host name


def test_builds_from_references_no_longer_kept_are_let_go(tmp_path: Path) -> None:
    """Memory stays flat when every tree is unlike the others: recorded builds live on references."""
    for i in range(_Reference.KEEP + 4):
        open_facts(str(_unlike(tmp_path, 100 + i)), reuse=True).pci  # noqa: B018
    import gc

    gc.collect()
    alive = [o for o in gc.get_objects() if isinstance(o, _Reference)]
    assert len(alive) <= _Reference.KEEP
    assert all(len(recs) <= memo.KEEP for k in _Reference._kept for recs in k.memo.values()
               if isinstance(recs, list))


def test_a_check_reading_the_source_itself_is_never_reused(nodes: list[Path]) -> None:
    from doctor.findings import INFO, Finding
    from doctor.registry import Check

    calls: list[str] = []

    def raw(facts: Facts) -> list[Finding]:
        calls.append("raw")
        text = facts.source.read_text("etc/hostname") or ""
        return [Finding(INFO, text.strip(), "raw", check="t.raw", category="doctor")]

    chk = memo.MemoCheck(Check("t.raw", "raw", "doctor", raw))
    for path in nodes:
        facts = open_facts(str(path), reuse=True)
        facts.pci  # noqa: B018  facts built from the source are still reused
        assert chk(facts)[0].subject == path.name[:-7]
    assert calls == ["raw"] * len(nodes)


def test_a_fact_reading_a_commands_reason_follows_that_spec_in_the_manifest(nodes: list[Path], tmp_path: Path) -> None:
    """The manifest differs on every node (host name, time); what reads one spec's status in it is
    reused while that status is the same, and built again when it differs."""
    writer = FleetWriter(replace(HEALTHY, node_id=970))
    failed = {"nvidia_smi_q": {"status": "error", "detail": "Failed to initialize NVML: Driver/library version mismatch"}}
    odd = writer.write(tmp_path / "m-odd.tar.gz", "m-odd", 3100, specs=failed)
    first, second, third = (open_facts(str(p), reuse=True) for p in (*nodes[:2], odd))
    assert first.nvidia_driver.nvml_mismatch is None
    assert second.nvidia_driver is first.nvidia_driver  # only the host name and time differ in its manifest
    assert third.nvidia_driver.nvml_mismatch == "Driver/library version mismatch"
    assert third.nvidia_driver == Facts(open_facts(str(odd)).source).nvidia_driver


def test_a_fact_built_again_equal_to_an_earlier_build_is_that_object(tmp_path: Path) -> None:
    """Readings that differ on every node (GPU temperatures, interrupt counts) make the GPU and IRQ
    facts be built again; equal to the earlier build, they are that very object, so what reads
    them is reused; a reading a fact keeps makes a different object."""
    from tests.fleet.fleetgen import volatile_files

    writer = FleetWriter(replace(HEALTHY, node_id=980))
    paths = [writer.write(tmp_path / f"v-{i}.tar.gz", f"v-{i}", 3200 + i, files=volatile_files(writer.files, 3200 + i))
             for i in range(2)]
    smi = "commands/nvidia-smi_-q_-x"
    busy = volatile_files(writer.files, 3202)
    busy[smi] = busy[smi].replace(b"<gpu_util>0 %</gpu_util>", b"<gpu_util>93 %</gpu_util>", 1)
    paths.append(writer.write(tmp_path / "v-busy.tar.gz", "v-busy", 3202, files=busy))
    first, second, third = (open_facts(str(p), reuse=True) for p in paths)
    assert first.source.read_bytes(smi) != second.source.read_bytes(smi)
    assert first.source.read_bytes("proc/interrupts") != second.source.read_bytes("proc/interrupts")
    assert second.gpus is first.gpus and second.irqs is first.irqs
    assert third.gpus is not first.gpus and third.irqs is first.irqs
    assert sorted(g.runtime.util_gpu for g in third.gpus.gpus if g.runtime)[-1] == 93.0


@pytest.mark.parametrize(("a", "b", "same"), [
    ((1, "x", None), (1, "x", None), True),
    ({"a": 1, "b": 2}, {"a": 1, "b": 2}, True),
    (frozenset({1, 2}), frozenset({2, 1}), True),
    (1, 1.0, False), (1, True, False), (0.0, -0.0, False), (0.0, 0.0, True), (float("nan"), float("nan"), False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # another order renders otherwise
    (frozenset({1}), frozenset({1.0}), False), (frozenset({(1,)}), frozenset({(1,)}), False),
    ((1, 2), [1, 2], False),
    (object(), object(), False),
])
def test_equal_is_equality_that_renders_alike(a: object, b: object, same: bool) -> None:
    """What a reuse compares: equal plain values, in the same order and of the same types; an
    unknown kind of object only to itself."""
    assert memo._equal(a, b) is same
    assert memo._equal(b, a) is same


def test_equal_compares_records_field_by_field() -> None:
    from doctor.facts.numa import Irq

    one = Irq(7, "mlx5_comp0@pci:0000:19:00.0", frozenset({1}), frozenset({1, 2}), "proc/irq/7")
    assert memo._equal(one, replace(one))
    assert not memo._equal(one, replace(one, effective=frozenset({2})))
    assert not memo._equal(one, replace(one, number=7.0))  # type: ignore[arg-type]


def test_equal_builds_are_found_among_configurations_met_in_turn(tmp_path: Path) -> None:
    """A worker meets nodes of a few configurations in turn (as the fleet benchmark's three): the
    build a rebuilt family equals may be any of the recent ones, not only the last."""
    from tests.fleet.fleetgen import volatile_files

    writers = [FleetWriter(replace(HEALTHY, node_id=990 + b)) for b in range(3)]
    facts = []
    for i in range(6):
        w = writers[i % 3]
        path = w.write(tmp_path / f"t-{i}.tar.gz", f"t-{i}", 3300 + i, files=volatile_files(w.files, 3300 + i))
        facts.append(open_facts(str(path), reuse=True))
    assert len({id(f.gpus) for f in facts[:3]}) == 3  # three configurations: three GPU facts
    assert all(facts[3 + b].gpus is facts[b].gpus for b in range(3))
