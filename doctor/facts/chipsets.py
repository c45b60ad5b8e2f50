"""Which PCI bridges belong to a chipset (Intel PCH/ICH, AMD Promontory/X570): slots that hang off the DMI or
chipset uplink rather than the CPU's own lanes.

Decided per bridge from its vendor and device id (tables below, from Intel's PCH datasheets and the
pci.ids database) or, when the recording has no numeric ids, from the name lspci printed. Older Intel
northbridges (MCH such as "4 Series Chipset", I/O hubs such as "5520/X58 I/O Hub") carry the CPU-side
graphics lanes even though their names say "Chipset": they are never chipset slots. No decision depends
on an LPC bridge being listed.
"""

from __future__ import annotations

import re

from doctor.facts.pci import PciDevice
from doctor.lazyre import lazy

INTEL = 0x8086
AMD = 0x1022

#: Intel PCH/ICH PCIe root port device ids: (first, last, family).
INTEL_PCH_ROOT_PORTS: tuple[tuple[int, int, str], ...] = (
    (0x283F, 0x2849, "ICH8"), (0x2940, 0x294F, "ICH9"), (0x3A40, 0x3A4F, "ICH10"), (0x3A70, 0x3A7F, "ICH10"),
    (0x3B42, 0x3B51, "5 Series/3400 (Ibex Peak)"),
    (0x1C10, 0x1C1F, "6 Series/C200 (Cougar Point)"), (0x1D10, 0x1D1F, "C600/X79 (Patsburg)"),
    (0x1E10, 0x1E1F, "7 Series/C210 (Panther Point)"),
    (0x8C10, 0x8C1F, "8 Series/C220 (Lynx Point)"), (0x9C10, 0x9C1F, "8 Series (Lynx Point-LP)"),
    (0x8C90, 0x8C9F, "9 Series (Wildcat Point)"), (0x9C90, 0x9C9F, "Wildcat Point-LP"),
    (0x8D10, 0x8D1F, "C610/X99 (Wellsburg)"),
    (0xA110, 0xA11F, "100 Series/C230 (Sunrise Point-H)"), (0xA167, 0xA16A, "100 Series/C230 (Sunrise Point-H)"),
    (0x9D10, 0x9D1F, "Sunrise Point-LP"),
    (0xA290, 0xA29F, "200 Series (Union Point)"), (0xA2E7, 0xA2EE, "200 Series (Union Point)"),
    (0xA190, 0xA19F, "C620 (Lewisburg)"), (0xA1E7, 0xA1EE, "C620 (Lewisburg)"),
    (0xA330, 0xA33F, "300 Series (Cannon Lake PCH-H)"), (0xA340, 0xA343, "300 Series (Cannon Lake PCH-H)"),
    (0x9DB0, 0x9DBF, "Cannon Point-LP"),
    (0x06B0, 0x06C0, "400 Series (Comet Lake PCH-H)"), (0x02B0, 0x02BF, "Comet Lake PCH-LP"),
    (0xA3E9, 0xA3F0, "400 Series (Comet Lake PCH-V)"),
    (0x43B0, 0x43C7, "500 Series (Tiger Lake PCH-H)"), (0xA0B0, 0xA0BF, "Tiger Lake PCH-LP"),
    (0x4DB0, 0x4DBF, "Jasper Lake PCH"), (0x1BB0, 0x1BBF, "C740 (Emmitsburg)"),
    (0x7AB0, 0x7ABF, "600 Series (Alder Lake PCH-S)"), (0x7AC8, 0x7ACF, "600 Series (Alder Lake PCH-S)"),
    (0x51B0, 0x51BF, "Alder Lake PCH-P"), (0x54B0, 0x54BF, "Alder Lake PCH-N"),
    (0x7A30, 0x7A4F, "700 Series (Raptor Lake PCH-S)"), (0x7F30, 0x7F4F, "800 Series (Arrow Lake PCH-S)"),
    (0x7EC0, 0x7ECF, "Meteor Lake PCH"), (0x7730, 0x773F, "Arrow Lake PCH"), (0xA870, 0xA87F, "Lunar Lake PCH"),
)

#: AMD chipset bridges (not CPU ports): Promontory 300/400/500/600 series and the X570 (Matisse I/O die) chipset.
AMD_CHIPSET_BRIDGES: dict[int, str] = {
    0x43B4: "300 Series Chipset (Promontory)", 0x43C6: "400 Series Chipset (Promontory)",
    0x43C7: "400 Series Chipset (Promontory)", 0x43E9: "500 Series Chipset (Promontory)",
    0x43EA: "500 Series Chipset (Promontory)", 0x43EB: "500 Series Chipset (Promontory)",
    0x43F4: "600/800 Series Chipset (Promontory 21)", 0x43F5: "600/800 Series Chipset (Promontory 21)",
    0x57AD: "X570 chipset", 0x57A3: "X570 chipset", 0x57A4: "X570 chipset",
}

