"""iommu.translation: translated DMA on a multi-GPU bare-metal host is high; passthrough and VMs are not."""

from __future__ import annotations

from tests.checks.pcie_overlays import node, sick
from tests.helpers import findings_of

CHECK = "iommu.translation"
BOOT = "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic ro intel_iommu=on"


def _no_group_types(base=None) -> dict:
    return {f"sys/kernel/iommu_groups/{n}/type": None for n in range(40)}


def test_sick_dma_fq_groups_are_high_with_grub_fix() -> None:
    found = findings_of(node(base=sick()), CHECK)
    assert [f.severity for f in found] == ["high"]
    f = found[0]
    assert any("DMA-FQ" in e.value for e in f.evidence)
    persistent = "\n".join(f.fix.persistent)
    assert "grubby --update-kernel=ALL --args=iommu=pt" in persistent and "update-grub" in persistent
    assert "grubby --update-kernel=ALL --remove-args=iommu=pt" in f.fix.rollback


def test_healthy_passthrough_passes() -> None:
    assert [f.severity for f in findings_of(node(), CHECK)] == ["pass"]


def test_cmdline_intel_iommu_on_without_pt_is_high_when_types_missing() -> None:
    found = findings_of(node({**_no_group_types(), "proc/cmdline": BOOT + "\n"}), CHECK)
    assert [f.severity for f in found] == ["high"] and found[0].confidence < 1


def test_cmdline_with_pt_passes_when_types_missing() -> None:
    found = findings_of(node({**_no_group_types(), "proc/cmdline": BOOT + " iommu=pt\n"}), CHECK)
    assert [f.severity for f in found] == ["pass"]


def test_passthrough_zero_is_removed_by_the_fix() -> None:
    found = findings_of(node({**_no_group_types(), "proc/cmdline": BOOT + " iommu.passthrough=0\n"}), CHECK)
    assert found[0].severity == "high"
    assert any("--remove-args=iommu.passthrough=0" in c for c in found[0].fix.persistent)


def test_virtual_machine_is_silent() -> None:
    assert findings_of(node({"proc/cpuinfo": "flags\t\t: fpu hypervisor\n"}, base=sick()), CHECK) == []
