"""How each NVIDIA GPU takes its interrupts: MSI-X, MSI or its legacy INTx line, the vectors serving it, and
what keeps MSI off (docs/checks.md#gpu-interrupts).

The NVIDIA driver sets interrupts up when a GPU is first opened (at once with persistence mode): MSI-X
when the GPU has the capability (Hopper and later data-centre parts; up to ``NV_RM_MAX_MSIX_LINES``, 8,
vectors), else MSI (one vector: most consumer and workstation GPUs), both only while ``NVreg_EnableMSI``
is 1 (the default); otherwise, or when enabling MSI fails, it stays on the pin-based line
(open-gpu-kernel-modules ``kernel-open/nvidia/nv.c`` ``nv_start_device``, ``nv-msi.c``). Its handlers are
named ``nvidia`` in ``/proc/interrupts``.
"""

from __future__ import annotations

from doctor.derived import cached
from doctor.facts import Facts, Irq, PciDevice
from doctor.record import record

Pairs = tuple[tuple[str, str], ...]
MSIX, MSI, MESSAGE, INTX, UNSET, UNKNOWN = "msix", "msi", "message", "intx", "unset", "unknown"
#: the handler name the NVIDIA driver registers (``nv_device_name``, its module name)
HANDLER = "nvidia"
#: drivers whose GPU interrupts this judges (vfio-pci hands them to a guest; nouveau is not for CUDA)
NVIDIA_DRIVERS = frozenset({"nvidia"})


@record
class GpuIrqState:
    """One GPU's interrupt mode and the ``/proc/interrupts`` rows serving it.

    ``mode``: ``msix``, ``msi``, ``message`` (MSI or MSI-X; which one is not recorded), ``intx``, ``unset`` (no
    interrupt set up: the driver has not opened the GPU yet) or ``unknown``.
    """

    address: str
    mode: str
    vectors: tuple[Irq, ...]
    #: other handlers on the same INTx line (``ehci_hcd:usb1``)
    shared_with: tuple[str, ...]
    #: (source, value) pairs the mode was read from
    evidence: tuple[tuple[str, str], ...]
    #: the MSI capability state the device shows: ``offered`` (MSI or MSI-X capability present), ``none``
    #: (neither shown although capabilities were read), None (not recorded)
    capability: str | None = None


def chip_kind(chip: str) -> str | None:
    """``msix``/``msi`` for a per-device MSI domain (``IR-PCI-MSIX-0000:19:00.0``, ``PCI-MSI-0000:01:00.0``; Linux
    6.2+), ``message`` for a shared one (``IR-PCI-MSI``: MSI and MSI-X alike, ``ITS-MSI``, ``Hyper-V PCIe
    MSI``), ``wired`` for an interrupt controller's pins (``IO-APIC``, ``IR-IO-APIC``, ``GICv3``), else None."""
    upper = chip.upper()
    if "MSIX" in upper or "MSI-X" in upper:
        return MSIX
    if "-MSI-" in upper and upper.rsplit("-MSI-", 1)[1][:1].isdigit():
        return MSI
    if "MSI" in upper:
        return MESSAGE
    if "APIC" in upper or "GIC" in upper or "IOSAPIC" in upper:
        return "wired"
    return None


def handlers(irq: Irq) -> tuple[str, ...]:
    """The handler names on one interrupt (``nvidia, snd_hda_intel:card0``)."""
    return tuple(h.strip() for h in irq.actions.split(",") if h.strip())


def _is_gpu_row(irq: Irq) -> bool:
    return HANDLER in handlers(irq)


def _named_rows(irqs: tuple[Irq, ...], address: str) -> tuple[Irq, ...]:
    """Rows whose chip names the device (per-device MSI domains, Linux 6.2+)."""
    return tuple(i for i in irqs if i.chip.lower().endswith(address) and _is_gpu_row(i))


def interrupts_recorded(facts: Facts) -> bool:
    """Whether ``/proc/interrupts`` was read (``proc/irq/N`` folders alone name no handler)."""
    return any(i.actions or i.chip for i in facts.irqs)


def judged_gpus(facts: Facts) -> list[PciDevice]:
    """NVIDIA GPUs (physical functions) driven by the NVIDIA driver."""
    return [d for d in facts.pci.gpus if d.vendor == 0x10DE and d.driver in NVIDIA_DRIVERS]


