"""gpu.interrupts: a GPU on its legacy INTx line (shared or not), MSI disabled for the driver, GPU vectors off the
GPU's node; and the healthy states that look wrong: one MSI vector, MSI-X with ``MSI: Enable-``, a GPU not opened
yet, a vfio-bound GPU, vectors split across nodes, a one-node host (docs/checks.md#gpu-interrupts)."""

from __future__ import annotations

from doctor.facts.numa import irq_actions, irq_chip
from tests.checks.pcie_overlays import GPU0, GPU5, attrs
from tests.helpers import HEALTHY, Link, facts, findings_of

CHECK = "gpu.interrupts"
NCPU = 96
INTERRUPTS = (HEALTHY / "proc/interrupts").read_text()


def row(number: int, chip: str, hwirq: str, actions: str, on_cpu: int = 0) -> str:
    counts = ["0"] * NCPU
    counts[on_cpu] = "1234"
    return f"{number:>4}: " + " ".join(f"{c:>10}" for c in counts) + f"  {chip}   {hwirq}      {actions}"


def interrupts(drop: tuple[int, ...] = (), add: tuple[str, ...] = ()) -> str:
    """The base /proc/interrupts without rows ``drop`` and with rows ``add`` (before the NMI/LOC summary rows)."""
    lines = [ln for ln in INTERRUPTS.splitlines() if ln.split(":", 1)[0].strip() not in {str(n) for n in drop}]
    head = [ln for ln in lines if ln.split(":", 1)[0].strip().isdigit() or ln is lines[0]]
    tail = [ln for ln in lines if ln not in head]
    return "\n".join(head + list(add) + tail) + "\n"


def intx_gpu0(actions: str = "nvidia") -> dict:
    """GPU 0 without MSI-X vectors, on IO-APIC line 16 with ``actions`` there."""
    return {**attrs(GPU0, irq="16"), **{k: None for k in attrs(GPU0, **{"msi_irqs/180": "x"})},
            "proc/interrupts": interrupts(drop=(180,), add=(row(16, "IR-IO-APIC", "16-fasteoi", actions),)),
            "proc/irq/16/smp_affinity_list": "0-95\n", "proc/irq/16/effective_affinity_list": "3\n"}


def of(changes: dict | None = None, base=HEALTHY) -> list:
    return findings_of(facts(changes, base), CHECK)


def severities(found: list) -> list[str]:
    return [str(f.severity) for f in found]


# --- positive ------------------------------------------------------------------------------------


def test_intx_line_shared_with_another_device_is_medium() -> None:
    found = of(intx_gpu0("nvidia, ehci_hcd:usb1"))
    hit = [f for f in found if GPU0 in f.subject]
    assert severities(hit) == ["medium"]
    assert "legacy INTx line (IRQ 16, shared with ehci_hcd:usb1)" in hit[0].title
    assert "nobody cared" in hit[0].detail
    assert ("proc/interrupts", "16: IR-IO-APIC nvidia, ehci_hcd:usb1") in [(e.source, e.value) for e in hit[0].evidence]
    assert [f for f in found if f.severity == "pass"]  # the other seven GPUs still pass


def test_intx_line_of_its_own_is_low_and_names_what_disables_msi() -> None:
    changes = {**intx_gpu0(), "proc/driver/nvidia/params": "ResmanDebugLevel: 4294967295\nEnableMSI: 0\n",
               "etc/modprobe.d/nvidia.conf": "options nvidia NVreg_EnableMSI=0 NVreg_PreserveVideoMemoryAllocations=1\n"}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert severities(hit) == ["low"] and "instead of MSI" in hit[0].title
    ev = [(e.source, e.value) for e in hit[0].evidence]
    assert ("proc/driver/nvidia/params", "EnableMSI: 0") in ev
    assert ("etc/modprobe.d/nvidia.conf", "options nvidia NVreg_EnableMSI=0 NVreg_PreserveVideoMemoryAllocations=1") in ev
    assert "NVreg_EnableMSI=0" in hit[0].fix.notes


def test_kernel_pci_nomsi_is_named_as_the_cause() -> None:
    changes = {**intx_gpu0(), "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 pci=nomsi,noaer quiet\n"}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert ("proc/cmdline", "pci=nomsi,noaer") in [(e.source, e.value) for e in hit[0].evidence]


def test_gpu_not_opened_with_msi_disabled_for_the_driver_is_low() -> None:
    changes = {**intx_gpu0(), "proc/interrupts": interrupts(drop=(180,)),
               "proc/driver/nvidia/params": "EnableMSI: 0\n"}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert severities(hit) == ["low"] and "MSI disabled for the NVIDIA driver" in hit[0].title


def test_every_vector_on_the_far_node_is_low_at_most() -> None:
    """GPU 5 (0000:9c:00.0, node 1) with its vector on CPU 2 (node 0): low, one finding, irqbalance named."""
    changes = {"proc/irq/185/effective_affinity_list": "2\n", "proc/irq/185/smp_affinity_list": "0-47\n"}
    hit = [f for f in of(changes) if f.severity != "pass"]
    assert severities(hit) == ["low"] and "served on another NUMA node" in hit[0].title
    assert hit[0].related == (GPU5,) and "polling" in hit[0].detail
    assert ("proc/irq/185/effective_affinity_list", "2 (GPU 5 (0000:9c:00.0))") in [
        (e.source, e.value) for e in hit[0].evidence]


