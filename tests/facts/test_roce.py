"""RoCE fact builders: ECN switches, hw_counters, active_mtu, routes (present, missing, hostile)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.sources import open_source
from tests import realdata
from tests.checks._netnuma_base import healthy, real
from tests.helpers import facts


def test_fixture_values_are_read() -> None:
    f = facts()
    assert f.roce_ecn["enp25s0np0"].np == {p: True for p in range(8)}
    assert f.roce_ecn["enp39s0f0np0"].recorded is False  # the X710 has no ecn/ directory
    assert f.rdma_counters["mlx5_0/1"].values["out_of_sequence"] == 0
    assert f.active_mtu.by_port["mlx5_7/1"] == 4096 and f.active_mtu.missing is None
    routes = f.routes
    assert routes is not None
    rail = [r for r in routes if r.iface == "enp25s0np0"]
    assert [(r.destination, r.mask, r.connected) for r in rail] == [("10.100.0.0", "255.255.0.0", True)]
    assert not [r for r in routes if r.iface == "enp39s0f0np0" and r.destination == "0.0.0.0"][0].connected


def test_hostile_inputs_record_nothing() -> None:
    nd = real("sys/class/net/enp25s0np0", healthy())
    port = real("sys/class/infiniband/mlx5_0", healthy()) + "/ports/1/hw_counters"
    f = facts({f"{nd}/ecn/roce_np/enable/0": "yes\n", f"{port}/out_of_sequence": "1e9\n",
               "proc/net/route": "Iface\tDestination\nshort line\nx\tGGGGGGGG\t00000000\t0\t0\t0\t0\t00000000\n",
               "commands/ibv_devinfo_-v": b"\xff\xfe binary \x00"})
    assert 0 not in f.roce_ecn["enp25s0np0"].np and f.roce_ecn["enp25s0np0"].np[1] is True
    assert "out_of_sequence" not in f.rdma_counters["mlx5_0/1"].values
    assert f.routes == ()
    assert f.active_mtu.by_port == {} and f.active_mtu.missing


def test_missing_sources() -> None:
    f = facts({"proc/net/route": None, "commands/ibv_devinfo_-v": None})
    assert f.routes is None
    assert f.active_mtu.missing and "ibv_devinfo" in f.active_mtu.missing


def test_persistent_files_in_apply_order() -> None:
    f = facts({"etc/sysctl.conf": "vm.swappiness = 10\n", "etc/sysctl.d/10-a.conf": "vm.swappiness = 60\n",
               "etc/sysctl.d/99-z.conf": "vm.swappiness = 1\n"})
    names = [p.rsplit("/", 1)[-1] for p, _ in f.sysctls.files]
    assert names == ["10-a.conf", "90-gpu-net.conf", "99-z.conf", "sysctl.conf"]


@pytest.mark.skipif(not realdata.available(), reason="../shared/realdata not present")
def test_real_mlx5_hw_counters(tmp_path: Path) -> None:
    root = realdata.unpack("procfs-fixtures", tmp_path)
    f = Facts(open_source(str(root)))
    values = f.rdma_counters["mlx5_0/1"].values
    # prometheus/procfs's recording of a ConnectX port: one sequence error of each kind, no buffer drop
    assert (values["out_of_sequence"], values["packet_seq_err"], values["out_of_buffer"]) == (1, 1, 0)


def test_qos_facts_and_roce_netdevs() -> None:
    f = facts()
    assert len(f.roce_netdevs) == 8 and "enp39s0f0np0" not in f.roce_netdevs  # the X710 has no RDMA device
    qos = f.roce_qos["enp189s0np0"]
    assert qos.trust == "dscp" and qos.pfc_vector == (0, 0, 0, 1, 0, 0, 0, 0) and qos.priority_of_dscp(26) == 3
    assert qos.origin == "commands/mlnx_qos_-i_enp189s0np0" and qos.missing is None
    gone = facts({"commands/mlnx_qos_-i_enp189s0np0": None}).roce_qos["enp189s0np0"]
    assert gone.missing and gone.pfc == {} and gone.pfc_vector is None


def test_a_hostile_interface_name_in_sysfs_is_never_a_target() -> None:
    from tests.helpers import Link

    target = "../../" + real("sys/class/net/enp25s0np0", healthy()).removeprefix("sys/")
    f = facts({"sys/class/net/-rf": Link(target), "sys/class/net/a;id": Link(target)})
    assert "-rf" not in f.roce_netdevs and "a;id" not in f.roce_netdevs and "enp25s0np0" in f.roce_netdevs
    assert set(f.roce_qos) == set(f.roce_netdevs)
