"""iommu.group_sharing: a GPU's IOMMU group holding other devices (another GPU, an NVMe) than its own functions."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.iommu import VFIO_DRIVERS, group_members, uses_vfio, vfio_kept
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, PciDevice
from doctor.findings import INFO, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/driver-api/vfio.html",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs",
)
@check("iommu.group_sharing", "GPUs sharing an IOMMU group with other devices", "iommu", acts="hardware", needs=("pci",))
def iommu_group_sharing(facts: Facts) -> Iterator[Finding]:
    """A GPU whose IOMMU group also holds devices other than its own functions and bridges (another
    GPU, an NVMe, a NIC): the group can only be passed through whole. Medium on VFIO hosts, else info.
    """
    if facts.host.is_vm:
        return
    gpus = sorted(facts.pci.gpus, key=lambda d: d.address)
    grouped = [g for g in gpus if g.iommu_group]
    if not grouped:
        return
    vfio, why = uses_vfio(facts)
    kept = vfio_kept(facts)
    shared: list[tuple[str, list[PciDevice], list[PciDevice]]] = []
    for group in sorted({g.iommu_group for g in grouped if g.iommu_group}, key=lambda n: (len(n), n)):
        members = group_members(facts, group)
        in_group = [g for g in grouped if g.iommu_group == group]
        bases = {g.function_base for g in in_group}
        others = [m for m in members if not m.is_bridge and m.function_base not in bases]
        if others or len(in_group) > 1:
            shared.append((group, in_group, others))
    if not shared:
        yield Finding(PASS, "node", N_("each GPU's IOMMU group holds only its own functions and bridges"),
                      evidence=(Evidence(grouped[0].attr("iommu_group"), grouped[0].iommu_group or ""),))
        return
    evidence = tuple(Evidence(f"sys/kernel/iommu_groups/{g}/devices",
                              ", ".join(m.address for m in group_members(facts, g))) for g, _, _ in shared[:4])
    # only a group with a GPU that stays on vfio-pci is passed to a VM; vfio.binding sends the others back to nvidia
    passthrough = [x for x in shared if kept and any(g.driver in VFIO_DRIVERS for g in x[1])]
    if not vfio or not passthrough:
        total = sum(len(i) for _, i, _ in shared)
        if vfio:
            why = (N_("{why}, but no GPU in these groups is kept on vfio-pci for a VM", why=why) if kept else
                   N_("{why}, but this host serves on its GPUs, so vfio.binding gives vfio-bound GPUs back to nvidia",
                      why=why))
        yield Finding(
            INFO, "node", N_('{total} GPU(s) share {n_shared} IOMMU group(s) with other devices (matters only for VFIO passthrough)', total=total, n_shared=len(shared)),
            detail=join('; ', (N_("group {group}: {gpus}", group=g, gpus=join(', ', (gpu_label(facts, x.address)
                                                                                   for x in i)))
                             + (N_(" with {others}", others=', '.join(o.address for o in others)) if others else "")
                             for g, i, others in shared)) + N_('. This host does not use VFIO ({why}).', why=why),
            evidence=evidence, references=REFERENCES)
        return
    for group, in_group, others in passthrough:
        names = [gpu_label(facts, g.address) for g in in_group]
        foreign = [o.address for o in others] + [g.address for g in in_group[1:]]
        yield Finding(
            MEDIUM, N_('IOMMU group {group}', group=group),
            N_('IOMMU group {group} holds {names} and {n_foreign} other device(s): it can only be passed through whole', group=group, names=join(', ', names), n_foreign=len(foreign)),
            detail=N_('VFIO assigns whole groups; {foreign} must be given to the same VM or unbound from their host drivers. This host uses VFIO ({why}).', foreign=join(', ', foreign), why=why),
            evidence=(Evidence(f"sys/kernel/iommu_groups/{group}/devices",
                               ", ".join(m.address for m in group_members(facts, group))),),
            expected=N_("a group per GPU (its own functions and bridges only)"),
            observed=", ".join(m.address for m in group_members(facts, group)),
            impact=Impact(10, N_("VMs fail to start or must take extra devices"),
                          basis=N_("VFIO assigns whole IOMMU groups: every device of the group must go to the same VM")),
            fix=Fix(notes=N_("Groups follow ACS isolation in the hardware. Move the GPU to a slot or root port of its own, "
                          "or enable ACS on the ports above this GPU only (BIOS): that isolation is what a VM needs, and "
                          "it is the same ACS redirect pcie.acs_redirect asks to turn off for GPUs that stay on the "
                          "host to serve, so keep the two sets of ports apart. The pcie_acs_override kernel patch is "
                          "unsafe and not upstream.")),
            references=REFERENCES, related=tuple(g.address for g in in_group) + tuple(foreign))