def test_lspci_only_source_with_msi_off_and_an_intx_row_is_intx() -> None:
    """A sosreport-like tree: lspci -vvv shows MSI Enable- (no MSI-X), the GPU's IRQ 16 row names nvidia."""
    lspci = ("0000:01:00.0 VGA compatible controller [0300]: NVIDIA Corporation AD102GL [RTX 6000 Ada Generation] "
             "[10de:26b1] (rev a1) (prog-if 00 [VGA controller])\n"
             "\tInterrupt: pin A routed to IRQ 16\n"
             "\tCapabilities: [68] MSI: Enable- Count=1/1 Maskable- 64bit+\n"
             "\tCapabilities: [78] Express (v2) Legacy Endpoint, MSI 00\n"
             "\tKernel driver in use: nvidia\n")
    header = "           CPU0       CPU1\n"
    changes = {"commands/lspci_-nnvvv": lspci,
               "proc/interrupts": header + "  16:        120          0  IR-IO-APIC   16-fasteoi   nvidia\n"}
    found = of(changes, base=None)
    assert severities(found) == ["low"] and "IRQ 16" in found[0].title


# --- negative: healthy states that look wrong ------------------------------------------------------


def test_healthy_hgx_passes_with_msix() -> None:
    found = of()
    assert severities(found) == ["pass"] and "8 GPU(s) signal with MSI-X" in found[0].title


def test_one_msi_vector_is_the_drivers_choice_not_a_fault() -> None:
    """Ada, Ampere and consumer GPUs have no MSI-X capability: the driver takes one MSI vector."""
    found = of(attrs(GPU0, **{"msi_irqs/180": "msi"}))
    assert severities(found) == ["pass"]
    assert "MSI, MSI-X" in found[0].title and "one MSI vector: the driver's choice" in found[0].title


def test_msix_with_msi_disabled_in_lspci_is_msix() -> None:
    """H100 lspci: ``MSI: Enable- Count=1/16`` beside ``MSI-X: Enable+ Count=9``; MSI off is not INTx."""
    lspci = ("0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n"
             "\tInterrupt: pin A routed to IRQ 17\n"
             "\tCapabilities: [48] MSI: Enable- Count=1/16 Maskable+ 64bit+\n"
             "\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
             "\tCapabilities: [b0] MSI-X: Enable+ Count=9 Masked-\n"
             "\tKernel driver in use: nvidia\n")
    header = "           CPU0       CPU1\n"
    changes = {"commands/lspci_-nnvvv": lspci,
               "proc/interrupts": header + "  17:          0          0  IR-IO-APIC   17-fasteoi   ehci_hcd:usb1\n"
                                           " 120:        900          0  IR-PCI-MSI 9961472-edge      nvidia\n"}
    found = of(changes, base=None)
    assert severities(found) == ["pass"] and "MSI-X" in found[0].title
    alone = of({"commands/lspci_-nnvvv": lspci}, base=None)  # no /proc/interrupts: still MSI-X, affinity unknown
    assert severities(alone) == ["pass"] and "not recorded" in alone[0].title


def test_gpu_not_opened_yet_is_info() -> None:
    """No vector, no nvidia handler, EnableMSI 1: persistence mode off and no client yet, not INTx."""
    changes = {**intx_gpu0(), "proc/interrupts": interrupts(drop=(180,)), "proc/driver/nvidia/params": "EnableMSI: 1\n"}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert severities(hit) == ["info"] and "first opened" in hit[0].title


def test_msi_off_without_proc_interrupts_is_unknown_not_intx() -> None:
    changes = {**intx_gpu0(), "proc/interrupts": None}
    hit = [f for f in of(changes) if GPU0 in f.subject]
    assert severities(hit) == ["unknown"]


def test_vfio_bound_gpu_is_not_judged() -> None:
    changes = {**intx_gpu0("nvidia, ehci_hcd:usb1"),
               **attrs(GPU0, driver=Link("../../../../../../bus/pci/drivers/vfio-pci"))}
    found = of(changes)
    assert not [f for f in found if GPU0 in f.subject] and severities(found) == ["pass"]


def test_vectors_split_across_nodes_and_one_node_hosts_are_not_off_node() -> None:
    half = {"proc/irq/185/effective_affinity_list": "50\n"}  # GPU 5 (node 1) on CPU 50: its own node
    assert severities(of(half)) == ["pass"]
    one_node = {"proc/irq/185/effective_affinity_list": "2\n", "sys/devices/system/node/node1": None,
                "sys/devices/system/node/node1/cpulist": None, "sys/devices/system/node/node1/distance": None}
    assert severities(of(one_node)) == ["pass"]


def test_proc_interrupts_chip_column() -> None:
    """The chip column of each kernel generation; the handler names stay what numa.irq_affinity reads."""
    for line, chip, actions in (
        ("180:   0   0  IR-PCI-MSIX-0000:18:00.0   0-edge      nvidia", "IR-PCI-MSIX-0000:18:00.0", "nvidia"),
        ("16:   5   0  IR-IO-APIC   16-fasteoi   nvidia, ehci_hcd:usb1", "IR-IO-APIC", "nvidia, ehci_hcd:usb1"),
        ("30:   5   0  PCI-MSI-edge      nvidia", "PCI-MSI-edge", "nvidia"),
        ("24:   5   0  Hyper-V PCIe MSI 134742016-edge      mlx5_async0@pci:dc41:00:02.0", "Hyper-V PCIe MSI",
         "PCIe MSI 134742016-edge mlx5_async0@pci:dc41:00:02.0"),
        ("11:   5   0  GICv3  27 Level     arch_timer", "GICv3", "arch_timer"),
    ):
        fields = line.split(":", 1)[1].split()
        assert (irq_chip(fields, 2), irq_actions(fields, 2)) == (chip, actions)