_INTEL_PCH_NAME = lazy(
    r"\b(?:ICH\d+|Ibex Peak|Cougar Point|Panther Point|Lynx Point|Wildcat Point|Sunrise Point|Union Point|"
    r"Lewisburg|Emmitsburg|Cannon (?:Lake PCH|Point)|Comet Lake PCH|Tiger Lake-(?:LP|H)|Alder Lake(?:-[SPN])? PCH|"
    r"Raptor Lake(?:-S)? PCH|Raptor Lake PCI Express Root Port|Jasper Lake|PCH|"
    r"(?:[5-9]|100|200|300|400|500|600|700|800) Series(?:/C\d+ Series)? Chipset(?: Family)?|"
    r"C6[01]0/X[79]9 series chipset|C620 Series Chipset|Q170/Q150/B150/H170/H110/Z170|82801\w*)",
    re.IGNORECASE)
#: Northbridge (MCH/IOH) root ports: CPU-side lanes despite "Chipset" in the name.
_INTEL_NORTHBRIDGE_NAME = lazy(
    r"\b(?:[34] Series Chipset PCI Express Root Port|I/O Hub|Express (?:Host-Primary )?PCI Express (?:Root Port|Bridge)|"
    r"Processor|Xeon|Core i7|PCIe Controller|Host Bridge)", re.IGNORECASE)
_AMD_CHIPSET_NAME = lazy(
    r"\b(?:[3-8]00 Series Chipset (?:PCIe|Switch)|Matisse Switch Upstream|^Matisse PCIe GPP Bridge|Promontory)",
    re.IGNORECASE)


def _vendor(dev: PciDevice, name: str) -> int | None:
    if dev.vendor is not None:
        return dev.vendor
    if name.startswith("Intel Corporation"):
        return INTEL
    if name.startswith(("Advanced Micro Devices", "AMD")):
        return AMD
    return None


def _label(dev: PciDevice) -> str:
    ids = f"{dev.vendor:04x}:{dev.device:04x}" if dev.vendor is not None and dev.device is not None else "no ids"
    return f"{dev.address} [{ids}]{' ' + dev.name if dev.name else ''}"


def intel_pch_port(dev: PciDevice) -> str | None:
    """Evidence text when ``dev`` is an Intel PCH/ICH PCIe root port, else None."""
    name = dev.name or ""
    if _vendor(dev, name) != INTEL:
        return None
    if dev.device is not None:
        family = next((f for lo, hi, f in INTEL_PCH_ROOT_PORTS if lo <= dev.device <= hi), None)
        if family is not None:
            return f"{_label(dev)}: Intel {family} PCH root port (by device id)"
        if not name:
            return None
    bare = name.removeprefix("Intel Corporation").strip()
    if bare and not _INTEL_NORTHBRIDGE_NAME.search(bare) and _INTEL_PCH_NAME.search(bare) \
            and re.search(r"PCI Express (?:Root )?Port|PCIe Root Port", bare, re.IGNORECASE):
        return f"{_label(dev)}: Intel PCH root port (by the name lspci printed)"
    return None


def amd_chipset_bridge(dev: PciDevice) -> str | None:
    """Evidence text when ``dev`` is an AMD chipset (Promontory, X570) bridge, else None."""
    name = dev.name or ""
    if _vendor(dev, name) != AMD:
        return None
    if dev.device is not None:
        family = AMD_CHIPSET_BRIDGES.get(dev.device)
        if family is None and dev.device >> 8 == 0x43 and dev.is_bridge:
            family = "chipset (Promontory family)"
        if family is not None:
            return f"{_label(dev)}: AMD {family} bridge (by device id)"
        if not name:
            return None
    bare = name.removeprefix("Advanced Micro Devices, Inc. [AMD]").strip()
    if bare and _AMD_CHIPSET_NAME.search(bare):
        return f"{_label(dev)}: AMD chipset bridge (by the name lspci printed)"
    return None


#: Intel NICs built into a chipset (C620 "Lewisburg" X722): their PCIe "link" is a stub inside the PCH that
#: reads 2.5 GT/s x1 whatever the traffic; the chipset's uplink above them is the real link.
INTEL_CHIPSET_NICS: tuple[tuple[int, int, str], ...] = ((0x37CC, 0x37D3, "Ethernet Connection X722 (C620 chipset)"),)
_INTEL_CHIPSET_NIC_NAME = lazy(r"\bEthernet Connection X722\b", re.IGNORECASE)


def chipset_integrated_nic(dev: PciDevice) -> str | None:
    """Evidence text when ``dev`` is a NIC integrated in an Intel chipset (its own link is nominal), else None."""
    name = dev.name or ""
    if _vendor(dev, name) != INTEL:
        return None
    if dev.device is not None:
        family = next((f for lo, hi, f in INTEL_CHIPSET_NICS if lo <= dev.device <= hi), None)
        return f"{_label(dev)}: Intel {family}" if family else None
    return f"{_label(dev)}: Intel X722 integrated in the chipset (by name)" if _INTEL_CHIPSET_NIC_NAME.search(name) \
        else None
