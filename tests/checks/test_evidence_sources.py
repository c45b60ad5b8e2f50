"""Issue 12: checks work from whichever source is present (one lspci file, one nvidia-smi file) and read
chipset slots, firmware-capped links, power limits and application clocks the way the platforms define them."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.facts import pci_ids as pci_ids_module
from doctor.facts.chipsets import amd_chipset_bridge, intel_pch_port
from doctor.facts.pci import ROOT_PORT, PciDevice
from doctor.facts.pci_ids import parse_pci_ids
from doctor.parsers.lspci import parse_lspci
from doctor.parsers.nvidia_smi import parse_nvidia_smi_text
from tests.helpers import facts, findings_of

DATA = Path(__file__).resolve().parent.parent / "data"
SPT_LP = (DATA / "lspci_sunrise_point_lp_no_ids.txt").read_text()
ALARMS = {"low", "medium", "high"}


@pytest.fixture(autouse=True)
def _no_host_pci_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see the built-in names only, unless one installs a pci.ids on purpose."""
    monkeypatch.setattr(pci_ids_module, "PATHS", ())
    monkeypatch.delenv("GND_PCI_IDS", raising=False)


def _lspci(text: str, name: str = "commands/lspci_-nnvvv") -> dict[str, str]:
    return {name: text}


# --- lspci without numeric ids ------------------------------------------------------------------------


def test_lspci_without_numeric_ids_finds_the_gpu() -> None:
    f = facts(_lspci(SPT_LP, "commands/lspci_-vvv"), base=None)
    assert [g.address for g in f.pci.gpus] == ["0000:01:00.0"]
    gpu = f.pci.get("0000:01:00.0")
    assert gpu is not None and gpu.vendor == 0x10DE and gpu.base_class == 0x0302 and gpu.device is None
    assert [g.address for g in f.gpus.gpus] == ["0000:01:00.0"]


def test_pci_ids_maps_device_names_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = tmp_path / "pci.ids"
    ids.write_text("# excerpt\n10de  NVIDIA Corporation\n\t1d10  GP108M [GeForce MX150]\n\t\t17aa 2256  x\n"
                   "8086  Intel Corporation\n\t9d10  Sunrise Point-LP PCI Express Root Port #1\n"
                   "C 03  Display controller\n\t00  VGA compatible controller\n\t02  3D controller\n"
                   "C 06  Bridge\n\t04  PCI bridge\n\t\t00  Normal decode\n")
    monkeypatch.setenv("GND_PCI_IDS", str(ids))
    pci_ids_module._load.cache_clear()
    f = facts(_lspci(SPT_LP, "commands/lspci_-vvv"), base=None)
    gpu, root = f.pci.get("0000:01:00.0"), f.pci.get("0000:00:1c.0")
    assert gpu is not None and (gpu.vendor, gpu.device, gpu.class_code) == (0x10DE, 0x1D10, 0x030200)
    assert root is not None and (root.vendor, root.device) == (0x8086, 0x9D10)
    pci_ids_module._load.cache_clear()


def test_pci_ids_parser_ignores_subsystems_and_prog_if() -> None:
    ids = parse_pci_ids("10de  NVIDIA Corporation\n\t2204  GA102 [GeForce RTX 3090]\n\t\t10de 1454  Founders\n"
                        "C 02  Network controller\n\t07  Infiniband controller\n\t\t00  x\n", "test")
    assert ids.resolve("Infiniband controller", "NVIDIA Corporation Device 1021") == (0x0207, 0x10DE, 0x1021)
    assert ids.resolve("VGA compatible controller", "NVIDIA Corporation GA102 [GeForce RTX 3090]") == \
        (None, 0x10DE, 0x2204)
    assert ids.resolve("Class 0302", "Device 10de:2330") == (0x0302, 0x10DE, 0x2330)
    assert ids.resolve("PCI bridge", "Unknown Vendor Thing") == (None, None, None)


def test_collect_records_lspci_with_numeric_ids() -> None:
    from doctor import specs
    assert specs.get("lspci_vvv").argv == ("lspci", "-nnvvv")
    assert "commands/lspci_-vvv" in specs.get("lspci_vvv").sos_paths  # older snapshots still read


# --- chipset slots --------------------------------------------------------------------------------------


