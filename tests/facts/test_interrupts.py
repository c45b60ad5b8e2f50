"""GPU interrupt facts: msi_irqs mode files, the irq line, the driver's EnableMSI, lspci's MSI/MSI-X lines and
config-space dumps; hostile input is recorded as None, never raised."""

from __future__ import annotations

from doctor.parsers.lspci import parse_lspci
from tests.checks.pcie_overlays import GPU0, attrs
from tests.helpers import facts


def test_msix_vectors_and_line_from_sysfs() -> None:
    got = facts().gpu_irqs[GPU0]
    assert (got.vectors, got.mode, got.line) == ((180,), "msix", 16)
    assert got.mode_origin == "sys/bus/pci/devices/0000:18:00.0/msi_irqs/180"


def test_garbage_mode_and_line_are_none() -> None:
    got = facts(attrs(GPU0, **{"msi_irqs/180": "\x00junk", "irq": "-5"})).gpu_irqs[GPU0]
    assert (got.vectors, got.mode, got.line) == ((180,), None, None)
    assert facts(attrs(GPU0, irq="99999999999999")).gpu_irqs[GPU0].line is None


def test_enable_msi_param() -> None:
    assert facts().nvidia_params is None  # not recorded
    params = facts({"proc/driver/nvidia/params": "ResmanDebugLevel: 4294967295\nEnableMSI: 0\n"}).nvidia_params
    assert params is not None and params.enable_msi == 0
    assert facts({"proc/driver/nvidia/params": "EnableMSI: yes\n"}).nvidia_params.enable_msi is None  # type: ignore[union-attr]
    assert facts({"proc/driver/nvidia/params": ""}).nvidia_params.enable_msi is None  # type: ignore[union-attr]


def test_lspci_msi_lines() -> None:
    text = ("0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2330] (rev a1)\n"
            "\tInterrupt: pin A routed to IRQ 17\n"
            "\tCapabilities: [48] MSI: Enable- Count=1/16 Maskable+ 64bit+\n"
            "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
            "\tCapabilities: [b0] MSI-X: Enable+ Count=9 Masked-\n"
            "0000:01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GK107 [10de:0fc1] (rev a1)\n"
            "\tCapabilities: [68] Message Signalled Interrupts: 64bit+ Queue=0/0 Enable+\n"
            "\tInterrupt: pin A routed to IRQ junk\n"
            "0000:02:00.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2330] (rev a1)\n"
            "\tCapabilities: <access denied>\n")
    got = parse_lspci(text)
    h100, old, denied = got["0000:19:00.0"], got["0000:01:00.0"], got["0000:02:00.0"]
    assert (h100.msi_enabled, h100.msix_enabled, h100.irq_line) == (False, True, 17)
    assert (old.msi_enabled, old.msix_enabled, old.irq_line) == (True, None, None)
    assert (denied.msi_enabled, denied.msix_enabled) == (None, None)


def test_lspci_config_dump_msi_bits() -> None:
    """An old bug report's ``lspci -v -xxx``: capability list at 0x60 (MSI enabled) -> 0x78 (Express)."""
    cfg = bytearray(64 + 0x40)
    cfg[0x06] = 0x10  # capability list
    cfg[0x34] = 0x60
    cfg[0x60:0x64] = bytes((0x05, 0x78, 0x81, 0x00))  # MSI, next 0x78, Message Control: enable
    cfg[0x78:0x7C] = bytes((0x10, 0x00, 0x02, 0x00))  # Express, end of list
    dump = "".join(f"{off:02x}: " + " ".join(f"{b:02x}" for b in cfg[off:off + 16]) + "\n" for off in range(0, len(cfg), 16))
    text = "01:00.0 VGA compatible controller: NVIDIA Corporation Device 1c82 (rev a1)\n" + dump
    dev = parse_lspci(text)["0000:01:00.0"]
    assert (dev.msi_enabled, dev.msix_enabled) == (True, None)
