"""Tests for doctor.parsers.lspci (synthetic samples modelled on real pciutils output)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from doctor.parsers.lspci import LspciDevice, normalize_pci_address, parse_lspci

# Exactly the module docstring sample.
DOC_SAMPLE = (
    "0000:17:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
    "\tSubsystem: NVIDIA Corporation Device [10de:16c1]\n"
    "\tPhysical Slot: 1\n"
    "\tNUMA node: 0\n"
    "\tIOMMU group: 12\n"
    "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
    "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
    "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)\n"
    "\tKernel driver in use: nvidia\n"
)

# H100 behind a Broadcom PEX890xx Gen5 switch (upstream + downstream port), a Gen5 CPU root
# port, plus a ConnectX-7 on another downstream port. Format of `lspci -nnvv` (no -D),
# pciutils >= 3.8 (no annotation when LnkSta matches LnkCap).
SWITCH_SAMPLE = """\
15:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a] (rev 04) (prog-if 00 [Normal decode])
\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+
\tBus: primary=15, secondary=16, subordinate=1a, sec-latency=0
\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00
\t\tDevCap:\tMaxPayload 512 bytes, PhantFunc 0
\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM not supported
\t\t\tClockPM- Surprise+ LLActRep+ BwNot+ ASPMOptComp+
\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
\t\tLnkCtl2: Target Link Speed: 32GT/s, EnterCompliance- SpeedDis-
\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+ EqualizationPhase1+
\tCapabilities: [220 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-
\tKernel driver in use: pcieport

16:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tPhysical Slot: 3
\tCapabilities: [68] Express (v2) Upstream Port, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\tNUMA node: 0
\tIOMMU group: 40

17:01.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tCapabilities: [68] Express (v2) Downstream Port (Slot-), MSI 00
\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16
\tCapabilities: [1c0 v1] Access Control Services
\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+
\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-
\tKernel driver in use: pcieport

18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tSubsystem: NVIDIA Corporation Device [10de:16c1]
\tPhysical Slot: 11
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16
\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-
\t\tLnkSta2: Current De-emphasis Level: -3.5dB, EqualizationComplete+
\tKernel driver in use: nvidia
\tKernel modules: nvidiafb, nouveau, nvidia_drm, nvidia
\tNUMA node: 0
\tIOMMU group: 43

19:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
\tSubsystem: Mellanox Technologies Device [15b3:0041]
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)
\tKernel driver in use: mlx5_core
\tNUMA node: 0
"""

# Intel PCH root port with a GPU behind it, pciutils 3.6/3.7 style annotations
# (janhq/jan#183), `lspci -vvv` without -nn.
PCH_SAMPLE = """\
00:1c.4 PCI bridge: Intel Corporation C620 Series Chipset Family PCI Express Root Port #5 (rev f9) (prog-if 00 [Normal decode])
\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00
\t\tLnkCap:\tPort #5, Speed 8GT/s, Width x4, ASPM not supported, Exit Latency L0s <1us, L1 <16us
\t\tLnkSta:\tSpeed 8GT/s (ok), Width x4 (ok)
\tKernel driver in use: pcieport