def test_gpu_below_sunrise_point_lp_is_chipset_attached_without_lpc_and_without_ids() -> None:
    found = findings_of(facts(_lspci(SPT_LP), base=None), "pcie.chipset_slot")
    hit = [f for f in found if "0000:01:00.0" in f.subject and f.severity == "high"]
    assert hit and "0000:00:1c.0" in hit[0].related
    assert "name lspci printed" in hit[0].evidence[0].value


def _bridge(name: str, vendor: int | None = None, device: int | None = None) -> PciDevice:
    return PciDevice("0000:00:01.0", vendor, device, 0x060400, origin="lspci", name=name, port_type=ROOT_PORT)


@pytest.mark.parametrize("name", [
    "Intel Corporation 4 Series Chipset PCI Express Root Port",
    "Intel Corporation 5520/5500/X58 I/O Hub PCI Express Root Port 3",
    "Intel Corporation 82G33/G31/P35/P31 Express PCI Express Root Port",
    "Intel Corporation Xeon E3-1200 v5/E3-1500 v5/6th Gen Core Processor PCIe Controller (x16)",
    "Intel Corporation Sky Lake-E PCI Express Root Port A",
])
def test_northbridge_and_cpu_root_ports_are_not_chipset(name: str) -> None:
    assert intel_pch_port(_bridge(name)) is None


@pytest.mark.parametrize(("name", "vendor", "device"), [
    ("Intel Corporation C620 Series Chipset Family PCI Express Root Port #1", None, None),
    ("Intel Corporation C610/X99 series chipset PCI Express Root Port #1", None, None),
    ("Intel Corporation 100 Series/C230 Series Chipset Family PCI Express Root Port #5", None, None),
    ("Intel Corporation Alder Lake-S PCH PCI Express Root Port #9", None, None),
    ("", 0x8086, 0x1BB8),  # C740 Emmitsburg, ids only (sysfs)
    ("", 0x8086, 0x7A48),  # Raptor Lake-S PCH
])
def test_intel_pch_root_ports(name: str, vendor: int | None, device: int | None) -> None:
    assert intel_pch_port(_bridge(name, vendor, device)) is not None


def test_amd_chipset_by_id_and_by_name() -> None:
    assert amd_chipset_bridge(_bridge("", 0x1022, 0x43F5)) is not None  # X670/X870 (Promontory 21)
    assert amd_chipset_bridge(_bridge("Advanced Micro Devices, Inc. [AMD] Matisse Switch Upstream")) is not None
    assert amd_chipset_bridge(_bridge("Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge")) is None
    assert amd_chipset_bridge(_bridge("", 0x1022, 0x1483)) is None  # CPU GPP bridge


# --- firmware-capped links ------------------------------------------------------------------------------

_CAPPED = """00:01.0 PCI bridge [0604]: Intel Corporation 6th-10th Gen Core Processor PCIe Controller (x16) [8086:1901] (rev 07) (prog-if 00 [Normal decode])
	Bus: primary=00, secondary=01, subordinate=01, sec-latency=0
	Capabilities: [a0] Express (v2) Root Port (Slot+), MSI 00
		LnkCap:	Port #2, Speed 8GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <256ns, L1 <8us
		LnkSta:	Speed 2.5GT/s (downgraded), Width x16
		LnkCap2: Supported Link Speeds: 2.5-8GT/s, Crosslink- Retimer- 2Retimers- DRS-
		LnkCtl2: Target Link Speed: {target}, EnterCompliance- SpeedDis-
	Kernel driver in use: pcieport

01:00.0 VGA compatible controller [0300]: NVIDIA Corporation TU106 [GeForce RTX 2070] [10de:1f02] (rev a1) (prog-if 00 [VGA controller])
	Capabilities: [68] Express (v2) Legacy Endpoint, MSI 00
		LnkCap:	Port #0, Speed 8GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <512ns, L1 <4us
		LnkSta:	Speed 2.5GT/s (downgraded), Width x16
		LnkCap2: Supported Link Speeds: 2.5-8GT/s, Crosslink- Retimer- 2Retimers- DRS-
		LnkCtl2: Target Link Speed: 8GT/s, EnterCompliance- SpeedDis-
	Kernel driver in use: nvidia
"""


