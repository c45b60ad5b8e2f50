"""Boards whose GPU is soldered down (laptops, APU systems): their link width is the board's design."""

from __future__ import annotations

from doctor.facts import Facts
from doctor.i18n import N_
from doctor.lazyre import lazy

#: SMBIOS chassis types of portable machines (SMBIOS 3.x, 7.4.1): portable, laptop, notebook, hand held,
#: sub notebook, tablet, convertible, detachable.
PORTABLE_CHASSIS = frozenset({8, 9, 10, 11, 14, 30, 31, 32})
#: Product and chip names of mobile GPUs: "RTX 3060 Laptop GPU", "GeForce GTX 850M",
#: lspci's "GA106M [GeForce RTX 3060 Mobile / Max-Q]".
_MOBILE_NAME = lazy(r"\bLaptop\b|\bMobile\b|\b(?:GTX|MX|GT) ?\d{3,4}M\b|\bG[A-Z]{1,2}\d{3}[A-Z]?M\b")


def soldered_gpu(facts: Facts, address: str) -> str | None:
    """Why the GPU at ``address`` is taken to be soldered to its board (a mobile part, a portable chassis), or None."""
    gpu = facts.gpus.by_address(address)
    pci = facts.pci.get(address)
    for name in (gpu.name if gpu else None, pci.name if pci else None):
        if name and _MOBILE_NAME.search(name):
            return N_("{name} is a mobile GPU", name=repr(name))
    chassis = facts.host.chassis_type
    if chassis in PORTABLE_CHASSIS:
        return N_("sys/class/dmi/id/chassis_type is {chassis} (a portable machine)", chassis=chassis)
    return None
