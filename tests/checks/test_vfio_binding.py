"""vfio.binding: a vfio-bound GPU on an inference host is high; passthrough hosts and bridges are not flagged."""

from __future__ import annotations

from tests.checks.pcie_overlays import GPU0, GPU3, attrs, node
from tests.helpers import Link, findings_of

CHECK = "vfio.binding"
VFIO = Link("../../../../../../bus/pci/drivers/vfio-pci")


def test_healthy_passes() -> None:
    assert [f.severity for f in findings_of(node(), CHECK)] == ["pass"]


def test_gpu_on_vfio_on_inference_host_is_high() -> None:
    found = findings_of(node(attrs(GPU3, driver=VFIO)), CHECK)
    high = [f for f in found if f.severity == "high"]
    assert len(high) == 1 and GPU3 in high[0].subject
    assert any(GPU3 in c and "vfio-pci/unbind" in c for c in high[0].fix.runtime)
    assert any("drivers_probe" in c for c in high[0].fix.rollback)


QEMU = {"proc/77/status": "Name:\tqemu-system-x86\nPPid:\t1\n", "proc/77/cmdline": b"qemu-system-x86_64\0-enable-kvm\0"}


def test_non_viable_group_names_host_driver_members_not_bridges() -> None:
    found = findings_of(node({**attrs(GPU3, driver=VFIO), **QEMU}), CHECK)
    medium = [f for f in found if f.severity == "medium"]
    assert len(medium) == 1
    assert "0000:3b:00.0" in medium[0].related  # ConnectX-7 on mlx5_core in the same group
    assert not any(r.startswith(("0000:37:", "0000:38:", "0000:39:")) for r in medium[0].related)  # pcieport


def test_gpu_sent_back_to_nvidia_gets_no_advice_to_move_its_group_onto_vfio() -> None:
    found = findings_of(node(attrs(GPU3, driver=VFIO)), CHECK)
    assert [f.severity for f in found] == ["high"]
    assert not any("echo vfio-pci >" in c for f in found for c in f.fix.runtime)


def test_passthrough_host_with_hypervisor_is_info() -> None:
    changes = {**attrs(GPU3, driver=VFIO), "proc/77/status": "Name:\tqemu-system-x86\nPPid:\t1\n",
               "proc/77/cmdline": b"qemu-system-x86_64\0-enable-kvm\0"}
    found = findings_of(node(changes), CHECK)
    assert "high" not in {f.severity for f in found}
    assert any(f.severity == "info" and GPU3 in f.subject for f in found)


def test_driver_override_pending_is_low() -> None:
    found = findings_of(node(attrs(GPU0, driver_override="vfio-pci")), CHECK)
    low = [f for f in found if f.severity == "low"]
    assert len(low) == 1 and GPU0 in low[0].subject
    assert low[0].fix.runtime == (f"echo '' > /sys/bus/pci/devices/{GPU0}/driver_override",)


def _release(modprobe: str) -> object:
    found = findings_of(node({**attrs(GPU3, driver=VFIO), "etc/modprobe.d/vfio.conf": modprobe}), CHECK)
    (high,) = [f for f in found if f.severity == "high"]
    return high.fix


def test_vfio_lines_in_modprobe_d_are_edited_not_emptying_the_fix() -> None:
    fix = _release("options vfio-pci ids=10de:2330  # passthrough\n")
    assert fix.builder == "vfio_release"  # type: ignore[attr-defined]
    assert fix.params["modprobe"] == [["/etc/modprobe.d/vfio.conf", "options vfio-pci ids=10de:2330"]]  # type: ignore[attr-defined]
    sed = next(c for c in fix.texts("persistent") if c.startswith("sed"))  # type: ignore[attr-defined]
    assert "[[:space:]]*" in sed and "/etc/modprobe.d/vfio.conf" in sed  # matches the line with its comment


def test_a_vfio_line_the_script_cannot_edit_goes_to_the_notes() -> None:
    fix = _release("softdep\tnvidia pre: vfio-pci\noptions vfio-pci ids=10de:2330\n")
    assert fix.builder == "vfio_release" and any("vfio-pci/unbind" in c for c in fix.runtime)  # type: ignore[attr-defined]
    assert "Comment out by hand in /etc/modprobe.d/vfio.conf" in fix.notes  # type: ignore[attr-defined]
    assert fix.params["modprobe"] == [["/etc/modprobe.d/vfio.conf", "options vfio-pci ids=10de:2330"]]  # type: ignore[attr-defined]
