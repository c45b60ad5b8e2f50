"""pcie.chipset_slot: GPUs behind an Intel PCH or AMD chipset bridge; switch hops and NCCL path words."""

from __future__ import annotations

from doctor.derived.paths import nearest_nic, path_word, switch_hops
from tests.checks.pcie_overlays import GPU0, GPU2, attrs, mini_device, node
from tests.helpers import facts, findings_of

CHECK = "pcie.chipset_slot"
NIC0, NIC4 = "0000:19:00.0", "0000:9b:00.0"


def _pch_tree(root: str = "0000:00:1c.0", device: str = "0xa110", lpc: bool = True) -> dict:
    gpu = f"pci0000:00/{root}/0000:02:00.0"
    out = {**mini_device(f"pci0000:00/{root}", vendor="0x8086", device=device, **{"class": "0x060400"},
                         max_link_width="4", max_link_speed="8.0 GT/s PCIe"),
           **mini_device(gpu, vendor="0x10de", device="0x2204", **{"class": "0x030000"}, max_link_width="16",
                         max_link_speed="16.0 GT/s PCIe", current_link_width="4", current_link_speed="8.0 GT/s PCIe"),
           "proc/cpuinfo": "flags\t\t: fpu sse\n"}
    if lpc:
        out.update(mini_device("pci0000:00/0000:00:1f.0", vendor="0x8086", device="0xa2c8", **{"class": "0x060100"}))
    return out


def test_gpu_behind_intel_pch_root_port_is_high() -> None:
    found = findings_of(facts(_pch_tree(), base=None), CHECK)
    hit = [f for f in found if "0000:02:00.0" in f.subject and f.severity != "info"]
    assert [f.severity for f in hit] == ["high"]
    assert "PCH" in hit[0].title and "0000:00:1c.0" in hit[0].related
    assert "Sunrise Point-H" in hit[0].evidence[0].value and "device id" in hit[0].evidence[0].value


def test_sunrise_point_lp_root_port_is_pch_without_lpc_bridge() -> None:
    """Issue 12: 8086:9d10 at 00:1c.0 is a PCH root port even when 00:1f.0 is not in the recording."""
    found = findings_of(facts(_pch_tree(device="0x9d10", lpc=False), base=None), CHECK)
    hit = [f for f in found if "0000:02:00.0" in f.subject and f.severity == "high"]
    assert hit and "Sunrise Point-LP" in hit[0].evidence[0].value


def test_cpu_root_port_on_bus_0_is_not_pch() -> None:
    found = findings_of(facts(_pch_tree("0000:00:01.0", device="0x1901"), base=None), CHECK)
    assert "high" not in {f.severity for f in found}


def test_unknown_intel_port_at_pch_position_needs_the_lpc_bridge() -> None:
    """A root port id not in the tables (a future PCH) still counts at 00:1c-1d with an LPC bridge, not without."""
    with_lpc = findings_of(facts(_pch_tree(device="0xffe0"), base=None), CHECK)
    without = findings_of(facts(_pch_tree(device="0xffe0", lpc=False), base=None), CHECK)
    assert "high" in {f.severity for f in with_lpc} and "high" not in {f.severity for f in without}


def test_amd_chipset_bridge_in_path_is_high() -> None:
    found = findings_of(node(attrs("0000:16:00.0", vendor="0x1022", device="0x43f4")), CHECK)
    hit = [f for f in found if GPU0 in f.subject]
    assert [f.severity for f in hit] == ["high"] and "AMD chipset" in hit[0].title


def test_healthy_reports_hops_and_pix_as_info() -> None:
    found = findings_of(node(), CHECK)
    assert {f.severity for f in found} == {"info", "pass"}
    info = next(f for f in found if f.severity == "info")
    assert "each behind 1 PCIe switch" in info.title and "PIX" in info.title


def test_path_words_and_hops_on_the_fixture() -> None:
    f = node()
    assert path_word(f.pci, GPU0, NIC0) == "PIX"
    assert path_word(f.pci, GPU0, "0000:3b:00.0") == "NODE"  # other host bridge, same socket
    assert path_word(f.pci, GPU0, NIC4) == "SYS"
    assert switch_hops(f.pci, GPU0) == 1
    near = nearest_nic(f.pci, GPU2, f.pci.nics)
    assert near is not None and near[1] == "PIX" and near[0].address.startswith("0000:3b")


def test_unknown_numa_gives_no_word() -> None:
    f = node({**attrs(GPU0, numa_node="-1")})
    assert path_word(f.pci, GPU0, NIC4) is None
