"""``gnd baseline``: write what a known-good node looks like as commented TOML.

A baseline holds GPU and NIC counts and models, per slot (PCI address) the device model, link
generation and width, NUMA node and driver, chosen sysctls and kernel command-line parameters.
:mod:`doctor.facts.baseline` reads and validates it; check ``baseline.deviation`` reports deviations.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from doctor.derived.pcie import expected_gen, model_id
from doctor.facts.baseline import FORMAT_VERSION
from doctor.parsers import toml_io
from doctor.secrets import MASK

if TYPE_CHECKING:
    from doctor.facts import Facts
    from doctor.facts.pci import PciDevice

#: Kernel parameters never written to a baseline: they name a boot image or disk, not a setting.
CMDLINE_SKIP = frozenset({"BOOT_IMAGE", "root", "ro", "rw", "quiet", "splash", "initrd", "resume",
                          "crashkernel", "console", "vt.handoff"})


def _devices(facts: Facts) -> list[tuple[str, PciDevice]]:
    return [("gpu", d) for d in facts.pci.gpus] + [("nic", d) for d in facts.pci.nics]


def _name_of(facts: Facts, kind: str, dev: PciDevice) -> str:
    if kind == "gpu":
        gpu = facts.gpus.by_address(dev.address)
        if gpu is not None:
            return f"GPU {gpu.index}: {gpu.name or model_id(dev) or '?'}"
    nets = [n.name for n in facts.netdevs_of(dev.address)]
    label = f"NIC {', '.join(nets)}" if nets else kind.upper()
    return f"{label}: {dev.name or model_id(dev) or '?'}"


def write_baseline(facts: Facts, source_label: str) -> str:
    """The baseline TOML of the node behind ``facts`` (commented, meant to be read and edited)."""
    from doctor.derived.digest import SYSCTLS

    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    host = facts.host.hostname or "?"
    lines = [
        "# gpu-node-doctor baseline: what a known-good node looks like.",
        f"# Written by `gnd baseline` from {toml_io.comment(source_label)} (host {toml_io.comment(host)}) at {now}.",
        "# `gnd check --baseline THIS_FILE` reports every difference as check baseline.deviation.",
        "# Edit freely: delete a line or a whole [section] to stop checking it; unknown keys are an error.",
        "",
        f"version = {FORMAT_VERSION}",
        "",
    ]
    for kind, devs in (("gpus", facts.pci.gpus), ("nics", facts.pci.nics)):
        models = sorted({m for m in (model_id(d) for d in devs) if m})
        names = sorted({d.name for d in devs if d.name})
        lines += [f"[{kind}]", f"count = {len(devs)}",
                  f"models = {toml_io.value(models)}  # vendor:device" + (f"; {toml_io.comment('; '.join(names))}" if names else ""),
                  ""]
    lines.append("# One table per slot (PCI address): gen = PCIe generation the link trains at under load,")
    lines.append("# width = lanes, numa_node = the node sysfs reports, driver = the bound kernel driver.")
    for kind, dev in _devices(facts):
        lines.append(f"[pci.{toml_io.key(dev.address)}]  # {toml_io.comment(_name_of(facts, kind, dev))}")
        lines.append(f"kind = {toml_io.value(kind)}")
        model = model_id(dev)
        if model:
            lines.append(f"model = {toml_io.value(model)}")
        gen, how = expected_gen(facts, dev)
        if gen is not None:
            lines.append(f"gen = {gen}  # {toml_io.comment(how)}")
        if dev.cur_width is not None:
            lines.append(f"width = {dev.cur_width}" + (f"  # of x{dev.max_width}" if dev.max_width else ""))
        if dev.numa_node is not None:
            lines.append(f"numa_node = {dev.numa_node}")
        lines.append(f"driver = {toml_io.value(dev.driver or '')}" + ("" if dev.driver else "  # no driver bound"))
        lines.append("")
    lines.append("[sysctl]")
    lines.append("# runtime values (multi-value sysctls separated by single spaces)")
    for name in SYSCTLS:
        value = facts.sysctls.get(name)
        if value is not None:
            lines.append(f"{toml_io.key(name)} = {toml_io.value(value)}")
    lines.append("")
    lines.append("[kernel.cmdline]")
    lines.append('# parameters that must be on the kernel command line with this value ("" = a bare flag)')
    for name, value in facts.cmdline.params.items():
        if name and name not in CMDLINE_SKIP and value != MASK:  # a masked value is not written, nor compared
            lines.append(f"{toml_io.key(name)} = {toml_io.value(value)}")
    return "\n".join(lines) + "\n"


