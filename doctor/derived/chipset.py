"""Chipset slots (Intel PCH, AMD Promontory) and GPUs whose host traffic runs over NVLink-C2C."""

from __future__ import annotations

from doctor.facts import Facts, PciDevice

INTEL = 0x8086
AMD = 0x1022
#: Intel PCH root ports live on bus 0 at these device numbers (D27, D28, D29).
PCH_ROOT_DEVICES = frozenset({0x1B, 0x1C, 0x1D})
#: LPC/eSPI (ISA) bridge class, present at 00:1f.0 on every Intel PCH.
LPC_CLASS = 0x0601
#: AMD client chipset bridges: Promontory (0x43xx) and X570 upstream/downstream ports.
AMD_CHIPSET_DEVICES = frozenset({0x57AD, 0x57A3, 0x57A4})
#: GPUs whose host traffic runs over NVLink-C2C, not PCIe: GH200 (0x2342, 0x2348), GB200 (0x2941).
C2C_GPU_DEVICES = frozenset({0x2342, 0x2348, 0x2941})
C2C_NAMES = ("GH200", "GB200", "GB300")


def intel_pch(facts: Facts, dev: PciDevice) -> tuple[PciDevice, PciDevice] | None:
    """(PCH root port, LPC bridge) when the device hangs off an Intel PCH root port."""
    root = facts.pci.root_port(dev.address)
    if root is None or root.vendor != INTEL:
        return None
    domain, bus, slot = root.address.split(":")[0], root.address.split(":")[1], root.address.split(":")[2][:2]
    if bus != "00" or int(slot, 16) not in PCH_ROOT_DEVICES:
        return None
    lpc = facts.pci.get(f"{domain}:00:1f.0")
    if lpc is None or lpc.vendor != INTEL or lpc.base_class != LPC_CLASS:
        return None
    return root, lpc


def amd_chipset(facts: Facts, dev: PciDevice) -> list[PciDevice]:
    """AMD client-chipset bridges (Promontory, X570) above the device."""
    return [b for b in facts.pci.upstream(dev.address) if b.vendor == AMD and b.device is not None
            and (b.device >> 8 == 0x43 or b.device in AMD_CHIPSET_DEVICES)]


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
