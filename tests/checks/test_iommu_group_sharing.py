"""iommu.group_sharing: shared GPU groups are info without VFIO, medium on VFIO hosts."""

from __future__ import annotations

from tests.checks.pcie_overlays import GPU3, attrs, node
from tests.helpers import Link, findings_of

CHECK = "iommu.group_sharing"


def test_healthy_shared_groups_are_info_only() -> None:
    found = findings_of(node(), CHECK)
    assert [f.severity for f in found] == ["info"]
    assert "VFIO" in found[0].title


VFIO = Link("../../../../../../bus/pci/drivers/vfio-pci")
QEMU = {"proc/77/status": "Name:\tqemu-system-x86\nPPid:\t1\n", "proc/77/cmdline": b"qemu-system-x86_64\0-enable-kvm\0"}


def test_passthrough_host_gets_medium_for_the_group_of_the_vfio_gpu() -> None:
    found = findings_of(node({**attrs(GPU3, driver=VFIO), **QEMU}), CHECK)
    medium = [f for f in found if f.severity == "medium"]
    assert len(medium) == 1 and GPU3 in medium[0].related
    assert "0000:3b:00.0" in medium[0].related  # the NIC in the same group
    assert "pcie.acs_redirect" in medium[0].fix.notes  # the ACS advice names its trade-off


def test_serving_host_whose_vfio_gpu_goes_back_to_nvidia_gets_no_acs_advice() -> None:
    """vfio.binding sends the GPU back to nvidia here: isolating its group (ACS on, in the BIOS) would fight
    pcie.acs_redirect's advice for serving GPUs, so the sharing is only info."""
    found = findings_of(node(attrs(GPU3, driver=VFIO)), CHECK)
    assert [f.severity for f in found] == ["info"] and "back to nvidia" in found[0].detail
    assert not any("BIOS" in f.fix.notes for f in found)


def test_gpu_alone_in_its_group_passes() -> None:
    changes = {**attrs(GPU3, iommu_group=Link("../../../../../../kernel/iommu_groups/99")),
               "sys/kernel/iommu_groups/99/type": "identity\n",
               f"sys/kernel/iommu_groups/99/devices/{GPU3}": Link("../../../../devices/x")}
    found = findings_of(node(changes), CHECK)
    assert [f.severity for f in found] == ["info"]
    assert found[0].title.startswith("7 GPU(s)") and "group 99" not in found[0].detail