03:00.0 VGA compatible controller: NVIDIA Corporation GA102 [GeForce RTX 3090] (rev a1) (prog-if 00 [VGA controller])
\tCapabilities: [78] Express (v2) Legacy Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L0s L1, Exit Latency L0s <1us, L1 <4us
\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x4 (strange)
\tKernel driver in use: nvidia
"""


def test_doc_sample() -> None:
    devs = parse_lspci(DOC_SAMPLE)
    assert list(devs) == ["0000:17:00.0"]
    d = devs["0000:17:00.0"]
    assert d == LspciDevice(
        address="0000:17:00.0",
        class_name="3D controller",
        class_code=0x0302,
        vendor_id=0x10DE,
        device_id=0x2330,
        description="NVIDIA Corporation GH100 [H100 SXM5 80GB]",
        port_type="Endpoint",
        link_cap_speed=32.0,
        link_cap_width=16,
        link_sta_speed=2.5,
        link_sta_width=16,
        acs_ctl=None,
        driver="nvidia",
        numa_node=0,
        iommu_group="12",
        access_denied=False,
        physical_slot="1",
        express=True,
    )


#: Real record (nvidia-bug-report of an ASUS WS X299 SAGE, tests/realworld/cases/bugreport-x299-3xa6000-535):
#: the board's I219-LM at 00:1f.6 has Power Management, MSI and Advanced Features, no Express capability
I219_NO_EXPRESS = """\
0000:00:1f.6 Ethernet controller [0200]: Intel Corporation Ethernet Connection (2) I219-LM [8086:15b7]
\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-
\tCapabilities: [c8] Power Management version 3
\t\tStatus: D0 NoSoftRst+ PME-Enable- DSel=0 DScale=1 PME-
\tCapabilities: [d0] MSI: Enable+ Count=1/1 Maskable- 64bit+
\tCapabilities: [e0] PCI Advanced Features
\tKernel driver in use: e1000e
"""
RCIEP = """\
0000:00:14.3 Network controller [0280]: Intel Corporation Wi-Fi 6 AX201 [8086:06f0]
\tCapabilities: [c8] Power Management version 3
\tCapabilities: [d0] MSI: Enable- Count=1/1 Maskable- 64bit+
\tCapabilities: [40] Express (v2) Root Complex Integrated Endpoint, MSI 00
\tKernel driver in use: iwlwifi
"""
#: the same I219 as ``lspci -v -xxx`` dumps it (no capability lines; the list at 0xc8 -> 0xd0 -> 0xe0 -> end)
I219_DUMP = I219_NO_EXPRESS.split("\tStatus")[0] + """\
00: 86 80 b7 15 06 04 10 00 00 00 00 02 00 00 00 00
10: 00 00 f0 73 00 00 00 00 00 00 00 00 00 00 00 00
20: 00 00 00 00 00 00 00 00 00 00 00 00 43 10 86 86
30: 00 00 00 00 c8 00 00 00 00 00 00 00 03 03 00 00
40: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
50: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
60: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
70: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
80: 28 00 00 00 08 00 00 00 00 00 00 00 00 00 00 00
90: 00 00 00 00 1f 00 00 00 00 00 00 00 40 02 18 40
a0: 00 00 00 00 01 00 00 00 03 10 03 10 00 00 00 00
b0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
c0: 00 00 00 00 00 00 00 00 01 d0 23 c8 08 20 00 00
d0: 05 e0 81 00 78 03 e0 fe 00 00 00 00 00 00 00 00
e0: 13 00 06 03 00 00 00 00 00 00 00 00 00 00 00 00
f0: 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
"""


@pytest.mark.parametrize("text,express,port_type", [
    (I219_NO_EXPRESS, False, None),  # capability list shown, no Express in it
    (I219_DUMP, False, None),  # the list walked in the config dump to its end
    (RCIEP, True, "Root Complex Integrated Endpoint"),  # Express, but part of the root complex (no link)
    (I219_NO_EXPRESS.replace("\tCapabilities: [c8]", "\tCapabilities: <access denied>\n\tX: [c8]")
     .replace("\tCapabilities: [d0] MSI: Enable+ Count=1/1 Maskable- 64bit+\n\tCapabilities: [e0] PCI Advanced "
              "Features\n", ""), None, None),  # not shown (not root): not known, never "no link"
])
def test_express_capability_present_absent_or_not_shown(text: str, express: bool | None,
                                                        port_type: str | None) -> None:
    dev = next(iter(parse_lspci(text).values()))
    assert (dev.express, dev.port_type) == (express, port_type)


def test_switch_topology() -> None:
    devs = parse_lspci(SWITCH_SAMPLE)
    assert list(devs) == ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:18:00.0", "0000:19:00.0"]
    rp = devs["0000:15:01.0"]
    assert rp.port_type == "Root Port"
    assert rp.class_code == 0x0604 and rp.vendor_id == 0x8086 and rp.device_id == 0x352A
    assert rp.description == "Intel Corporation Device"
    assert (rp.link_cap_speed, rp.link_cap_width, rp.link_sta_speed, rp.link_sta_width) == (
        32.0,
        16,
        32.0,
        16,
    )
    assert rp.acs_ctl == {
        "SrcValid": True,
        "TransBlk": False,
        "ReqRedir": True,
        "CmpltRedir": True,
        "UpstreamFwd": True,
        "EgressCtrl": False,
        "DirectTrans": False,
    }
    up = devs["0000:16:00.0"]
    assert up.port_type == "Upstream Port"
    assert up.description == "Broadcom / LSI PEX890xx PCIe Gen 5 Switch"
    assert up.physical_slot == "3" and up.iommu_group == "40" and up.numa_node == 0
    assert up.acs_ctl is None and up.driver is None
    down = devs["0000:17:01.0"]
    assert down.port_type == "Downstream Port"
    assert down.link_sta_speed == 2.5
    assert down.acs_ctl is not None and not any(down.acs_ctl.values())
    gpu = devs["0000:18:00.0"]
    # LnkCap2/LnkSta2 must not override LnkCap/LnkSta.
    assert (gpu.link_cap_speed, gpu.link_cap_width, gpu.link_sta_speed, gpu.link_sta_width) == (
        32.0,
        16,
        2.5,
        16,
    )
    assert gpu.driver == "nvidia" and gpu.iommu_group == "43"
    nic = devs["0000:19:00.0"]
    assert nic.class_code == 0x0207 and (nic.vendor_id, nic.device_id) == (0x15B3, 0x1021)
    assert nic.description == "Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert (nic.link_sta_speed, nic.link_sta_width) == (16.0, 8)


def test_pch_old_pciutils_without_nn() -> None:
    devs = parse_lspci(PCH_SAMPLE)
    rp = devs["0000:00:1c.4"]
    assert rp.class_name == "PCI bridge" and rp.class_code is None and rp.vendor_id is None
    assert rp.description == "Intel Corporation C620 Series Chipset Family PCI Express Root Port #5"
    assert rp.port_type == "Root Port"
    assert (rp.link_cap_speed, rp.link_cap_width, rp.link_sta_speed, rp.link_sta_width) == (8.0, 4, 8.0, 4)
    gpu = devs["0000:03:00.0"]
    assert gpu.class_name == "VGA compatible controller"
    assert gpu.description == "NVIDIA Corporation GA102 [GeForce RTX 3090]"
    assert gpu.port_type == "Legacy Endpoint"
    assert (gpu.link_sta_speed, gpu.link_sta_width) == (2.5, 4)


def test_access_denied_non_root() -> None:
    text = (
        "0000:18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
        "\tSubsystem: NVIDIA Corporation Device [10de:16c1]\n"
        "\tCapabilities: <access denied>\n"
        "\tKernel driver in use: nvidia\n"
    )
    d = parse_lspci(text)["0000:18:00.0"]
    assert d.access_denied is True
    assert d.link_cap_speed is None and d.link_sta_speed is None and d.port_type is None
    assert d.driver == "nvidia"


@pytest.mark.parametrize(
    ("line", "speed", "width"),
    [
        ("\t\tLnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)", None, 0),
        ("\t\tLnkSta:\tSpeed 5GT/s (overdriven), Width x1", 5.0, 1),
        ("\t\tLnkSta:\tSpeed 64GT/s, Width x16", 64.0, 16),
        ("\t\tLnkSta:\tSpeed 2.5GT/s, Width x1, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-", 2.5, 1),
        ("\t\tLnkSta:\tSpeed 8GT/s (ok), Width x16 (ok)", 8.0, 16),
    ],
)
def test_lnksta_variants(line: str, speed: float | None, width: int | None) -> None:
    text = (
        "0000:01:00.0 Ethernet controller [0200]: Intel Corporation Device [8086:1593] (rev 02)\n"
        + line
        + "\n"
    )
    d = parse_lspci(text)["0000:01:00.0"]
    assert d.link_sta_speed == speed
    assert d.link_sta_width == width


def test_domains_and_noise() -> None:
    text = (
        "lspci: Unable to load libkmod resources: error -2\n"
        "10000:00:02.0 PCI bridge [0604]: Intel Corporation Sky Lake-E PCI Express Root Port A [8086:2030] (rev 04)"
        " (prog-if 00 [Normal decode])\n"
        "\tCapabilities: [40] Express (v2) Root Port (Slot-), IntMsgNum 0\n"
        "pcilib: sysfs_read_vpd: read failed: Input/output error\n"
        "0001:A0:00.0 Non-Volatile memory controller [0108]: Samsung Electronics Co Ltd NVMe SSD Controller"
        " PM9A1/PM9A3/980PRO [144d:a80a] (prog-if 02 [NVM Express])\n"
        "\tKernel driver in use: nvme\n"
    )
    devs = parse_lspci(text)
    assert list(devs) == ["10000:00:02.0", "0001:a0:00.0"]
    assert devs["10000:00:02.0"].port_type == "Root Port"
    nvme = devs["0001:a0:00.0"]
    assert nvme.class_code == 0x0108 and nvme.device_id == 0xA80A
    assert nvme.description == "Samsung Electronics Co Ltd NVMe SSD Controller PM9A1/PM9A3/980PRO"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("17:00.0", "0000:17:00.0"),
        ("00000000:17:00.0", "0000:17:00.0"),
        ("0000:AB:00.1", "0000:ab:00.1"),
        ("10000:00:04.0", "10000:00:04.0"),
        ("00010000:00:04.0", "10000:00:04.0"),
        ("GPU-1234", None),
        ("", None),
    ],
)
def test_normalize_pci_address(raw: str, expected: str | None) -> None:
    assert normalize_pci_address(raw) == expected


@pytest.mark.parametrize(
    "text",
    ["", "\x00\x01\x02binary\xff", "garbage line\n\tindented without header\n", "17:00.0\n", DOC_SAMPLE[:57]],
)
def test_garbage_never_raises(text: str) -> None:
    result = parse_lspci(text)
    assert isinstance(result, dict)


def test_truncated_keeps_partial() -> None:
    cut = SWITCH_SAMPLE[: SWITCH_SAMPLE.index("18:00.0") + 40]
    devs = parse_lspci(cut)
    assert "0000:18:00.0" in devs
    assert devs["0000:18:00.0"].link_sta_speed is None


@pytest.mark.skipif(shutil.which("lspci") is None, reason="lspci not installed")
@pytest.mark.parametrize("args", [["-vvv"], ["-nnvv"], ["-D", "-nn", "-vvv"]])
def test_real_lspci_device_count(args: list[str]) -> None:
    ids = subprocess.run(["lspci", "-n"], capture_output=True, text=True, timeout=30).stdout
    full = subprocess.run(["lspci", *args], capture_output=True, text=True, timeout=30).stdout
    devs = parse_lspci(full)
    assert len(devs) == len([line for line in ids.splitlines() if line.strip()])
    if "-nn" in args:
        assert all(d.vendor_id is not None and d.class_code is not None for d in devs.values())


def test_real_space_indented_lspci_vvv_of_a_gpu_server() -> None:
    """`sudo lspci -vvv -s ...` as published on a page that turned lspci's tabs into spaces (luigifcruz/stelline
    hardware/asus-esc8000a-e12.md, MIT; tests/realworld/cases/stelline-asus-esc8000a-e12): no numeric ids."""
    from pathlib import Path

    case = Path(__file__).resolve().parent.parent / "realworld" / "cases" / "stelline-asus-esc8000a-e12"
    parsed = parse_lspci((case / "commands" / "lspci_-vvv").read_text(encoding="utf-8"))
    assert len(parsed) == 8
    gpu, nic = parsed["0000:01:00.0"], parsed["0000:21:00.0"]
    assert (gpu.class_name, gpu.driver, gpu.numa_node, gpu.port_type) == (
        "VGA compatible controller", "nvidia", 0, "Legacy Endpoint")
    assert (gpu.link_cap_speed, gpu.link_cap_width, gpu.link_sta_speed, gpu.link_sta_width) == (16.0, 16, 2.5, 16)
    assert nic.description == "Mellanox Technologies MT2910 Family [ConnectX-7]" and nic.driver == "mlx5_core"
    assert (nic.link_sta_speed, nic.link_sta_width, nic.link_target_speed) == (32.0, 16, 32.0)
    assert nic.acs_ctl is not None and not any(nic.acs_ctl.values())


def _dump(cfg: bytes) -> str:
    return "\n".join(f"{off:02x}: " + " ".join(f"{b:02x}" for b in cfg[off:off + 16]) for off in range(0, len(cfg), 16))


def _config(lnkcap: int, lnksta: int, vector: int | None) -> bytes:
    cfg = bytearray(256)
    cfg[0:4] = bytes.fromhex("de109113")
    cfg[0x06] = 0x10  # capability list
    cfg[0x34] = 0x60
    cfg[0x60:0x62] = bytes([0x01, 0x78])  # power management, next 0x78
    cfg[0x78:0x7B] = bytes([0x10, 0x00, 0x02])  # PCI Express v2, endpoint
    cfg[0x84:0x88] = lnkcap.to_bytes(4, "little")
    cfg[0x8A:0x8C] = lnksta.to_bytes(2, "little")
    if vector is not None:
        cfg[0xA4] = vector
    return bytes(cfg)


def test_old_config_dump_gives_the_link_registers() -> None:
    """Old nvidia-bug-report logs (``lspci -d 10de:* -v -xxx``) print no LnkCap lines, only the hex dump."""
    text = ("01:00.0 3D controller: NVIDIA Corporation GM107M [GeForce GTX 850M] (rev a2)\n"
            "\tCapabilities: [78] Express Endpoint, MSI 00\n"
            + _dump(_config(0x00454D03, 0x1083, 0x0E)) + "\n\n"
            "02:00.0 Ethernet controller: Intel Corporation I211 Gigabit Network Connection (rev 03)\n")
    dev = parse_lspci(text)["0000:01:00.0"]
    assert (dev.link_cap_speed, dev.link_cap_width, dev.link_sta_speed, dev.link_sta_width) == (8.0, 16, 8.0, 8)
    assert dev.link_cap2_speed == 8.0 and "0000:02:00.0" in parse_lspci(text)


def test_text_lines_win_over_the_dump_and_a_broken_dump_is_ignored() -> None:
    text = ("01:00.0 VGA compatible controller: NVIDIA Corporation Device\n"
            "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\t\tLnkSta:\tSpeed 2.5GT/s, Width x16\n"
            + _dump(_config(0x00454D03, 0x1083, None)))
    dev = parse_lspci(text)["0000:01:00.0"]
    assert (dev.link_cap_speed, dev.link_sta_width) == (16.0, 16)
    gap = _dump(_config(0x00454D03, 0x1083, None)).replace("00: de", "10: de", 1)  # not from offset 0
    assert parse_lspci("01:00.0 3D controller: NVIDIA Corporation Device\n" + gap)["0000:01:00.0"].link_cap_speed is None


def test_tree_form_paths() -> None:
    """``lspci -t`` of two root buses (the real driver-352 report's X99 host), a bridge chain behind a Thunderbolt
    switch (the real ThinkPad report), and ``-tv`` names that look like addresses, which are not read."""
    from doctor.parsers.lspci import parse_lspci_tree

    text = ("-+-[0000:ff]-+-0b.0\n"
            " |           \\-1f.2\n"
            " \\-[0000:00]-+-00.0\n"
            "             +-03.0-[06]--+-00.0  NVIDIA Corporation GM200 [GeForce GTX TITAN X] rev 12.0 01.2\n"
            "             |            \\-00.1  NVIDIA Corporation GM200 High Definition Audio\n"
            "             +-1c.0-[04-51]----00.0-[05-51]--+-00.0-[07]----00.0\n"
            "             |                               \\-02.0-[2c]----00.0\n"
            "             \\-1f.0  Intel Corporation C610/X99 series chipset LPC Controller\n")
    paths = parse_lspci_tree(text)
    assert paths["0000:ff:1f.2"] == ("0000:ff:1f.2",)
    assert paths["0000:06:00.1"] == ("0000:00:03.0", "0000:06:00.1")
    assert paths["0000:2c:00.0"] == ("0000:00:1c.0", "0000:04:00.0", "0000:05:02.0", "0000:2c:00.0")
    assert paths["0000:07:00.0"] == ("0000:00:1c.0", "0000:04:00.0", "0000:05:00.0", "0000:07:00.0")
    assert paths["0000:00:1f.0"] == ("0000:00:1f.0",)
    assert "0000:06:12.0" not in paths and "0000:06:01.2" not in paths  # "rev 12.0 01.2" is a name
    assert parse_lspci_tree("garbage\n+-\n[zz]\n") == {}
