"""The real recordings in ../shared/realdata parse without error and give the inventory EXPECTED.md describes."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.cli import main
from doctor.facts import Facts
from doctor.sources import open_source
from tests import realdata

pytestmark = pytest.mark.skipif(not realdata.available(), reason="../shared/realdata is absent")


@pytest.fixture(scope="session")
def unpacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("realdata")
    return {name: realdata.unpack(name, base) for name in realdata.RECORDINGS}


def facts(unpacked: dict[str, Path], name: str) -> Facts:
    return Facts(open_source(str(unpacked[name])))


@pytest.mark.parametrize("name", list(realdata.RECORDINGS))
def test_every_recording_checks_without_traceback(unpacked: dict[str, Path], name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(unpacked[name]), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    assert "Traceback" not in out + err
    assert '"schema_version"' in out
    assert '"check failed' not in out, "a check raised on real data"


def test_old_kernel_speed_format_and_plx_tree(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "32intel64-2p8co2t+8ve")
    pci = f.pci
    assert pci.origin == "sysfs"
    x722 = pci.devices["0000:60:00.0"]
    assert (x722.vendor, x722.cur_speed, x722.max_speed, x722.cur_width) == (0x8086, 2.5, 8.0, 1)
    aurora = [d for d in pci.devices.values() if d.vendor == 0x1BCF]
    assert len(aurora) == 8 and all(d.cur_speed == 8.0 and d.cur_width == 16 for d in aurora)
    plx = [d for d in pci.devices.values() if (d.vendor, d.device) == (0x10B5, 0x9797)]
    assert plx and all(d.is_bridge for d in plx)
    assert all(len(d.path) >= 3 for d in aurora), "accelerators sit behind switch ports"
    assert {d.numa_node for d in pci.devices.values()} == {0}
    assert len(f.numa.cpu_nodes) == 2
    assert "iommu" not in (f.cmdline.raw or "")


def test_four_node_host_with_unknown_pci_locality(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "40intel64-2g2n4c+pcilocality")
    nodes = [d.numa_node for d in f.pci.devices.values()]
    assert len(nodes) == 37 and nodes.count(-1) == 36
    assert f.pci.devices["0000:43:00.0"].numa_node == 2
    assert len(f.numa.cpu_nodes) == 4
    (port,) = f.rdma
    assert (port.name, port.link_layer, port.active, port.rate_gbps) == ("qib0/1", "InfiniBand", True, 40.0)
    assert sum(1 for d in f.pci.devices.values() if d.cur_speed is not None) == 3


def test_connectx3_on_node1_without_link_files(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "32em64t-2n8c+dax+nvme+mic+dimms")
    (port,) = f.rdma
    assert port.device == "mlx4_0" and port.link_layer == "InfiniBand" and port.active
    assert f.pci.devices[port.pci_address or ""].numa_node == 1
    assert all(d.cur_speed is None and d.max_width is None for d in f.pci.devices.values())
    names = {n.name: n for n in f.netdevs}
    assert names["eth0.1015"].virtual and names["br0"].virtual and not names["eth0"].virtual


def test_power9_gpu_memory_nodes_are_not_sockets(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "nvidiagpunumanodes")
    assert [n.id for n in f.numa.nodes] == [0, 8, 250, 251, 252, 253, 254, 255]
    assert [n.id for n in f.numa.cpu_nodes] == [0, 8]
    assert len(f.gpus.gpus) == 6
    assert {g.address.split(":")[0] for g in f.gpus.gpus} == {"0004", "0006", "0007", "0035"}


def test_pci_domain_wider_than_16_bits_in_a_guest(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "2pa-pcidomain32bits")
    assert any(a.startswith("10000:") for a in f.pci.devices)
    assert f.host.is_vm is True
    assert not f.gpus.gpus


def test_procfs_root_port_and_dangling_iommu_links(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "procfs-fixtures")
    root = f.pci.devices["0000:00:02.1"]
    nvme = f.pci.devices["0000:01:00.0"]
    assert (root.cur_width, root.max_width, nvme.max_width) == (4, 8, 4)
    assert nvme.path == ("0000:00:02.1", "0000:01:00.0")
    assert nvme.iommu_group is not None  # the link's target folder is not recorded
    e810 = next(d for d in f.pci.devices.values() if (d.vendor, d.device) == (0x8086, 0x159B))
    assert (e810.numa_node, e810.cur_speed, e810.cur_width) == (1, 16.0, 8)
    assert {p.name for p in f.rdma} >= {"mlx4_0/1", "mlx4_0/2", "mlx5_0/1", "hfi1_0/1"}
    assert all(not p.gids for p in f.rdma)


def test_kvm_guest_with_passed_through_gpu(unpacked: dict[str, Path]) -> None:
    f = facts(unpacked, "ghw-accel-nvidia")
    assert f.host.is_vm is True
    (gpu,) = f.gpus.gpus
    assert gpu.address == "0000:06:00.0" and gpu.pci and gpu.pci.driver == "nvidia"
    assert gpu.pci.device == 0x15F8 and gpu.pci.cur_speed is None
