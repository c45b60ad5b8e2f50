"""numa.unknown_locality: GPUs or NICs whose NUMA node the firmware did not report (-1) on a multi-node host."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts, PciDevice
from doctor.findings import INFO, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
)


def _devices(facts: Facts) -> list[PciDevice]:
    """GPUs, physical NICs and RDMA HCAs (no VFs)."""
    out = {d.address: d for d in facts.pci.gpus + facts.pci.nics}
    out.update({g.pci.address: g.pci for g in facts.gpus.gpus if g.pci is not None})
    for port in facts.rdma:
        dev = facts.pci.get(port.pci_address)
        if dev is not None and not dev.is_vf:
            out[dev.address] = dev
    return [out[a] for a in sorted(out)]


def _label(d: PciDevice) -> str:
    kind = "GPU" if d.is_gpu or (d.base_class or 0) >> 8 == 0x03 else "NIC"
    return f"{kind} {d.address}" + (f" ({d.driver})" if d.driver else "")


@check("numa.unknown_locality", "GPU/NIC NUMA locality reported by firmware", "numa", acts="hardware", needs=("pci", "numa", "rdma"))
def unknown_locality(facts: Facts) -> Iterator[Finding]:
    """``numa_node`` -1 on a GPU or NIC of a host with more than one NUMA node that has CPUs: medium (affinity
    cannot be verified). On one CPU node -1 is normal; CPU-less memory nodes (GPU HBM) are not sockets.
    """
    devices = _devices(facts)
    if not devices:
        return
    numa = facts.numa
    if not numa.nodes:
        yield Finding(UNKNOWN, "node", N_('NUMA topology not recorded: GPU/NIC locality cannot be judged'),
                      detail=N_('{v} (sosreports and trimmed recordings often lack it).', v=numa.missing or 'no NUMA nodes'),
                      evidence=(Evidence("sys/devices/system/node", numa.missing or "missing"),))
        return
    cpu_nodes = numa.cpu_nodes
    minus_one = [d for d in devices if d.numa_node is not None and d.numa_node < 0]
    missing = [d for d in devices if d.numa_node is None]
    if not numa.multi_node:
        if minus_one:
            yield Finding(PASS, "node", N_('numa_node -1 on {n_minus_one} device(s) is normal with one CPU node', n_minus_one=len(minus_one)),
                          evidence=tuple(Evidence(d.attr("numa_node"), "-1") for d in minus_one[:8]))
        return
    nodes = join(', ', (f"node{n.id} (CPUs {n.cpulist})" for n in cpu_nodes))
    if minus_one:
        vm = facts.host.is_vm is True
        yield Finding(
            INFO if vm else MEDIUM, "node",
            N_('NUMA locality unknown for {n_minus_one} of {n_devices} GPUs/NICs: affinity unverifiable', n_minus_one=len(minus_one), n_devices=len(devices)),
            detail=(N_('The firmware (ACPI _PXM) gives no NUMA node for {v}{v2} on a host with {n_cpu_nodes} NUMA nodes with CPUs ({nodes}). Processes and IRQs cannot be placed next to these devices, and NCCL cannot tell which socket they hang off.', v=join(', ', (_label(d) for d in minus_one[:6])), v2=', ...' if len(minus_one) > 6 else '', n_cpu_nodes=len(cpu_nodes), nodes=nodes) + (N_(" This is a virtual machine: NUMA facts are the hypervisor's.")
                                                     if vm else "")),
            evidence=tuple(Evidence(d.attr("numa_node"), "-1") for d in minus_one[:8]),
            expected=N_('numa_node >= 0 on every GPU and NIC'), observed=N_('-1 on {n_minus_one} device(s)', n_minus_one=len(minus_one)),
            impact=Impact(10, N_('placement of processes, memory and IRQs next to the devices is guesswork'), basis=N_('sysfs numa_node is -1: the firmware does not say which socket each device is on')),
            fix=Fix(notes=N_("Enable the BIOS/firmware option that exports PCI proximity (ACPI SRAT/_PXM, often 'NUMA' or 'Sub-NUMA'/'NPS' settings) and update the BIOS; until then, pin by the socket the slot is wired to (see the board manual) or use `nvidia-smi topo -m`.")),
            references=REFERENCES, related=tuple(d.address for d in minus_one), confidence=0.5 if vm else 1.0)
    if missing:
        yield Finding(UNKNOWN, "node", N_('numa_node not recorded for {n_missing} GPU/NIC(s)', n_missing=len(missing)),
                      detail=N_('The recording has no numa_node attribute for ')
                             + join(', ', (_label(d) for d in missing[:6])) + ".",
                      evidence=tuple(Evidence(d.attr("numa_node"), "missing") for d in missing[:8]),
                      related=tuple(d.address for d in missing))
    if not minus_one and not missing:
        yield Finding(PASS, "node", N_('every GPU/NIC reports its NUMA node ({n_cpu_nodes} CPU nodes)', n_cpu_nodes=len(cpu_nodes)),
                      evidence=tuple(Evidence(d.attr("numa_node"), str(d.numa_node)) for d in devices[:8]))
