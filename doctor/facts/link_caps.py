"""Firmware-capped PCIe links: the port above a device lets it train slower than both ends can.

Three pieces of evidence, each from config space (sysfs ``config`` as root) or ``lspci -vv``:

- the downstream port's Link Control 2 *Target Link Speed* is below what both ends advertise (for a
  downstream port the field is the upper limit of training; a BIOS "PCIe link speed: Gen1" writes it);
- the port's Link Capabilities *Max Link Speed* is below its own Link Capabilities 2 *Supported Link
  Speeds* (firmware lowered what the port advertises);
- another root port of the same silicon (same vendor and device id) advertises a higher speed than
  this one, which is below the device's own maximum: the platform supports more, this port was capped.
"""

from __future__ import annotations

from doctor.facts.pci import ROOT_PORT, PciDevice, PciTree
from doctor.record import record

_EPS = 0.01


@record
class FirmwareCap:
    """A link held below its ends' capability by the port's configuration."""

    port: PciDevice  # where the limit is set
    allowed: float  # GT/s the port lets the link reach
    capable: float  # GT/s the device could run (and the port's silicon supports)
    how: str  # which evidence decided, in words
    evidence: tuple[tuple[str, str], ...]  # (source, value)


def firmware_cap(tree: PciTree, child: PciDevice, port: PciDevice | None) -> FirmwareCap | None:
    """The firmware cap on the link between ``child`` and the ``port`` above it, or None."""
    if port is None or child.max_speed is None or port.max_speed is None:
        return None
    both = min(child.max_speed, port.max_speed)
    if port.target_speed is not None and port.target_speed < both - _EPS:
        return FirmwareCap(port, port.target_speed, both, "the port's Target Link Speed (LnkCtl2) is below both "
                           "ends' maximum link speed",
                           ((port.attr("config") + " LnkCtl2", f"Target Link Speed {port.target_speed:g} GT/s"),
                            (port.attr("max_link_speed"), f"{port.max_speed:g} GT/s"),
                            (child.attr("max_link_speed"), f"{child.max_speed:g} GT/s")))
    adv, sup = port.advertised_speed, port.supported_speed
    if adv is not None and sup is not None and sup > adv + _EPS and child.max_speed > adv + _EPS:
        return FirmwareCap(port, adv, min(child.max_speed, sup), "the port advertises less (LnkCap) than its silicon "
                           "supports (LnkCap2)",
                           ((port.attr("config") + " LnkCap", f"Max Link Speed {adv:g} GT/s"),
                            (port.attr("config") + " LnkCap2", f"Supported Link Speeds up to {sup:g} GT/s"),
                            (child.attr("max_link_speed"), f"{child.max_speed:g} GT/s")))
    if child.max_speed <= port.max_speed + _EPS:
        return None  # the port does not hold the device back
    if port.port_type != ROOT_PORT or port.vendor is None or port.device is None:
        return None
    twins = [d for d in tree.devices.values() if d.address != port.address and d.port_type == ROOT_PORT
             and d.vendor == port.vendor and d.device == port.device and d.max_speed is not None
             and d.max_speed > port.max_speed + _EPS]
    if not twins:
        return None
    best = max(twins, key=lambda d: (d.max_speed or 0, d.address))
    capable = min(child.max_speed, best.max_speed or 0)
    return FirmwareCap(port, port.max_speed, capable, f"root port {best.address}, the same silicon "
                       f"({port.vendor:04x}:{port.device:04x}), advertises {best.max_speed:g} GT/s",
                       ((port.attr("max_link_speed"), f"{port.max_speed:g} GT/s"),
                        (best.attr("max_link_speed"), f"{best.max_speed:g} GT/s"),
                        (child.attr("max_link_speed"), f"{child.max_speed:g} GT/s")))
