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


#: Process names that mark a virtualisation host (GPUs on vfio there are deliberate).
HYPERVISOR_PROCS = ("qemu-system", "qemu-kvm", "libvirtd", "virtqemud", "cloud-hypervisor", "firecracker")
NVIDIA_MODULE = "nvidia"


def inference_host(facts: Facts) -> tuple[bool, str]:
    """Whether the host runs inference itself (nvidia loaded, GPU processes, GPUs on nvidia), and why."""
    if NVIDIA_MODULE in (facts.modules or frozenset()):
        return True, N_("the nvidia module is loaded")
    if any(g.processes for g in facts.gpus.gpus):
        return True, N_("GPU processes are running")
    on_nvidia = [d.address for d in facts.pci.gpus if d.driver == NVIDIA_MODULE]
    if on_nvidia:
        return True, N_("other GPUs are on the nvidia driver ({gpus})", gpus=", ".join(on_nvidia[:2]))
    return False, N_("no nvidia module, GPU process or GPU on the nvidia driver")


def hypervisor(facts: Facts) -> str | None:
    """``pid N name`` of a hypervisor process, else None."""
    for proc in facts.processes:
        name = (proc.name or "").lower()
        if any(name.startswith(h) for h in HYPERVISOR_PROCS):
            return f"pid {proc.pid} {proc.name}"
    return None


def vfio_kept(facts: Facts) -> bool:
    """Whether GPUs on vfio-pci stay there (a passthrough host) rather than go back to nvidia: a
    hypervisor runs, or the host does not run inference (vfio.binding sends them back otherwise)."""
    return hypervisor(facts) is not None or not inference_host(facts)[0]
