"""VFIO pass-through and IOMMU group membership."""

from __future__ import annotations

from doctor.facts import Facts, PciDevice
from doctor.i18n import N_

VFIO_DRIVERS = frozenset({"vfio-pci", "vfio_pci"})
VFIO_MODULES = frozenset({"vfio_pci", "vfio_pci_core"})


def uses_vfio(facts: Facts) -> tuple[bool, str]:
    """Whether this host passes devices through with VFIO, and why we think so."""
    bound = [d.address for d in facts.pci.devices.values() if d.driver in VFIO_DRIVERS]
    if bound:
        return True, N_('{n_bound} device(s) bound to vfio-pci ({bound})', n_bound=len(bound), bound=', '.join(bound[:3]))
    unmanaged = [g.name for g in facts.iommu.groups.values() if g.type == "unmanaged"]
    if unmanaged:
        return True, N_('IOMMU group(s) {unmanaged} of type unmanaged (owned by VFIO)', unmanaged=', '.join(unmanaged[:3]))
    modules = facts.modules or frozenset()
    if modules & VFIO_MODULES:
        return True, N_('the vfio_pci module is loaded')
    return False, N_('no device on vfio-pci and no vfio_pci module')


def group_members(facts: Facts, group: str) -> list[PciDevice]:
    """Devices of an IOMMU group: from /sys/kernel/iommu_groups, else the devices' iommu_group links."""
    info = facts.iommu.groups.get(group)
    addresses = set(info.devices) if info else set()
    addresses |= {d.address for d in facts.pci.devices.values() if d.iommu_group == group}
    return [d for a in sorted(addresses) if (d := facts.pci.get(a)) is not None]
