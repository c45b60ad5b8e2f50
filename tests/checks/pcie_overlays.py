"""Overlay builders for the PCIe/IOMMU/vfio check tests: edit one device of the HGX fixture, or build a tiny tree."""

from __future__ import annotations

import os
from pathlib import Path

from doctor.facts import Facts
from doctor.findings import Finding
from tests.helpers import Link, findings_of, healthy, sick  # noqa: F401  (re-exported for the PCIe tests)
from tests.helpers import facts as helper_facts

SMI_XML = "commands/nvidia-smi_-q_-x"
Changes = dict[str, "bytes | str | Link | None"]


def dev_dir(bdf: str, base: Path | None = None) -> str:
    """The resolved ``sys/devices/...`` folder of a device, relative to the fixture root."""
    base = base or healthy()
    real = os.path.realpath(base / "sys/bus/pci/devices" / bdf)
    return os.path.relpath(real, os.path.realpath(base))


def attrs(bdf: str, base: Path | None = None, **values: str | Link | None) -> Changes:
    """``attrs("0000:3c:00.0", current_link_width="8")`` -> overlay changes on that device's files."""
    folder = dev_dir(bdf, base)
    return {f"{folder}/{name}": (value if value is None or isinstance(value, Link) else f"{value}\n")
            for name, value in values.items()}


def link(bdf: str, speed: float | None = None, width: int | None = None, base: Path | None = None) -> Changes:
    """Set a link's current speed/width at both ends (the device and the port above it), as Linux shows it."""
    out: Changes = {}
    parent = os.path.basename(os.path.dirname(dev_dir(bdf, base)))
    for who in (bdf, parent) if parent.count(":") == 2 else (bdf,):
        if speed is not None:
            out.update(attrs(who, base, current_link_speed=f"{float(speed)} GT/s PCIe"))
        if width is not None:
            out.update(attrs(who, base, current_link_width=str(width)))
    return out


def busy(*addresses: str, base: Path | None = None, util: int = 97) -> Changes:
    """nvidia-smi XML with the GPUs at ``addresses`` busy (utilisation, idle reason not active)."""
    text = ((base or healthy()) / SMI_XML).read_text()
    head, *blocks = text.split("<gpu id=")
    out = [head]
    for block in blocks:
        bus = block.split('"', 2)[1].lower()
        if any(bus.endswith(a.lower()[5:]) for a in addresses):
            block = block.replace("<clocks_event_reason_gpu_idle>Active<", "<clocks_event_reason_gpu_idle>Not Active<")
            block = block.replace("<gpu_util>0 %</gpu_util>", f"<gpu_util>{util} %</gpu_util>", 1)
        out.append(block)
    return {SMI_XML: "<gpu id=".join(out)}


def acs_config(bdf: str, ctl: int, base: Path | None = None) -> Changes:
    """The device's config space with the ACS Control register set to ``ctl``."""
    folder = dev_dir(bdf, base)
    data = bytearray(((base or healthy()) / folder / "config").read_bytes())
    off = 0x100
    for _ in range(64):
        header = int.from_bytes(data[off:off + 4], "little")
        if header & 0xFFFF == 0x000D:
            data[off + 6:off + 8] = ctl.to_bytes(2, "little")
            return {f"{folder}/config": bytes(data)}
        off = (header >> 20) & 0xFFC
        if off < 0x100:
            break
    raise AssertionError(f"no ACS capability in {bdf}'s config")


def mini_device(path: str, **values: str | Link) -> Changes:
    """A device in an empty tree: ``path`` like ``pci0000:00/0000:00:1c.0/0000:02:00.0``."""
    bdf = path.rsplit("/", 1)[-1]
    folder = f"sys/devices/{path}"
    out: Changes = {f"sys/bus/pci/devices/{bdf}": Link("../../../" + folder.removeprefix("sys/"))}
    for name, value in values.items():
        out[f"{folder}/{name}"] = value if isinstance(value, Link) else f"{value}\n"
    return out


# GPU / NIC addresses of the HGX fixture (see fixtures/README.md)
GPU0, GPU2, GPU3, GPU5 = "0000:18:00.0", "0000:3a:00.0", "0000:3c:00.0", "0000:9c:00.0"
NIC2 = "0000:3b:00.0"
DSP_GPU3, USP_37, RP_37 = "0000:39:02.0", "0000:38:00.0", "0000:37:01.0"


def node(changes: Changes | None = None, base: Path | None = None) -> Facts:
    """Facts of the healthy fixture (or ``base``) with ``changes`` overlaid."""
    return helper_facts(changes, base or healthy())


def severities(found: list[Finding], subject: str | None = None) -> set[str]:
    return {f.severity for f in found if subject is None or subject in f.subject}


def run_check(changes: dict, check_id: str) -> list[Finding]:
    """Findings of ``check_id`` on the healthy fixture with ``changes`` overlaid."""
    return findings_of(helper_facts(changes, base=healthy()), check_id)


def pairs(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found]


def smi_text() -> str:
    """The healthy fixture's nvidia-smi XML."""
    return (healthy() / SMI_XML).read_text()


def gpu_xml(address: str, old: str, new: str, changes: dict | None = None) -> dict:
    """Replace ``old`` by ``new`` inside one GPU's block of the nvidia-smi XML (after ``changes``)."""
    text = str((changes or {}).get(SMI_XML) or smi_text())
    head, *blocks = text.split("<gpu id=")
    for i, block in enumerate(blocks):
        if block.split('"', 2)[1].lower().endswith(address[5:]):
            assert old in block, old
            blocks[i] = block.replace(old, new)
    return {**(changes or {}), SMI_XML: "<gpu id=".join([head, *blocks])}
