"""/proc/interrupts rows: the handler names, without the chip, hardware IRQ and trigger columns."""

from __future__ import annotations

import pytest

from doctor.facts.numa import irq_actions
from tests.helpers import facts

# canonical/hotsos tests/unit/fake_data_root/openstack/proc/interrupts (Apache-2.0), a two-CPU KVM guest (Linux 5.4)
HOTSOS = ("           CPU0       CPU1       \n"
          "  1:          9          0   IO-APIC   1-edge      i8042\n"
          " 10:          0          0   IO-APIC  10-fasteoi   virtio10, ehci_hcd:usb1, uhci_hcd:usb2\n"
          " 25:   24376036      13487   PCI-MSI 49153-edge      virtio0-input.0\n"
          "NMI:          0          0   Non-maskable interrupts\n")


def test_real_rows_keep_only_the_handler_names() -> None:
    irqs = {i.number: i.actions for i in facts({"proc/interrupts": HOTSOS}, base=None).irqs}
    assert irqs == {1: "i8042", 10: "virtio10, ehci_hcd:usb1, uhci_hcd:usb2", 25: "virtio0-input.0"}


@pytest.mark.parametrize(("row", "actions"), [
    # before Linux 4.x the chip and trigger were one column and no hardware IRQ was printed
    ("   45  0  IR-PCI-MSI-edge  eth0-TxRx-0", "eth0-TxRx-0"),
    # ARM GIC: hardware IRQ and trigger in two columns
    ("   123  456  GICv3  27 Level     arch_timer", "arch_timer"),
    ("   7  0  IR-PCI-MSIX-0000:5e:00.0  1-edge  mlx5_comp0@pci:0000:5e:00.0", "mlx5_comp0@pci:0000:5e:00.0"),
    ("   0  0  PCI-MSI 49152-edge", ""),  # no handler left
])
def test_row_formats(row: str, actions: str) -> None:
    assert irq_actions(row.split(), 2) == actions
