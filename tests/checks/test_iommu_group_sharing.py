"""iommu.group_sharing: shared GPU groups are info without VFIO, medium on VFIO hosts."""

from __future__ import annotations

from tests.checks.pcie_overlays import GPU3, attrs, node
from tests.helpers import Link, findings_of

CHECK = "iommu.group_sharing"


def test_healthy_shared_groups_are_info_only() -> None:
    found = findings_of(node(), CHECK)
    assert [f.severity for f in found] == ["info"]
    assert "VFIO" in found[0].title


def test_vfio_host_gets_medium_per_group() -> None:
    found = findings_of(node(attrs(GPU3, driver=Link("../../../../../../bus/pci/drivers/vfio-pci"))), CHECK)
    medium = [f for f in found if f.severity == "medium"]
    assert len(medium) == 4
    group_3c = next(f for f in medium if GPU3 in f.related)
    assert "0000:3b:00.0" in group_3c.related  # the NIC in the same group


def test_gpu_alone_in_its_group_passes() -> None:
    changes = {**attrs(GPU3, iommu_group=Link("../../../../../../kernel/iommu_groups/99")),
               "sys/kernel/iommu_groups/99/type": "identity\n",
               f"sys/kernel/iommu_groups/99/devices/{GPU3}": Link("../../../../devices/x")}
    found = findings_of(node(changes), CHECK)
    assert [f.severity for f in found] == ["info"]
    assert found[0].title.startswith("7 GPU(s)") and "group 99" not in found[0].detail