def test_lnkctl2_target_below_both_ends_is_a_firmware_cap() -> None:
    parsed = parse_lspci(_CAPPED.format(target="2.5GT/s"))
    assert parsed["0000:00:01.0"].link_target_speed == 2.5 and parsed["0000:00:01.0"].link_cap2_speed == 8.0
    found = findings_of(facts(_lspci(_CAPPED.format(target="2.5GT/s")), base=None), "pcie.link_downgrade")
    hit = [f for f in found if "0000:01:00.0" in f.subject]
    assert [f.severity for f in hit] == ["medium"]  # activity unknown: medium; busy would be high
    assert "firmware" in hit[0].title and "BIOS" in (hit[0].fix.notes if hit[0].fix else "")
    assert "0000:00:01.0" in hit[0].related


def test_target_at_maximum_is_no_cap() -> None:
    found = findings_of(facts(_lspci(_CAPPED.format(target="8GT/s")), base=None), "pcie.link_downgrade")
    assert not [f for f in found if "firmware" in f.title]


def test_root_port_below_its_twins_is_capped_not_slot_limited() -> None:
    """Field report: one root port advertises Gen1 while the same silicon elsewhere does Gen3."""
    twin = _CAPPED.format(target="8GT/s").replace("Speed 8GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <256ns",
                                                  "Speed 2.5GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <256ns")
    twin = twin.replace("LnkCap2: Supported Link Speeds: 2.5-8GT/s, Crosslink- Retimer- 2Retimers- DRS-\n"
                        "\t\tLnkCtl2: Target Link Speed: 8GT/s, EnterCompliance- SpeedDis-\n\tKernel driver in use: pcieport",
                        "\tKernel driver in use: pcieport")
    sibling = ("00:01.1 PCI bridge [0604]: Intel Corporation 6th-10th Gen Core Processor PCIe Controller (x16) "
               "[8086:1901] (rev 07) (prog-if 00 [Normal decode])\n\tBus: primary=00, secondary=02, subordinate=02, "
               "sec-latency=0\n\tCapabilities: [a0] Express (v2) Root Port (Slot+), MSI 00\n\t\tLnkCap:\tPort #3, "
               "Speed 8GT/s, Width x8, ASPM L0s L1\n\t\tLnkSta:\tSpeed 2.5GT/s, Width x0\n\n")
    lone = findings_of(facts(_lspci(twin), base=None), "pcie.link_downgrade")
    assert [f.severity for f in lone if "0000:01:00.0" in f.subject] == ["info"]  # slot-limited as far as known
    both = findings_of(facts(_lspci(sibling + twin), base=None), "pcie.link_downgrade")
    hit = [f for f in both if "0000:01:00.0" in f.subject]
    assert [f.severity for f in hit] == ["medium"] and "0000:00:01.1" in hit[0].detail


# --- nvidia-smi alone -----------------------------------------------------------------------------------

_SMI_Q = """==============NVSMI LOG==============

Driver Version                            : 535.154.05
Attached GPUs                             : 1
GPU 00000000:04:00.0
    Product Name                          : NVIDIA GeForce RTX 3090
    PCI
        GPU Link Info
            PCIe Generation
                Max                       : 4
                Current                   : 4
                Device Max                : 4
                Host Max                  : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
    Performance State                     : P2
    Utilization
        Gpu                               : 97 %
    GPU Power Readings
        Current Power Limit               : 350.00 W
        Requested Power Limit             : 350.00 W
        Default Power Limit               : 350.00 W
    Applications Clocks
        Graphics                          : 1200 MHz
        Memory                            : 9751 MHz
    Default Applications Clocks
        Graphics                          : 1695 MHz
        Memory                            : 9751 MHz
"""


def test_nvidia_smi_text_alone_reports_width_and_locked_clocks() -> None:
    gpu = parse_nvidia_smi_text(_SMI_Q).gpus[0]
    assert (gpu.power_limit_w, gpu.default_power_limit_w) == (350.0, 350.0)
    assert (gpu.app_clock_graphics_mhz, gpu.default_app_clock_graphics_mhz) == (1200.0, 1695.0)
    f = facts({"sos_commands/nvidia/nvidia-smi_-q": _SMI_Q}, base=None)
    link = [x for x in findings_of(f, "pcie.link_downgrade") if "0000:04:00.0" in x.subject]
    assert [x.severity for x in link] == ["high"] and "x8 of x16" in link[0].title
    assert link[0].evidence[0].source.startswith("sos_commands/nvidia/nvidia-smi_-q [0000:04:00.0]")
    clocks = [x for x in findings_of(f, "gpu.clock_throttle") if x.severity in ALARMS]
    assert [x.severity for x in clocks] == ["medium"] and "application clocks" in clocks[0].title
    assert clocks[0].acts == "os"  # clocks someone locked: the node's setting, not the board's slowdown
    assert "power limit" not in " ".join(x.title for x in clocks)  # 350 W = default: a trap


