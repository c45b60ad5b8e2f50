"""Chipset slots (Intel PCH, AMD Promontory) and GPUs whose host traffic runs over NVLink-C2C."""

from __future__ import annotations

from doctor.facts import Facts, PciDevice
from doctor.facts.chipsets import amd_chipset_bridge, intel_pch_port
from doctor.i18n import N_

INTEL = 0x8086
AMD = 0x1022
#: Intel PCH root ports live on bus 0 at these device numbers (D27, D28, D29).
PCH_ROOT_DEVICES = frozenset({0x1B, 0x1C, 0x1D})
#: LPC/eSPI (ISA) bridge class, present at 00:1f.0 on every Intel PCH.
LPC_CLASS = 0x0601
#: GPUs whose host traffic runs over NVLink-C2C, not PCIe: GH200 (0x2342, 0x2348), GB200 (0x2941).
C2C_GPU_DEVICES = frozenset({0x2342, 0x2348, 0x2941})
C2C_NAMES = ("GH200", "GB200", "GB300")


def intel_pch(facts: Facts, dev: PciDevice) -> tuple[PciDevice, str] | None:
    """(PCH root port, the evidence that decided) when the device hangs off an Intel PCH/ICH root port.

    Decided by :func:`doctor.facts.chipsets.intel_pch_port` (device id or lspci name); when neither is
    known, a root port at 00:1b-1d.x with an Intel ISA/LPC bridge at 00:1f.0 still counts."""
    root = facts.pci.root_port(dev.address)
    if root is None:
        return None
    why = intel_pch_port(root)
    if why is not None:
        return root, why
    if root.vendor != INTEL or (root.device is not None and root.name):
        return None
    domain, bus, slot = root.address.split(":")[0], root.address.split(":")[1], root.address.split(":")[2][:2]
    if bus != "00" or int(slot, 16) not in PCH_ROOT_DEVICES:
        return None
    lpc = facts.pci.get(f"{domain}:00:1f.0")
    if lpc is None or lpc.vendor != INTEL or lpc.base_class != LPC_CLASS:
        return None
    return root, N_('{address}: Intel root port at a PCH position with the ISA/LPC bridge at {address2}', address=root.address, address2=lpc.address)


def amd_chipset(facts: Facts, dev: PciDevice) -> list[tuple[PciDevice, str]]:
    """AMD client-chipset bridges (Promontory, X570) above the device, each with its evidence."""
    found = [(b, amd_chipset_bridge(b)) for b in facts.pci.upstream(dev.address)]
    return [(b, why) for b, why in found if why is not None]


def behind_chipset(facts: Facts, dev: PciDevice) -> bool:
    return intel_pch(facts, dev) is not None or bool(amd_chipset(facts, dev))


def c2c_gpu(facts: Facts, address: str) -> bool:
    """A Grace-coupled GPU (GH200/GB200): host memory traffic uses NVLink-C2C, its PCIe link is secondary."""
    dev = facts.pci.get(address)
    if dev is not None and dev.vendor == 0x10DE and dev.device in C2C_GPU_DEVICES:
        return True
    gpu = facts.gpus.by_address(address)
    name = (gpu.name if gpu is not None else None) or (dev.name if dev is not None else None) or ""
    return any(n in name for n in C2C_NAMES)
