"""gpu.inventory: which GPUs the doctor found, and whether the driver's view of them was available."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.findings import INFO, UNKNOWN, Evidence, Finding
from doctor.i18n import N_, Nn_, join
from doctor.registry import check


@check("gpu.inventory", "GPUs found and the driver's view of them", "gpu", acts="hardware", needs=("gpus",))
def gpu_inventory(facts: Facts) -> Iterator[Finding]:
    """Say what was found: no GPU, GPUs with or without NVML/nvidia-smi data, and a virtual machine."""
    pci = facts.pci
    inv = facts.gpus
    host = facts.host
    if host.is_vm:
        yield Finding(INFO, "node", N_('virtual machine: PCIe topology, link and NUMA facts are virtual'),
                      detail=N_("Link speeds, ACS and NUMA placement seen from inside a guest are the hypervisor's; check them on the host."),
                      evidence=(Evidence("virtualisation", host.vm_reason or "detected"),), confidence=0.9)
    if pci.origin is None and not inv.gpus:
        yield Finding(UNKNOWN, "node", N_('no PCI device information in this source'),
                      detail=pci.missing or "", evidence=(Evidence("pci.devices", pci.missing or "missing"),))
        return
    if not inv.gpus:
        yield Finding(INFO, "node", N_('no NVIDIA GPU found'),
                      detail=N_('{n_devices} PCI devices examined (from {origin}); none is an NVIDIA display or 3D controller. GPU checks did not apply.', n_devices=len(pci.devices), origin=pci.origin),
                      evidence=(Evidence("sys/bus/pci/devices" if pci.origin == "sysfs" else str(pci.lspci_where),
                                         f"{len(pci.devices)} devices, 0 GPUs"),))
        return
    counts: dict[str, int] = {}
    for g in inv.gpus:
        if g.name:
            key = g.name
        elif g.pci is not None and g.pci.driver:
            key = N_('NVIDIA 10de:{v} on {driver} (no driver view)', v=format(g.pci.device or 0, "04x"), driver=g.pci.driver)
        else:
            key = N_('model unknown')
        counts[key] = counts.get(key, 0) + 1
    models = [f"{n}x {k}" if len(counts) > 1 else k for k, n in sorted(counts.items())]
    yield Finding(INFO, "node", Nn_('{n} GPU: {models}', '{n} GPUs: {models}', len(inv.gpus), models=join(', ', models)),
                  detail=N_('driver {v}, CUDA {v2}; runtime data from {v3}', v=inv.driver_version or 'unknown', v2=inv.cuda_version or 'unknown', v3=inv.runtime_origin or 'nowhere'),
                  evidence=tuple(Evidence(g.pci.origin if g.pci else str(inv.runtime_origin),
                                          f"{g.address} {g.name or ''} activity={g.activity}".strip())
                                 for g in inv.gpus))
    if inv.runtime_missing:
        yield Finding(UNKNOWN, "node", N_('GPU runtime state unavailable (performance state, utilisation, processes)'),
                      detail=N_('{runtime_missing}. Idle GPUs cannot be told from busy ones, so PCIe speed drops on GPUs are reported as unknown.', runtime_missing=inv.runtime_missing),
                      evidence=(Evidence("nvidia_smi_xml", inv.runtime_missing),))
