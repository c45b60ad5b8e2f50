"""pcie.bifurcation: x16 cards behind x8/x4 ports; NIC/NVMe carriers and VMs are traps."""

from __future__ import annotations

from tests.checks.pcie_overlays import DSP_GPU3, GPU3, attrs, dev_dir, node
from tests.helpers import Link, findings_of

CHECK = "pcie.bifurcation"


def _sibling(bdf: str, width: int) -> dict:
    """A new downstream port ``bdf`` next to the GPU 3 port, on the same bus and device number."""
    folder = dev_dir(DSP_GPU3).rsplit("/", 1)[0] + "/" + bdf
    out: dict = {f"sys/bus/pci/devices/{bdf}": Link("../../../" + folder.removeprefix("sys/"))}
    for name, value in (("vendor", "0x1000"), ("device", "0xc030"), ("class", "0x060400"),
                        ("max_link_width", str(width)), ("max_link_speed", "32.0 GT/s PCIe")):
        out[f"{folder}/{name}"] = value + "\n"
    return out


def test_healthy_has_no_finding_above_pass() -> None:
    assert {f.severity for f in findings_of(node(), CHECK)} == {"pass"}


def test_electrically_x8_switch_port_under_x16_gpu_is_medium() -> None:
    """A port wired x8 (no sibling splitting the lanes) is the board's design: medium, move the card."""
    found = findings_of(node(attrs(DSP_GPU3, max_link_width="8")), CHECK)
    hit = [f for f in found if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["medium"]
    assert "electrically x8" in hit[0].title and DSP_GPU3 in hit[0].related
    assert "switch" in hit[0].fix.notes and not hit[0].fix.runtime


def test_split_port_with_sibling_names_bifurcation() -> None:
    changes = {**attrs(DSP_GPU3, max_link_width="8"), **_sibling("0000:39:02.1", 8)}
    hit = [f for f in findings_of(node(changes), CHECK) if GPU3 in f.subject]
    assert [f.severity for f in hit] == ["high"]
    assert "bifurcated" in hit[0].title and "0000:39:02.1" in hit[0].related


def test_x8_nic_in_x8_root_port_is_not_flagged() -> None:
    # the X710 management NIC (x8 card) sits in an x8 root port: intentional, no finding
    assert not [f for f in findings_of(node(), CHECK) if "27:00.0" in f.subject]


def test_virtual_machine_is_silent() -> None:
    changes = {**attrs(DSP_GPU3, max_link_width="8"), "proc/cpuinfo": "flags\t\t: fpu hypervisor\n"}
    assert findings_of(node(changes), CHECK) == []


def test_soldered_gpu_on_a_narrow_port_is_not_a_bifurcated_slot() -> None:
    """A laptop (portable chassis) wires its GPU to an x8 APU port: no slot to fix, so no bifurcation finding."""
    narrow = attrs(DSP_GPU3, max_link_width="8")
    laptop = findings_of(node({**narrow, "sys/class/dmi/id/chassis_type": "10\n"}), CHECK)
    assert not [f for f in laptop if GPU3 in f.subject]
    assert [f.severity for f in findings_of(node({**narrow, "sys/class/dmi/id/chassis_type": "23\n"}), CHECK)
            if GPU3 in f.subject] == ["medium"]
