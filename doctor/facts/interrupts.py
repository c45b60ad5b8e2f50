"""How GPUs signal interrupts: their MSI/MSI-X vectors and legacy line (sysfs), and the NVIDIA driver's MSI setting.

``sys/bus/pci/devices/<bdf>/msi_irqs/`` holds one file per MSI or MSI-X vector the kernel allocated, named
after its IRQ number; each file reads ``msi`` or ``msix`` (Documentation/ABI/testing/sysfs-bus-pci: "the
mode that the irq vector named by the file is in (msi vs. msix)"). The folder exists only while a driver
has MSI or MSI-X enabled. ``irq`` is the device's interrupt line: its INTx line, or its MSI vector while MSI
is on. ``/proc/driver/nvidia/params`` lists the driver's registry keys, ``EnableMSI: 1`` by default.
"""

from __future__ import annotations

from doctor.facts.pci import PciDevice
from doctor.record import record
from doctor.sources import Source

#: Largest IRQ number believed (Linux allocates IRQ descriptors well below this).
MAX_IRQ = 1 << 24
PARAMS = "proc/driver/nvidia/params"


@record
class DeviceIrqs:
    """One PCI function's interrupts as sysfs shows them; ``None`` means not recorded."""

    address: str
    #: the IRQ numbers of its MSI/MSI-X vectors (``msi_irqs/``); empty when none is allocated
    vectors: tuple[int, ...]
    #: ``msi`` or ``msix`` as the first vector's file reads; None when unreadable or no vector
    mode: str | None
    mode_origin: str | None
    #: ``irq``: the INTx line, or the MSI vector while MSI is on
    line: int | None
    line_origin: str | None


@record
class NvidiaParams:
    """The NVIDIA driver's registry keys that decide how it takes interrupts."""

    #: ``EnableMSI``: 1 (the default) lets the driver enable MSI-X or MSI; 0 keeps the GPU on its INTx line
    enable_msi: int | None
    origin: str


def _number(text: str | None, top: int = MAX_IRQ) -> int | None:
    text = (text or "").strip()
    if not text.isdigit() or len(text) > 9:
        return None
    value = int(text)
    return value if 0 <= value < top else None


def build_device_irqs(src: Source, devices: list[PciDevice]) -> dict[str, DeviceIrqs]:
    """``devices``' interrupt files (the GPUs: one mode file and one ``irq`` each, read only when asked)."""
    out: dict[str, DeviceIrqs] = {}
    for dev in devices:
        if not dev.origin.startswith("sys/"):
            continue  # from lspci alone (a sosreport): its MSI state is on the device
        mode = mode_origin = None
        if dev.msi_irqs:
            mode_origin = f"{dev.origin}/msi_irqs/{dev.msi_irqs[0]}"
            word = (src.read_line(mode_origin) or "").strip().lower()
            mode = word if word in ("msi", "msix") else None
        line_origin = f"{dev.origin}/irq"
        line = _number(src.read_line(line_origin))
        out[dev.address] = DeviceIrqs(dev.address, dev.msi_irqs, mode, mode_origin if mode else None,
                                      line, line_origin if line is not None else None)
    return out


def build_nvidia_params(src: Source) -> NvidiaParams | None:
    """``EnableMSI`` from ``/proc/driver/nvidia/params``; None when the file was not recorded."""
    text = src.read_text(PARAMS, cap=64 << 10)
    if text is None:
        return None
    value = None
    for raw in text.splitlines():
        key, sep, rest = raw.partition(":")
        if sep and key.strip() == "EnableMSI":
            value = _number(rest, 1 << 32)
            break
    return NvidiaParams(value, PARAMS)
