"""Names back to numbers: the pci.ids database read in reverse, for ``lspci -vvv`` pasted without ``-nn``.

lspci prints class, vendor and device names from pci.ids; the doctor maps them back through the pci.ids
of the machine it runs on (``$GND_PCI_IDS``, then the usual hwdata/pciutils paths). Without one, only
the class names the PCI specification defines for the devices the checks look at, and the vendor
names of NVIDIA, Intel, AMD and Mellanox, are known; device ids then stay unknown, never guessed.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from doctor.lazyre import lazy
from doctor.record import record

PATHS = ("/usr/share/hwdata/pci.ids", "/usr/share/misc/pci.ids", "/usr/share/pci.ids",
         "/usr/local/share/pci.ids", "/usr/share/pciutils/pci.ids")
MAX_BYTES = 8 * 1024 * 1024
#: Class names of the PCI Code and ID Assignment specification (what lspci prints without pci.ids entries
#: differing); used only when no pci.ids is installed.
SPEC_CLASSES = {"VGA compatible controller": 0x0300, "3D controller": 0x0302, "Display controller": 0x0380,
                "PCI bridge": 0x0604, "Host bridge": 0x0600, "ISA bridge": 0x0601,
                "Ethernet controller": 0x0200, "Network controller": 0x0280, "Infiniband controller": 0x0207,
                "Non-Volatile memory controller": 0x0108, "Bridge": 0x0680}
SPEC_VENDORS = {"NVIDIA Corporation": 0x10DE, "Intel Corporation": 0x8086,
                "Advanced Micro Devices, Inc. [AMD]": 0x1022, "Mellanox Technologies": 0x15B3}
_UNKNOWN_DEVICE = lazy(r"\bDevice ([0-9a-fA-F]{4})$")
_NUMERIC_CLASS = lazy(r"Class ([0-9a-fA-F]{4})")
_NUMERIC_IDS = lazy(r"Device ([0-9a-fA-F]{4}):([0-9a-fA-F]{4})")
_LINE = lazy(r"^(\t{0,2})([0-9a-fA-F]{2,4})(?: ([0-9a-fA-F]{4}))?\s\s?(.+)$")


@record
class PciIds:
    """Reverse maps of one pci.ids file (or the built-in minimum)."""

    vendors: dict[str, int]
    devices: dict[tuple[int, str], int]
    classes: dict[str, int]  # subclass (or class) name -> 16-bit class code
    origin: str  # the file, or "built-in class and vendor names"

    def resolve(self, class_name: str, description: str) -> tuple[int | None, int | None, int | None]:
        """(class code << 8 style 16-bit, vendor id, device id) from the names lspci printed; None where unknown."""
        numeric = _NUMERIC_CLASS.fullmatch(class_name.strip())
        cls = int(numeric.group(1), 16) if numeric else self.classes.get(class_name.strip())
        both = _NUMERIC_IDS.fullmatch(description.strip())
        if both:  # lspci without any pci.ids prints "Class 0300: Device 10de:2204"
            return cls, int(both.group(1), 16), int(both.group(2), 16)
        vendor_name = max((v for v in self.vendors if description.startswith(v + " ") or description == v),
                          key=len, default=None)
        if vendor_name is None:
            return cls, None, None
        vendor = self.vendors[vendor_name]
        rest = description[len(vendor_name):].strip()
        device = self.devices.get((vendor, rest))
        if device is None:
            match = _UNKNOWN_DEVICE.search(rest)
            device = int(match.group(1), 16) if match else None
        return cls, vendor, device


def parse_pci_ids(text: str, origin: str) -> PciIds:
    """Reverse maps from pci.ids text (vendor/device lines and the ``C`` class section)."""
    vendors: dict[str, int] = {}
    devices: dict[tuple[int, str], int] = {}
    classes: dict[str, int] = {}
    vendor: int | None = None
    klass: int | None = None
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("C "):
            parts = line[2:].split(None, 1)
            klass = int(parts[0], 16) if parts and re.fullmatch(r"[0-9a-fA-F]{2}", parts[0]) else None
            if klass is not None and len(parts) == 2:
                classes.setdefault(parts[1].strip(), klass << 8)
            vendor = None
            continue
        match = _LINE.match(line)
        if match is None:
            continue
        depth, ident, _, name = len(match.group(1)), match.group(2), match.group(3), match.group(4).strip()
        if klass is not None and line[0] != "\t":
            klass = None
        if klass is not None:
            if depth == 1 and len(ident) == 2:
                classes.setdefault(name, (klass << 8) | int(ident, 16))
            continue
        if depth == 0 and len(ident) == 4:
            vendor = int(ident, 16)
            vendors.setdefault(name, vendor)
        elif depth == 1 and len(ident) == 4 and vendor is not None:
            devices.setdefault((vendor, name), int(ident, 16))
    return PciIds(vendors, devices, classes, origin)


def _builtin() -> PciIds:
    return PciIds(dict(SPEC_VENDORS), {}, dict(SPEC_CLASSES), "built-in class and vendor names")


@lru_cache(maxsize=4)
def _load(path: str | None) -> PciIds:
    if path is None:
        return _builtin()
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return _builtin()
    if len(data) > MAX_BYTES:
        return _builtin()
    ids = parse_pci_ids(data.decode("utf-8", "replace"), path)
    if not ids.vendors or not ids.classes:
        return _builtin()
    return ids


def pci_ids() -> PciIds:
    """The pci.ids of this machine (``$GND_PCI_IDS`` first), read once; the built-in minimum without one."""
    env = os.environ.get("GND_PCI_IDS")
    candidates = ([env] if env else []) + list(PATHS)
    path = next((p for p in candidates if os.path.isfile(p)), None)
    return _load(path)
