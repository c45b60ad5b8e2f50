"""vfio.binding: GPUs on vfio-pci on an inference host, non-viable VFIO groups, pending driver_override flips."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.iommu import VFIO_DRIVERS, group_members, inference_host
from doctor.derived.iommu import hypervisor as find_hypervisor
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, PciDevice
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.fixes.base import absolute
from doctor.fixes.boot import os_family
from doctor.fixes.builders import editable_modprobe
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/driver-api/vfio.html",
    "https://docs.kernel.org/PCI/sysfs-pci.html",
)
#: Drivers a VFIO group may hold besides vfio-pci (kernel ``vfio_dev_driver_allowed``), or no driver.
VIABLE_DRIVERS = frozenset({"vfio-pci", "vfio_pci", "pci-stub", "pcieport"})


def _boot_binding(facts: Facts, dev: PciDevice) -> tuple[list[Evidence], list[str], list[list[str]]]:
    """Evidence of boot-time vfio binding: (evidence, boot parameters to drop, [modprobe.d file, line])."""
    ids = f"{dev.vendor or 0:04x}:{dev.device or 0:04x}"
    ev: list[Evidence] = []
    remove: list[str] = []
    lines: list[list[str]] = []
    boot = facts.cmdline.params.get("vfio-pci.ids") or facts.cmdline.params.get("vfio_pci.ids")
    if boot and ids in boot.lower():
        key = "vfio-pci.ids" if "vfio-pci.ids" in facts.cmdline.params else "vfio_pci.ids"
        ev.append(Evidence(facts.cmdline.origin, f"{key}={boot}"))
        remove.append(f"{key}={boot}")
    for line in facts.modprobe:
        if "vfio" in line.line and (ids in line.line.lower() or "softdep" in line.line):
            ev.append(Evidence(line.path, line.line))
            lines.append([absolute(line.path), line.line])
    return ev, remove, lines


@check("vfio.binding", "GPUs bound to vfio-pci, VFIO group viability, driver_override", "iommu", acts="os",
       fixes=("vfio_release", "vfio_group", "driver_override_clear"), needs=("pci",),
       reads=reads(params=("vfio-pci.ids", "vfio_pci.ids")))
def vfio_binding(facts: Facts) -> Iterator[Finding]:
    """A GPU on vfio-pci on a host that runs inference (nvidia loaded, GPU processes): high, CUDA
    cannot see it. A vfio GPU kept for passthrough whose IOMMU group has members on host drivers: the
    group is not viable (medium; never said of a GPU this check sends back to nvidia). ``driver_override`` naming another driver than the bound one: low (flips on rebind).
    """
    if facts.host.is_vm:
        return
    gpus = sorted(facts.pci.gpus, key=lambda d: d.address)
    if not gpus:
        return
    inference, why = inference_host(facts)
    hypervisor = find_hypervisor(facts)
    on_vfio = [g for g in gpus if g.driver in VFIO_DRIVERS]
    found = 0
    for gpu in on_vfio:
        label = gpu_label(facts, gpu.address)
        boot_ev, remove, lines = _boot_binding(facts, gpu)
        evidence = (Evidence(gpu.attr("driver"), gpu.driver or ""), *boot_ev)
        back_to_nvidia = inference and hypervisor is None
        if back_to_nvidia:
            found += 1
            yield Finding(
                HIGH, label, N_('GPU is bound to vfio-pci: CUDA and nvidia-smi cannot see it'),
                detail=N_('This host runs inference ({why}), but {address} is held by vfio-pci', why=why, address=gpu.address)
                       + (N_(' because of boot-time configuration.') if boot_ev else "."),
                evidence=evidence, expected=N_('driver nvidia'), observed=N_('driver {driver}', driver=gpu.driver),
                impact=Impact(70, N_('one GPU fewer for serving; tensor-parallel groups that expect it fail to start'), basis=N_('a GPU bound to vfio-pci is invisible to the NVIDIA driver and to CUDA on the host')),
                fix=make("vfio_release", address=gpu.address, boot_remove=remove,
                         modprobe=[x for x in lines if editable_modprobe(x[0], x[1])],
                         os_family=os_family(facts.host.os_release),
                         notes=N_('Stop VMs using the GPU first. Persistent: drop the vfio-pci ids from the boot line and modprobe.d and rebuild the initramfs (run the line for your distribution).')
                              + "".join(f" Comment out by hand in {x[0]}: {x[1]!r} (not a line the script edits)."
                                        for x in lines if not editable_modprobe(x[0], x[1]))),
                references=REFERENCES, related=(gpu.address,))
        elif hypervisor is not None:
            yield Finding(INFO, label, N_('GPU bound to vfio-pci for passthrough'),
                          detail=N_('A hypervisor runs here ({hypervisor}), so the binding looks deliberate.', hypervisor=hypervisor),
                          evidence=evidence, references=REFERENCES)
        if gpu.iommu_group and not back_to_nvidia:
            # Viability only matters for a GPU that stays on vfio-pci; asking to move its group mates
            # (serving GPUs, RDMA NICs) onto vfio-pci while telling the GPU to go back would contradict.
            members = group_members(facts, gpu.iommu_group)
            blockers = [m for m in members if m.address != gpu.address and m.driver is not None
                        and m.driver not in VIABLE_DRIVERS and not (m.is_bridge and m.driver == "pcieport")]
            if blockers:
                found += 1
                yield Finding(
                    MEDIUM, label, N_('VFIO group {iommu_group} is not viable: {v}', iommu_group=gpu.iommu_group, v=join(', ', (f'{b.address} on {b.driver}' for b in blockers))),
                    detail=N_('Every device in an IOMMU group must be on vfio-pci, pci-stub or no driver (bridges on pcieport are fine) before the group can be given to a VM; starting the VM fails.'),
                    evidence=tuple(Evidence(b.attr("driver"), b.driver or "") for b in blockers),
                    expected=N_('group members on vfio-pci, pci-stub, pcieport (bridges) or unbound'),
                    observed=join(', ', (f"{b.address}: {b.driver}" for b in blockers)),
                    impact=Impact(10, N_('the VM that should get this GPU fails to start'), basis=N_('VFIO needs every device of the IOMMU group bound to vfio-pci (or to no driver) before the group can be assigned')),
                    fix=make("vfio_group", devices={b.address: b.driver or "" for b in blockers},
                             notes=N_("Or pass the whole group (for example the GPU's .1 audio function) to the VM.")),
                    references=REFERENCES, related=tuple(b.address for b in blockers))
    for gpu in gpus:
        override = gpu.driver_override
        if override and gpu.driver and override != gpu.driver:
            found += 1
            yield Finding(
                LOW, gpu_label(facts, gpu.address),
                N_('driver_override is {override} while bound to {driver}: flips on the next rebind', override=repr(override), driver=gpu.driver),
                detail=N_('The override takes effect the next time the device is unbound or the driver reloads (driver update, GPU reset, nvidia module reload).'),
                evidence=(Evidence(gpu.attr("driver_override"), override), Evidence(gpu.attr("driver"), gpu.driver)),
                expected="(null)", observed=override,
                impact=Impact(20, N_('the GPU disappears from CUDA after the next driver reload'), basis=N_('driver_override makes the next probe bind that driver instead of nvidia')),
                fix=make("driver_override_clear", address=gpu.address, previous=override),
                references=REFERENCES, related=(gpu.address,))
    if not found:
        yield Finding(PASS, "node", N_('no GPU wrongly on vfio-pci ({n_on_vfio} on vfio-pci)', n_on_vfio=len(on_vfio)),
                      evidence=tuple(Evidence(g.attr("driver"), g.driver or "none") for g in gpus[:2]))
