"""Fleet re-analysis of snapshots gives exactly what a plain `gnd check` of each snapshot gives.

The fleet worker reads tarballs through the fast in-memory reader, one node after another in one
process; the reference here is `gnd check --format json` of each snapshot, one at a time, with the
fast reader switched off (the hardened tarfile path). Results must match to the byte,
timings aside, on a generated fleet with planted outliers and a snapshot made by `gnd collect`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from doctor.cli import main
from doctor.collect import collect
from doctor.fleet import fleet
from doctor.fleet.fleet import analyse_fleet
from doctor.fleet.load import load_node, node_of
from doctor.result_io import to_result
from doctor.sources import open_source
from doctor.sources.tree import TarTree
from fixtures.tools.make_node import HEALTHY
from tests.fleet.conftest import BEFORE_FIX
from tests.fleet.fleetgen import FleetWriter, spec_tarball, volatile_files

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PLANTED = {1: replace(HEALTHY, gpu_links={3: (2.5, 8)}),
           3: replace(HEALTHY, sysctl_overrides=dict(BEFORE_FIX.sysctl_overrides)),
           5: replace(HEALTHY, extra_cmdline=("pcie_aspm=force",))}
VOLATILE = {"generated_at", "duration_s", "duration_ms"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _summary(path: Path, ref: dict[str, Any]) -> dict[str, Any]:
    """The summary a worker sends for a node whose `gnd check --format json` result is ``ref``."""
    return fleet._summary(node_of(str(path), to_result(ref)))


SMI = "commands/nvidia-smi_-q_-x"
#: volatile nodes where a counter crosses what a check fires on (after nodes 6 and 7, where none
#: does): PCIe replays on one GPU, a RoCE port's sequence errors
SPIKES = {8: "pcie.replay", 9: "net.drops"}


def _spiked(i: int, files: dict[str, bytes], base: dict[str, bytes]) -> dict[str, bytes]:
    if SPIKES.get(i) == "pcie.replay":
        smi = files.get(SMI, base[SMI])
        files[SMI] = smi.replace(b"<replay_counter>0</replay_counter>", b"<replay_counter>4321</replay_counter>", 1)
    elif SPIKES.get(i) == "net.drops":
        counter = sorted(k for k in base if k.endswith("/hw_counters/out_of_sequence"))[0]
        files[counter] = b"1207\n"
    return files


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    d = tmp_path_factory.mktemp("snapfleet")
    writers = [FleetWriter(replace(HEALTHY, node_id=900 + b)) for b in range(2)]
    paths = []
    for i in range(10):
        path = d / f"gpu-node-{i:02d}.tar.gz"
        if i in PLANTED:
            spec_tarball(path, replace(PLANTED[i], hostname=path.name[:-7], node_id=1000 + i))
        else:  # nodes 6 to 9 also differ in counters and readings, as real nodes do
            w = writers[i % 2]
            files = _spiked(i, volatile_files(w.files, 1000 + i), w.files) if i >= 6 else None
            w.write(path, path.name[:-7], 1000 + i, files=files)
        paths.append(path)
    sick = d / "sick.tar.gz"
    collect(open_source(str(FIXTURES / "hgx-h100-sick")), str(sick))
    return [*paths, sick]


@pytest.fixture(scope="module")
def plain(snapshots: list[Path], tmp_path_factory: pytest.TempPathFactory) -> dict[Path, dict[str, Any]]:
    """`gnd check --format json` of each snapshot, read the slow way."""
    return plain_checks(snapshots, tmp_path_factory.mktemp("plain"))


def plain_checks(paths: list[Path], out: Path) -> dict[Path, dict[str, Any]]:
    """`gnd check --format json` of each snapshot through the hardened tarfile reader, one at a time."""
    results = {}
    with pytest.MonkeyPatch.context() as m:
        m.setattr(TarTree, "_load_fast", lambda self, fh: False)
        for path in paths:
            dest = out / f"{path.name}.json"
            assert main(["check", str(path), "--format", "json", "-o", str(dest)]) in (0, 1)
            results[path] = json.loads(dest.read_text())
    return results


def test_each_node_result_equals_plain_check(snapshots: list[Path], plain: dict[Path, dict[str, Any]]) -> None:
    fleet._init_worker()
    for path in snapshots:  # in one process, in turn, as a worker meets them
        got = load_node(str(path), fleet._CHECKS).result.to_dict()
        assert _stable(got) == _stable(plain[path]), path.name


def test_spiking_counters_fire_on_their_nodes_only(plain: dict[Path, dict[str, Any]]) -> None:
    """The spikes make a difference (the equality above would not notice a worker that missed them otherwise)."""
    def fired(path: Path, check: str) -> bool:
        return any(f["check"] == check and f["severity"] not in ("pass", "info") for f in plain[path]["findings"])

    by_name = {p.name[:-7]: p for p in plain}
    for i, check in SPIKES.items():
        assert fired(by_name[f"gpu-node-{i:02d}"], check), check
        assert not any(fired(by_name[f"gpu-node-{j:02d}"], check) for j in (0, 2, 4, 6, 7)), check


def test_worker_summaries_equal_plain_check(snapshots: list[Path], plain: dict[Path, dict[str, Any]]) -> None:
    for path in snapshots:
        summary = fleet.analyse(str(path))
        ref = plain[path]
        summary.pop("duration_s")
        assert summary == _summary(path, ref), path.name


def test_fleet_finds_the_planted_outliers(snapshots: list[Path]) -> None:
    report = analyse_fleet([str(p) for p in snapshots[:8]], jobs=2)
    # outliers at --fail-on high: the x8 GPU; every planted node is configuration drift
    assert {report.rows[i].name for i in report.outlier_nodes} == {"gpu-node-01"}
    assert {report.rows[i].name for i in report.drift_nodes} == {f"gpu-node-{i:02d}" for i in PLANTED}


def _gpu_dirs() -> list[str]:
    from fixtures.tools.make_node import render

    tree = render(HEALTHY)
    return sorted(k.rsplit("/", 1)[0] for k, v in tree.files.items() if k.endswith("/class") and v.startswith(b"0x0302"))


@pytest.fixture(scope="module")
def tail_snapshots(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], dict[int, str]]:
    """Nodes of one configuration, some of which differ from the rest in one file or link."""
    d = tmp_path_factory.mktemp("tailfleet")
    gpu = _gpu_dirs()[3]
    changes: dict[int, tuple[dict[str, bytes], dict[str, str]]] = {
        2: ({f"{gpu}/current_link_width": b"8\n"}, {}),  # one GPU at x8: one sysfs file
        4: ({"proc/sys/net/core/rmem_max": b"212992\n"}, {}),  # one sysctl back at the kernel default
        6: ({}, {f"{gpu}/driver": "../../../../../../bus/pci/drivers/vfio-pci"}),  # one link
        9: ({"proc/cmdline": b"BOOT_IMAGE=/vmlinuz ro pcie_aspm=force\n"}, {}),
    }
    writer = FleetWriter(replace(HEALTHY, node_id=950))
    paths = []
    for i in range(12):
        path = d / f"tail-node-{i:02d}.tar.gz"
        files, links = changes.get(i, ({}, {}))
        writer.write(path, path.name[:-7], 2000 + i, files=files, links=links)
        paths.append(path)
    return paths, {i: f"tail-node-{i:02d}" for i in changes}


def test_nodes_differing_in_one_file_get_their_own_results(tail_snapshots: tuple[list[Path], dict[int, str]],
                                                           tmp_path: Path) -> None:
    paths, _ = tail_snapshots
    plain = plain_checks(paths, tmp_path)
    fleet._init_worker()
    for path in paths:
        got = load_node(str(path), fleet._CHECKS).result.to_dict()
        assert _stable(got) == _stable(plain[path]), path.name
        summary = fleet.analyse(str(path))
        summary.pop("duration_s")
        assert summary == _summary(path, plain[path]), path.name
    # and the changed file made a difference (the test would not notice a worker that missed it otherwise)
    results = [_stable(plain[p]) for p in paths]
    assert results[2]["inventory"]["digest"] != results[3]["inventory"]["digest"]
    assert results[4]["inventory"]["digest"] != results[3]["inventory"]["digest"]


def test_fleet_finds_outliers_that_differ_in_one_file(tail_snapshots: tuple[list[Path], dict[int, str]]) -> None:
    paths, changed = tail_snapshots
    report = analyse_fleet([str(p) for p in paths], jobs=1)
    assert {report.rows[i].name for i in report.drift_nodes} == set(changed.values())
    # of them, outliers at --fail-on high: the GPU at x8 and the GPU bound to vfio-pci
    assert {report.rows[i].name for i in report.outlier_nodes} == {changed[2], changed[6]}


def test_snapshots_of_this_host_collected_in_turn_equal_plain_check(tmp_path: Path) -> None:
    """Real snapshots (this host, collected one after another: other pids, counters and times, maybe
    other processes) read by one worker in turn, as `gnd fleet` reads a node's history."""
    paths = []
    for i in range(3):
        path = tmp_path / f"this-host-{i}.tar.gz"
        collect(open_source(None), str(path))
        paths.append(path)
    plain = plain_checks(paths, tmp_path)
    fleet._init_worker()
    for path in paths:
        got = load_node(str(path), fleet._CHECKS).result.to_dict()
        assert _stable(got) == _stable(plain[path]), path.name
        summary = fleet.analyse(str(path))
        summary.pop("duration_s")
        assert summary == _summary(path, plain[path]), path.name