def test_power_limit_from_nvml() -> None:
    from doctor.facts.nvml import _watts
    assert _watts(200000) == 200.0 and _watts(None) is None and _watts(0) is None


_XML = """<?xml version="1.0" ?>
<nvidia_smi_log><driver_version>580.65.06</driver_version>
<gpu id="00000000:61:00.0"><product_name>NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition</product_name>
<pci><pci_gpu_link_info><pcie_gen><max_link_gen>4</max_link_gen><current_link_gen>{cur}</current_link_gen>
<device_current_link_gen>{cur}</device_current_link_gen><max_device_link_gen>5</max_device_link_gen>
<max_host_link_gen>4</max_host_link_gen></pcie_gen>
<link_widths><max_link_width>16x</max_link_width><current_link_width>16x</current_link_width></link_widths>
</pci_gpu_link_info></pci>
<performance_state>{pstate}</performance_state><utilization><gpu_util>{util} %</gpu_util></utilization>
</gpu></nvidia_smi_log>
"""


def test_gpu_held_to_its_hosts_generation_is_info() -> None:
    busy = facts({"commands/nvidia-smi_-q_-x": _XML.format(cur=4, pstate="P0", util=90)}, base=None)
    hit = [f for f in findings_of(busy, "pcie.link_downgrade") if "0000:61:00.0" in f.subject]
    assert [f.severity for f in hit] == ["info"] and "host caps the GPU at 16 GT/s (Gen4)" in hit[0].title
    slow = facts({"commands/nvidia-smi_-q_-x": _XML.format(cur=3, pstate="P0", util=90)}, base=None)
    hit = [f for f in findings_of(slow, "pcie.link_downgrade") if "0000:61:00.0" in f.subject]
    assert [f.severity for f in hit] == ["medium"] and "8 of 16 GT/s" in hit[0].title  # Gen3 of the host's Gen4


def test_user_lspci_plus_nvidia_smi_each_give_what_they_have() -> None:
    """lspci as a user (capabilities denied) names the tree and the PCH; nvidia-smi gives the GPU's link."""
    denied = "\n".join(line for line in SPT_LP.splitlines() if not line.startswith("\t\t"))
    denied = denied.replace("Capabilities: [40] Express (v2) Root Port (Slot+), MSI 00", "Capabilities: <access denied>")
    denied = denied.replace("Capabilities: [68] Express (v2) Legacy Endpoint, MSI 00", "Capabilities: <access denied>")
    smi = _XML.replace("00000000:61:00.0", "00000000:01:00.0").replace("<max_device_link_gen>5", "<max_device_link_gen>3")
    smi = smi.replace("<max_host_link_gen>4", "<max_host_link_gen>3").replace("<max_link_gen>4", "<max_link_gen>3")
    smi = smi.replace("<current_link_width>16x", "<current_link_width>2x").replace("<max_link_width>16x",
                                                                                  "<max_link_width>4x")
    f = facts({"commands/lspci_-vvv": denied, "commands/nvidia-smi_-q_-x": smi.format(cur=3, pstate="P0", util=80)},
              base=None)
    link = [x for x in findings_of(f, "pcie.link_downgrade") if "0000:01:00.0" in x.subject]
    assert [x.severity for x in link] == ["high"] and "x2 of x4" in link[0].title
    assert link[0].evidence[0].source.startswith("commands/nvidia-smi_-q_-x [0000:01:00.0]")
    chipset = [x for x in findings_of(f, "pcie.chipset_slot") if x.severity == "high"]
    assert chipset and "Sunrise Point-LP" in chipset[0].evidence[0].value


def test_absurd_driver_widths_are_not_evidence() -> None:
    smi = _XML.replace("<current_link_width>16x", "<current_link_width>-8x")
    f = facts({"commands/nvidia-smi_-q_-x": smi.format(cur=4, pstate="P0", util=90)}, base=None)
    gpu = f.gpus.by_address("0000:61:00.0")
    assert gpu is not None and gpu.pci is not None and gpu.pci.cur_width is None
    assert not [x for x in findings_of(f, "pcie.link_downgrade") if x.severity in ALARMS]
