"""gpu.interrupts: GPUs on their legacy INTx line instead of MSI/MSI-X, and GPU vectors served off the GPU's node.

Rules, thresholds and traps: docs/checks.md#gpu-interrupts.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import gpu_absent
from doctor.derived.interrupts import (
    INTX,
    MESSAGE,
    MSI,
    MSIX,
    UNKNOWN,
    UNSET,
    GpuIrqState,
    gpu_irq_states,
    interrupts_recorded,
    msi_disabled_by,
    off_node,
)
from doctor.derived.procs import irqbalance_running
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.facts.util import format_cpulist
from doctor.findings import INFO, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.findings import UNKNOWN as UNKNOWN_SEVERITY
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/PCI/msi-howto.html",
    "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv.c",
    "https://github.com/NVIDIA/open-gpu-kernel-modules/blob/main/kernel-open/nvidia/nv-reg.h",
    "https://docs.kernel.org/core-api/irq/irq-affinity.html",
)
_MODE_WORDS = {MSIX: "MSI-X", MSI: "MSI", MESSAGE: "MSI/MSI-X"}
_FIX_INTX = N_("Let the driver use MSI: remove NVreg_EnableMSI=0 from the modprobe configuration (and pci=nomsi from the kernel command line), rebuild the initramfs if the nvidia module loads from it, then reload the driver or reboot. If nothing disables MSI, the driver could not enable it (its log says 'Failed to enable MSI; falling back to PCIe virtual-wire interrupts'): update the BIOS and check that no bridge above the GPU has msi_bus 0.")
_FIX_AFFINITY = N_("Usually nothing to do: GPU interrupts are rare while CUDA polls for completion. To keep them on the GPU's node anyway, write the node's CPU list to /proc/irq/N/smp_affinity_list for each vector (irqbalance moves them again unless these IRQs are banned: IRQBALANCE_ARGS=\"--banirq=N\"); the setting does not survive a reboot.")


def _ev(pairs: tuple[tuple[str, str], ...]) -> tuple[Evidence, ...]:
    return tuple(Evidence(a, b) for a, b in pairs)


def _intx(facts: Facts, st: GpuIrqState, causes: tuple[tuple[str, str], ...]) -> Finding:
    label = gpu_label(facts, st.address)
    row = st.vectors[0]
    cause = join("; ", (f"{a}: {b}" for a, b in causes)) if causes else N_("nothing in the recorded configuration disables MSI, so enabling it probably failed")
    shared = bool(st.shared_with)
    detail = N_('{label} takes its interrupts on the pin-based line IRQ {irq} ({chip}) instead of MSI or MSI-X. Cause: {cause}. ', label=label, irq=row.number, chip=row.chip or "?", cause=cause)
    if shared:
        detail += N_("The line is shared with {others}: the kernel calls every handler on it for each interrupt, and if the other device raises interrupts nobody handles, the kernel disables the whole line ('irq {irq}: nobody cared') and the GPU's interrupts are lost with it.", others=join(", ", st.shared_with), irq=row.number)
    else:
        detail += N_("The line is not shared now. A pin-based interrupt can arrive before the GPU's data writes, so the handler must read a GPU register first; MSIs are ordered behind the data and never shared.")
    return Finding(
        MEDIUM if shared else LOW, label,
        N_('GPU on its legacy INTx line (IRQ {irq}, shared with {others})', irq=row.number, others=join(", ", st.shared_with)) if shared
        else N_('GPU on its legacy INTx line (IRQ {irq}) instead of MSI', irq=row.number),
        detail=detail, evidence=_ev(st.evidence + causes),
        expected=N_('MSI-X or MSI enabled (NVreg_EnableMSI=1, the driver default)'), observed=f"INTx IRQ {row.number}",
        impact=Impact(8 if shared else 3, N_('every GPU interrupt (page faults, blocking synchronisation, errors) pays a register read and runs every handler sharing the line; a misbehaving neighbour can get the line disabled') if shared
                      else N_('every GPU interrupt pays a register read before it is handled; CUDA polls for completion by default, so throughput barely changes'),
                      basis=N_("the kernel's MSI HOWTO (pin-based interrupts are shared and may overtake the data; MSIs are neither); the NVIDIA driver takes MSI-X or MSI unless NVreg_EnableMSI=0 or enabling fails")),
        fix=Fix(notes=_FIX_INTX), references=REFERENCES, related=tuple(h for h in st.shared_with))


@check("gpu.interrupts", "GPU interrupts: MSI/MSI-X, not the legacy line; on the GPU's node", "gpu", acts="os",
       needs=("pci",), applies=gpu_absent, reads=reads(params=("pci",)))
def gpu_interrupts(facts: Facts) -> Iterator[Finding]:
    """Low when a GPU takes its interrupts on its legacy INTx line, medium when that line is shared with
    another device; low when a GPU's vectors are all served on another NUMA node. One MSI vector is the
    driver's choice on GPUs without MSI-X, not a fault.

    Only ``pci`` is declared: MSI or MSI-X enabled is read from sysfs or lspci alone. Without
    ``/proc/interrupts`` a GPU with MSI off is ``unknown`` (the INTx line and its sharing are there), and the
    pass says the affinity was not recorded.
    """
    states = gpu_irq_states(facts)
    if not states:
        return
    causes = msi_disabled_by(facts)
    good: list[GpuIrqState] = []
    for st in states:
        label = gpu_label(facts, st.address)
        if st.mode == INTX:
            yield _intx(facts, st, causes)
        elif st.mode == UNSET:
            if causes:
                yield Finding(
                    LOW, label, N_('MSI disabled for the NVIDIA driver: the GPU will take its legacy INTx line'),
                    detail=N_('{label} has no interrupt set up yet (the driver sets it up when the GPU is first opened); when it does, {cause} keeps it on the pin-based line.', label=label, cause=join("; ", (f"{a}: {b}" for a, b in causes))),
                    evidence=_ev(st.evidence + causes), expected=N_('NVreg_EnableMSI=1 (the driver default)'),
                    observed="EnableMSI 0", impact=Impact(3, N_('GPU interrupts on a pin-based line once the GPU is opened'), basis=N_('the NVIDIA driver enables MSI-X or MSI only while NVreg_EnableMSI is 1')),
                    fix=Fix(notes=_FIX_INTX), references=REFERENCES)
            else:
                yield Finding(
                    INFO, label, N_('no interrupt set up yet: the driver does it when the GPU is first opened'),
                    detail=N_('{label} has no MSI vector and no nvidia handler in /proc/interrupts: the NVIDIA driver sets interrupts up when a client first opens the GPU, or at once with persistence mode. Re-check while it is in use.', label=label),
                    evidence=_ev(st.evidence), confidence=0.8, references=REFERENCES)
        elif st.mode == UNKNOWN:
            yield Finding(
                UNKNOWN_SEVERITY, label, N_('interrupt mode not recorded'),
                detail=N_('Neither msi_irqs in sysfs, nor the MSI/MSI-X capability lines of lspci -vvv (root), nor an nvidia row in /proc/interrupts say how {label} takes its interrupts.', label=label),
                evidence=_ev(st.evidence) + (() if interrupts_recorded(facts) else (Evidence("proc/interrupts", "not recorded"),))
                or (Evidence("lspci -vvv", "no MSI or MSI-X capability line"),))
        else:
            good.append(st)
    yield from _affinity(facts, good)
    if good:
        modes = sorted({_MODE_WORDS[s.mode] for s in good})
        single = [s for s in good if s.mode == MSI]
        yield Finding(PASS, "node", N_('{n} GPU(s) signal with {modes}', n=len(good), modes=join(", ", modes))
                      + (N_(' (one MSI vector: the driver\'s choice on GPUs without MSI-X)') if single else "")
                      + ("" if interrupts_recorded(facts) else N_('; their CPU affinity is not recorded (no /proc/interrupts)')),
                      evidence=tuple(Evidence(a, b) for s in good[:4] for a, b in s.evidence[:1]))


def _affinity(facts: Facts, good: list[GpuIrqState]) -> Iterator[Finding]:
    """Low: every vector of a GPU served by CPUs of another node (one finding for all such GPUs)."""
    far = []
    for st in good:
        dev = facts.pci.get(st.address)
        off = off_node(facts, st, dev) if dev is not None else None
        if off and len(off) == len([i for i in st.vectors if i.effective or i.affinity]):
            far.append((st, dev, off))
    if not far:
        return
    balancer = irqbalance_running(facts)
    balancer_text = {True: N_('irqbalance is running and moves them'), False: N_('irqbalance is not running'),
                     None: N_('whether irqbalance runs is unknown')}[balancer]
    labels = join(", ", (gpu_label(facts, st.address) for st, _, _ in far[:4])) + (" ..." if len(far) > 4 else "")
    evidence = []
    for st, dev, off in far[:4]:
        for irq, cpus in off[:2]:
            src = "effective_affinity_list" if irq.effective else "smp_affinity_list"
            evidence.append(Evidence(f"{irq.origin}/{src}", f"{format_cpulist(cpus)} ({gpu_label(facts, st.address)})"))
        if dev is not None:
            evidence.append(Evidence(dev.attr("numa_node"), str(dev.numa_node)))
    yield Finding(
        LOW, "node", N_('interrupts of {n} GPU(s) served on another NUMA node', n=len(far)),
        detail=N_("{labels}: every vector is handled by CPUs of another node ({balancer_text}). This costs little: CUDA waits for GPU work by polling unless an application asks for blocking synchronisation, NCCL polls too, so GPU interrupts are rare (faults, errors, blocking waits); each one crosses the socket interconnect once.", labels=labels, balancer_text=balancer_text),
        evidence=tuple(evidence), expected=N_("the GPU's vectors on CPUs of its NUMA node"),
        observed=f"{len(far)} GPU(s) off-node",
        impact=Impact(1, N_('a cross-socket hop for each (rare) GPU interrupt'), basis=N_('CUDA and NCCL poll for completion by default; a general NUMA cost, not measured on this node')),
        fix=Fix(notes=_FIX_AFFINITY), references=REFERENCES, confidence=0.8,
        related=tuple(st.address for st, _, _ in far))
