"""IOMMU groups with their domain type and members, and whether an IOMMU is active at all.

``/sys/kernel/iommu_groups/<N>/type`` is ``identity`` (passthrough), ``DMA`` or ``DMA-FQ``
(translated) or ``unmanaged`` (owned by VFIO); ``/sys/class/iommu/*`` exists only while an IOMMU
is active. Also the modprobe configuration lines that bind devices to vfio-pci at boot.
"""

from __future__ import annotations

from doctor import specs
from doctor.facts.util import BDF
from doctor.record import record
from doctor.sources import Source

TRANSLATED = frozenset({"DMA", "DMA-FQ"})
GROUPS = "sys/kernel/iommu_groups"


@record
class IommuGroup:
    name: str
    type: str | None  # None: the type file is missing (kernels before 5.11 have none)
    devices: tuple[str, ...]
    origin: str

    @property
    def translated(self) -> bool:
        return self.type in TRANSLATED


@record
class IommuInfo:
    groups: dict[str, IommuGroup]
    active: bool | None  # None: cannot tell (no sys/class in this source)
    units: tuple[str, ...]  # entries of sys/class/iommu (dmar0, ivhd0, ...)
    missing: str | None = None

    def group_of(self, address: str) -> IommuGroup | None:
        return next((g for g in self.groups.values() if address in g.devices), None)


@record
class ModprobeLine:
    path: str
    line: str


def build_iommu(src: Source) -> IommuInfo:
    groups: dict[str, IommuGroup] = {}
    for name in src.listdir(GROUPS):
        if not name.isdigit():
            continue
        base = f"{GROUPS}/{name}"
        members = tuple(sorted(d for d in src.listdir(f"{base}/devices") if BDF.match(d)))
        groups[name] = IommuGroup(name, src.read_line(f"{base}/type"), members, base)
    units = tuple(sorted(src.listdir("sys/class/iommu")))
    if units:
        active: bool | None = True
    elif groups:
        active = True
    elif src.is_dir("sys/class") or src.is_dir(GROUPS):
        active = False
    else:
        active = None
    missing = None if (groups or units) else "no sys/kernel/iommu_groups and no sys/class/iommu entries"
    return IommuInfo(groups, active, units, missing)


def build_modprobe(src: Source) -> tuple[ModprobeLine, ...]:
    """Non-comment lines of ``/etc/modprobe.d/*.conf`` that mention vfio or nvidia."""
    out: list[ModprobeLine] = []
    for path in src.spec_paths(specs.get("modprobe.files")):
        for raw in (src.read_text(path, cap=1 << 20) or "").splitlines():
            line = raw.split("#", 1)[0].strip()
            if line and ("vfio" in line or "nvidia" in line or "nouveau" in line):
                out.append(ModprobeLine(path, line))
    return tuple(out)
