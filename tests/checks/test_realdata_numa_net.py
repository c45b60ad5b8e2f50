"""NUMA/network/RDMA/runtime checks on real recordings (skipped without ../shared/realdata)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.sources import open_source
from tests import realdata
from tests.helpers import run

pytestmark = pytest.mark.skipif(not realdata.available(), reason="../shared/realdata not present")
MINE = ["numa", "net", "rdma", "nccl", "runtime"]


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("rd")
    return {name: realdata.unpack(name, dest) for name in realdata.RECORDINGS}


def _findings(root: Path) -> list[tuple[str, str, str]]:
    result = run(Facts(open_source(str(root))), only=MINE)
    return [(f.check, f.subject, f.severity) for f in result.findings]


def test_no_alarm_and_no_crash_anywhere(unpacked: dict[str, Path]) -> None:
    for name, root in unpacked.items():
        found = _findings(root)
        assert not [f for f in found if "failed" in f[1]], name
        allowed = {"40intel64-2g2n4c+pcilocality": {("numa.unknown_locality", "node", "medium")}}.get(name, set())
        alarms = {f for f in found if f[2] in ("critical", "high", "medium")}
        assert alarms == allowed, name


def test_four_node_host_with_minus_one_is_unknown_locality(unpacked: dict[str, Path]) -> None:
    found = _findings(unpacked["40intel64-2g2n4c+pcilocality"])
    assert ("numa.unknown_locality", "node", "medium") in found
    assert not [f for f in found if f[0] in ("numa.process_affinity", "numa.gpu_nic_locality", "rdma.gid_index")]


def test_gpu_memory_nodes_are_not_sockets(unpacked: dict[str, Path]) -> None:
    f = Facts(open_source(str(unpacked["nvidiagpunumanodes"])))
    assert {n.id for n in f.numa.cpu_nodes} == {0, 8}
    assert ("numa.unknown_locality", "node", "unknown") in _findings(unpacked["nvidiagpunumanodes"])


def test_infiniband_ports_have_no_gid_findings(unpacked: dict[str, Path]) -> None:
    for name in ("40intel64-2g2n4c+pcilocality", "32em64t-2n8c+dax+nvme+mic+dimms"):
        assert not [x for x in _findings(unpacked[name]) if x[0] == "rdma.gid_index"], name


def test_procfs_infiniband_ports_without_gids_say_nothing(unpacked: dict[str, Path]) -> None:
    """mlx4/mlx5/hfi1 ports there are all InfiniBand: the GID index rule is RoCE-only, missing gids/ do not matter
    (a RoCE port without its table is unknown: tests/realworld gpud-h100-infiniband-sysfs, mlx5_bond_0)."""
    assert not [x for x in _findings(unpacked["procfs-fixtures"]) if x[0] == "rdma.gid_index"]
