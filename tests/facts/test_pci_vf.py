"""SR-IOV virtual functions are recognised without a ``physfn`` link: by their driver (sysfs trees trimmed by
ghw or hwloc) or by the name lspci prints (sosreports). VFs are skipped by every PCIe and NUMA check."""

from __future__ import annotations

from pathlib import Path

from doctor.facts import Facts
from tests.helpers import facts, source

# jaypipes/ghw testdata/snapshots/linux-amd64-8581cf3a529e5d8b97ea876eade2f60d.tar.gz (Apache-2.0): a two-socket
# Xeon whose i350 (igb) exports eight VFs bound to igbvf; ghw does not record physfn.
GHW = Path(__file__).resolve().parent.parent / "realworld" / "cases" / "ghw-xeon-2socket-sriov"
VFS = ("0000:05:10.0", "0000:05:10.1", "0000:05:10.4", "0000:05:10.5",
       "0000:05:11.0", "0000:05:11.1", "0000:05:11.4", "0000:05:11.5")

# Device heads of real `lspci -nn` outputs (leptonai/gpud components/accelerator/nvidia/fabric-manager/testdata/
# lspci.nn.a100 and lspci.nn.a10, Apache-2.0): Azure VMs whose InfiniBand/Ethernet functions are VFs.
LSPCI = """\
0001:00:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2] (rev a1)
0101:00:00.0 Infiniband controller [0207]: Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function] [15b3:101c]
c941:00:02.0 Ethernet controller [0200]: Mellanox Technologies MT27710 Family [ConnectX-4 Lx Virtual Function] [15b3:1016] (rev 80)
05:00.0 Ethernet controller [0200]: Mellanox Technologies ConnectX Family mlx5Gen Virtual Function [15b3:101e]
"""


def test_vf_driver_marks_a_vf_when_physfn_is_not_recorded() -> None:
    pci = facts(base=GHW).pci
    assert all(pci.devices[a].is_vf for a in VFS)
    assert not pci.devices["0000:05:00.0"].is_vf and pci.devices["0000:05:00.0"].driver == "igb"
    assert {d.address for d in pci.nics} == {"0000:01:00.0", "0000:01:00.1", "0000:02:00.0", "0000:02:00.1",
                                             "0000:05:00.0", "0000:05:00.1"}


def test_lspci_name_marks_a_vf_in_a_sosreport() -> None:
    pci = Facts(source({"sos_commands/pci/lspci_-nnvv": LSPCI}, base=None)).pci
    assert pci.origin == "lspci"
    assert [d.address for d in pci.nics] == [] and [d.address for d in pci.gpus] == ["0001:00:00.0"]
    assert all(pci.devices[a].is_vf for a in ("0101:00:00.0", "c941:00:02.0", "0000:05:00.0"))