def _state(facts: Facts, dev: PciDevice, by_number: dict[int, Irq]) -> GpuIrqState:
    irqs = facts.irqs
    sys = facts.gpu_irqs.get(dev.address)
    where = dev.attr("MSI") if not dev.origin.startswith("sys/") else f"{facts.pci.lspci_where} [{dev.address}]"
    lspci = []
    if dev.msix_enabled is not None:
        lspci.append(f"MSI-X: Enable{'+' if dev.msix_enabled else '-'}")
    if dev.msi_enabled is not None:
        lspci.append(f"MSI: Enable{'+' if dev.msi_enabled else '-'}")
    capability = "offered" if lspci else None
    lspci_ev: Pairs = ((where, ", ".join(lspci)),) if lspci and sys is None else ()
    named = _named_rows(irqs, dev.address)
    if sys is not None and sys.vectors:
        rows = tuple(by_number[n] for n in sys.vectors if n in by_number)
        mode = sys.mode or next((k for k in (chip_kind(r.chip) for r in rows) if k in (MSIX, MSI)), None)
        if mode is None:
            mode = MSIX if dev.msix_enabled else MSI if dev.msi_enabled else MESSAGE
        ev: Pairs = ((sys.mode_origin or f"{dev.origin}/msi_irqs", f"{len(sys.vectors)} vector(s)"
                      + (f", {sys.mode}" if sys.mode else "")),)
        return GpuIrqState(dev.address, mode, rows, (), ev + lspci_ev, "offered")
    if sys is None and (dev.msix_enabled or dev.msi_enabled):  # sysfs, where recorded, is the live state
        mode = MSIX if dev.msix_enabled else MSI
        rows = named
        if not rows and mode == MSI and dev.irq_line is not None and dev.irq_line in by_number \
                and _is_gpu_row(by_number[dev.irq_line]):
            rows = (by_number[dev.irq_line],)  # MSI: the device's irq is its one vector
        return GpuIrqState(dev.address, mode, rows, (), lspci_ev, "offered")
    if named:
        kinds = {chip_kind(r.chip) for r in named}
        mode = MSIX if MSIX in kinds else MSI if MSI in kinds else MESSAGE
        return GpuIrqState(dev.address, mode, named, (), ((named[0].origin, named[0].chip),), capability)
    line = sys.line if sys is not None and sys.line is not None else dev.irq_line
    line_where = sys.line_origin if sys is not None and sys.line is not None else where
    row = by_number.get(line) if line is not None else None
    gpu_rows = [i for i in irqs if _is_gpu_row(i)]
    if row is None and line is None and len(judged_gpus(facts)) == 1:
        wired = [i for i in gpu_rows if chip_kind(i.chip) == "wired"]
        row = wired[0] if len(wired) == 1 else None
    if row is not None and _is_gpu_row(row) and chip_kind(row.chip) in ("wired", None):
        others = tuple(h for h in handlers(row) if h != HANDLER)
        pin: Pairs = ((line_where or row.origin, f"IRQ {row.number}"),
                      ("proc/interrupts", f"{row.number}: {row.chip} {row.actions}".strip()))
        return GpuIrqState(dev.address, INTX, (row,), others, pin + lspci_ev, capability)
    no_msi_dir = sys is not None and not sys.vectors
    msi_off = dev.msi_enabled is False or dev.msix_enabled is False
    if (no_msi_dir or msi_off) and interrupts_recorded(facts):  # no vector, no row naming it, no handler on its line
        unset: Pairs = ((f"{dev.origin}/msi_irqs", "no vector allocated"),) if no_msi_dir else ()
        unset += (("proc/interrupts", f"no {HANDLER} handler for {dev.address}"),)
        return GpuIrqState(dev.address, UNSET, (), (), unset + lspci_ev, capability)
    return GpuIrqState(dev.address, UNKNOWN, (), (), lspci_ev, capability)


def gpu_irq_states(facts: Facts) -> tuple[GpuIrqState, ...]:
    """Every NVIDIA-driven GPU's interrupt state, computed once per run."""
    def build() -> tuple[GpuIrqState, ...]:
        by_number = {i.number: i for i in facts.irqs}
        return tuple(_state(facts, d, by_number) for d in sorted(judged_gpus(facts), key=lambda d: d.address))

    return cached(facts, "interrupts.gpu_irq_states", build)


def msi_disabled_by(facts: Facts) -> tuple[tuple[str, str], ...]:
    """What keeps MSI off, as (source, value): the driver's ``EnableMSI: 0``, a modprobe line setting
    ``NVreg_EnableMSI=0``, the kernel's ``pci=nomsi``."""
    out = []
    params = facts.nvidia_params
    if params is not None and params.enable_msi == 0:
        out.append((params.origin, "EnableMSI: 0"))
    for line in facts.modprobe:
        words = line.line.replace("=", " = ").split()
        text = " ".join(words)
        if "NVreg_EnableMSI = 0" in text:
            out.append((line.path, line.line))
    pci = facts.cmdline.params.get("pci", "")
    if "nomsi" in pci.split(","):
        out.append((facts.cmdline.origin, f"pci={pci}"))
    return tuple(out)


def off_node(facts: Facts, state: GpuIrqState, dev: PciDevice) -> tuple[tuple[Irq, frozenset[int]], ...] | None:
    """The GPU's vectors served wholly off its NUMA node, with their CPUs; None when it cannot be judged
    (one node, the GPU's node unknown, or no vector with a known affinity)."""
    numa = facts.numa
    if not numa.multi_node or dev.numa_node is None or dev.numa_node < 0:
        return None
    node = numa.get(dev.numa_node)
    if node is None or not node.cpus:
        return None
    placed = [(i, i.effective if i.effective else i.affinity) for i in state.vectors]
    known = [(i, c) for i, c in placed if c]
    if not known:
        return None
    return tuple((i, c) for i, c in known if not c & node.cpus)
