"""Known-good baselines: write what a good node looks like as commented TOML, report deviations from it.

A baseline holds GPU and NIC counts and models, per slot (PCI address) the device model, link
generation and width, NUMA node and driver, chosen sysctls and kernel command-line parameters.
Deviations become findings of check ``baseline.deviation``.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from doctor.derived.links import judge_ends
from doctor.derived.pcie import end_of
from doctor.derived.relations import gpu_idle
from doctor.facts.baseline import FORMAT_VERSION, Baseline
from doctor.facts.pcie_gen import generation
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact, cmd
from doctor.fixes import make, sysctl_fix
from doctor.parsers import toml_io

if TYPE_CHECKING:
    from doctor.facts import Facts
    from doctor.facts.pci import PciDevice

CHECK_ID = "baseline.deviation"
CHECK_TITLE = "Deviations from the known-good baseline"
#: Kernel parameters never written to a baseline: they name a boot image or disk, not a setting.
CMDLINE_SKIP = frozenset({"BOOT_IMAGE", "root", "ro", "rw", "quiet", "splash", "initrd", "resume",
                          "crashkernel", "console", "vt.handoff"})
#: Severity of each kind of deviation (a lower link than the baseline; the other cases are below).
SEVERITY = {"gpus.count": HIGH, "nics.count": MEDIUM, "gpus.models": HIGH, "nics.models": MEDIUM,
            "pci.missing": HIGH, "pci.model": HIGH, "pci.kind": MEDIUM, "pci.width": HIGH, "pci.gen": HIGH,
            "pci.better": LOW, "pci.numa_node": MEDIUM, "pci.driver": HIGH, "sysctl": MEDIUM, "cmdline": MEDIUM}
#: Impact score per severity when no better estimate exists.
SCORE = {HIGH: 40.0, MEDIUM: 20.0, LOW: 5.0, UNKNOWN: 0.0}

# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _model(dev: PciDevice) -> str | None:
    if dev.vendor is None or dev.device is None:
        return None
    return f"{dev.vendor:04x}:{dev.device:04x}"


def expected_gen(facts: Facts, dev: PciDevice) -> tuple[int | None, str]:
    """The generation a device's link runs at under load, and how it was judged.

    An idle GPU parks its link at 2.5 GT/s, so for a GPU that is not busy the link's expected
    speed (the lower of both ends' maxima, :mod:`doctor.derived.links`) stands in for the current one.
    """
    if dev.is_gpu and gpu_idle(facts, dev.address):
        port = facts.pci.get(dev.parent)
        verdict = judge_ends(end_of(dev), end_of(port) if port is not None else None, idle=True)
        return generation(verdict.exp_speed), "capability (GPU not busy)"
    return generation(dev.cur_speed), "current"


def _devices(facts: Facts) -> list[tuple[str, PciDevice]]:
    return [("gpu", d) for d in facts.pci.gpus] + [("nic", d) for d in facts.pci.nics]


def _name_of(facts: Facts, kind: str, dev: PciDevice) -> str:
    if kind == "gpu":
        gpu = facts.gpus.by_address(dev.address)
        if gpu is not None:
            return f"GPU {gpu.index}: {gpu.name or _model(dev) or '?'}"
    nets = [n.name for n in facts.netdevs_of(dev.address)]
    label = f"NIC {', '.join(nets)}" if nets else kind.upper()
    return f"{label}: {dev.name or _model(dev) or '?'}"


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
        models = sorted({m for m in (_model(d) for d in devs) if m})
        names = sorted({d.name for d in devs if d.name})
        lines += [f"[{kind}]", f"count = {len(devs)}",
                  f"models = {toml_io.value(models)}  # vendor:device" + (f"; {toml_io.comment('; '.join(names))}" if names else ""),
                  ""]
    lines.append("# One table per slot (PCI address): gen = PCIe generation the link trains at under load,")
    lines.append("# width = lanes, numa_node = the node sysfs reports, driver = the bound kernel driver.")
    for kind, dev in _devices(facts):
        lines.append(f"[pci.{toml_io.key(dev.address)}]  # {toml_io.comment(_name_of(facts, kind, dev))}")
        lines.append(f"kind = {toml_io.value(kind)}")
        model = _model(dev)
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
        if name and name not in CMDLINE_SKIP:
            lines.append(f"{toml_io.key(name)} = {toml_io.value(value)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------------------------


def _finding(kind: str, subject: str, title: str, expected: object, observed: object,
             evidence: list[Evidence], severity: str | None = None, fix: Fix | None = None,
             score: float | None = None, detail: str = "") -> Finding:
    sev = severity or SEVERITY[kind]
    return Finding(severity=sev, subject=subject, title=title, detail=detail, evidence=tuple(evidence),
                   subject_id=subject.removeprefix("sysctl "),
                   expected=str(expected), observed=str(observed),
                   impact=Impact(SCORE.get(sev, 0.0) if score is None else score,
                                 "differs from the known-good node this baseline was written from"),
                   fix=fix or Fix(), check=CHECK_ID, category="baseline")


def _compare_groups(b: Baseline, facts: Facts) -> list[Finding]:
    out = []
    for group, devs in (("gpus", facts.pci.gpus), ("nics", facts.pci.nics)):
        spec = b.data.get(group) or {}
        word = group[:-1].upper()
        ev = Evidence(facts.pci.origin or "pci", f"{len(devs)} {word}s: " + ", ".join(d.address for d in devs))
        if "count" in spec and spec["count"] != len(devs):
            out.append(_finding(f"{group}.count", "node", f"{len(devs)} {word}s where the baseline has {spec['count']}",
                                spec["count"], len(devs), [ev, Evidence("baseline", b.where(group, name="count"))]))
        if "models" in spec:
            allowed = {str(m).lower() for m in spec["models"]}
            for dev in devs:
                model = _model(dev)
                if model and model not in allowed:
                    out.append(_finding(f"{group}.models", dev.address, f"{word} model {model} is not in the baseline",
                                        ", ".join(sorted(allowed)), model,
                                        [Evidence(dev.attr("device"), model),
                                         Evidence("baseline", b.where(group, name="models"))]))
    return out


def _link_fix(address: str) -> Fix:
    return make("inspect_pci", flags="-vvv", address=address,
                notes="Compare LnkCap with LnkSta; reseat the card or riser, check the slot's bifurcation "
                     "setting in the BIOS, then collect again.")


def _compare_device(b: Baseline, facts: Facts, address: str, spec: dict[str, Any]) -> list[Finding]:
    dev = facts.pci.get(address)
    where = Evidence("baseline", b.where("pci", address))
    if dev is None:
        return [_finding("pci.missing", address, f"{spec.get('kind', 'device')} {address} in the baseline is missing",
                         f"a {spec.get('kind', 'device')} at {address}", "absent",
                         [Evidence(facts.pci.origin or "pci", f"no device {address}"), where],
                         fix=Fix(notes="Check that the card is seated and powered, and the BIOS enumerates it "
                                       f"(`{cmd('lspci', '-s', address)}`)."))]
    out: list[Finding] = []
    model = _model(dev)
    if "model" in spec and model and model != spec["model"].lower():
        out.append(_finding("pci.model", address, f"{address} is {model}, the baseline has {spec['model']}",
                            spec["model"], model, [Evidence(dev.attr("device"), model), where]))
    kind = "gpu" if dev.is_gpu else "nic" if dev.is_nic else "other"
    if "kind" in spec and spec["kind"] != kind:
        out.append(_finding("pci.kind", address, f"{address} is a {kind}, the baseline has a {spec['kind']}",
                            spec["kind"], kind, [Evidence(dev.attr("class"), kind), where]))
    if "width" in spec:
        want = spec["width"]
        if dev.cur_width is None:
            out.append(_finding("pci.width", address, f"link width of {address} not recorded", f"x{want}", "unknown",
                                [Evidence(dev.attr("current_link_width"), "missing"), where], severity=UNKNOWN))
        elif dev.cur_width != want:
            worse = dev.cur_width < want
            out.append(_finding("pci.width", address, f"{address} link runs x{dev.cur_width}, the baseline has x{want}",
                                f"x{want}", f"x{dev.cur_width}",
                                [Evidence(dev.attr("current_link_width"), str(dev.cur_width)), where],
                                severity=None if worse else SEVERITY["pci.better"], fix=_link_fix(address),
                                score=100.0 * (1 - dev.cur_width / want) if worse and want else None))
    if "gen" in spec:
        want = spec["gen"]
        gen, how = expected_gen(facts, dev)
        if gen is None:
            out.append(_finding("pci.gen", address, f"link generation of {address} not recorded", f"gen {want}",
                                "unknown", [Evidence(dev.attr("current_link_speed"), "missing"), where],
                                severity=UNKNOWN))
        elif gen != want:
            worse = gen < want
            attr = "current_link_speed" if how == "current" else "max_link_speed"
            speed = dev.cur_speed if how == "current" else dev.max_speed
            out.append(_finding("pci.gen", address, f"{address} link is gen {gen} ({how}), the baseline has gen {want}",
                                f"gen {want}", f"gen {gen}", [Evidence(dev.attr(attr), f"{speed} GT/s"), where],
                                severity=None if worse else SEVERITY["pci.better"], fix=_link_fix(address),
                                score=100.0 * (1 - 2 ** (gen - want)) if worse else None))
    if "numa_node" in spec and dev.numa_node != spec["numa_node"]:
        out.append(_finding("pci.numa_node", address,
                            f"{address} reports NUMA node {dev.numa_node}, the baseline has {spec['numa_node']}",
                            spec["numa_node"], dev.numa_node, [Evidence(dev.attr("numa_node"), str(dev.numa_node)), where],
                            fix=Fix(notes="A changed NUMA node means a different slot or a BIOS setting "
                                          "(NPS/SNC, ACPI SRAT); check both.")))
    if "driver" in spec and (dev.driver or "") != spec["driver"]:
        fix = make("inspect_pci", flags="-k", address=address,
                   notes=f"Bind {address} to {spec['driver'] or 'no driver'}: check driver_override, "
                        "vfio-pci.ids on the kernel command line and modprobe.d.")
        out.append(_finding("pci.driver", address,
                            f"{address} is bound to {dev.driver or 'no driver'}, the baseline has "
                            f"{spec['driver'] or 'no driver'}", spec["driver"] or "none", dev.driver or "none",
                            [Evidence(dev.attr("driver"), dev.driver or "no driver link"), where], fix=fix))
    return out


def _compare_sysctls(b: Baseline, facts: Facts) -> list[Finding]:
    out = []
    for name, want_raw in (b.data.get("sysctl") or {}).items():
        want = " ".join(str(want_raw).split())
        have = facts.sysctls.get(name)
        where = Evidence("baseline", b.where("sysctl", name=name))
        if have is None:
            out.append(_finding("sysctl", f"sysctl {name}", f"sysctl {name} not recorded", want, "unknown",
                                [Evidence("sysctl", f"{name} missing from this source"), where], severity=UNKNOWN))
        elif " ".join(have.split()) != want:
            conf = "90-gnd-baseline-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:30] + ".conf"
            fix = sysctl_fix({name: want}, facts.sysctls, conf)
            out.append(_finding("sysctl", f"sysctl {name}", f"sysctl {name} is {have}, the baseline has {want}",
                                want, have, [Evidence(facts.sysctls.origins.get(name, "sysctl"), have), where],
                                fix=fix))
    return out


def _compare_cmdline(b: Baseline, facts: Facts) -> list[Finding]:
    wanted = ((b.data.get("kernel") or {}).get("cmdline")) or {}
    if not wanted:
        return []
    if facts.cmdline.raw is None:
        return [_finding("cmdline", "kernel cmdline", "kernel command line not recorded", "recorded", "unknown",
                         [Evidence(facts.cmdline.origin, "missing")], severity=UNKNOWN)]
    params = facts.cmdline.params
    out = []
    for name, want in wanted.items():
        have = params.get(name)
        if have == want:
            continue
        shown = f"{name}={want}" if want else name
        fix = Fix(notes=f"Add {shown} to GRUB_CMDLINE_LINUX in /etc/default/grub (or the boot loader's "
                        "entry), run update-grub or grub2-mkconfig, and reboot.")
        observed = "absent" if have is None else (f"{name}={have}" if have else name)
        out.append(_finding("cmdline", f"cmdline {name}", f"kernel parameter {shown} expected, found {observed}",
                            shown, observed, [Evidence(facts.cmdline.origin, facts.cmdline.raw),
                                              Evidence("baseline", b.where("kernel", "cmdline", name=name))], fix=fix))
    return out


def compare(b: Baseline, facts: Facts) -> list[Finding]:
    """Every deviation of ``facts`` from baseline ``b``, or one ``pass`` finding."""
    out = _compare_groups(b, facts)
    for address, spec in (b.data.get("pci") or {}).items():
        out.extend(_compare_device(b, facts, address, spec))
    out.extend(_compare_sysctls(b, facts))
    out.extend(_compare_cmdline(b, facts))
    if not out:
        out.append(Finding(PASS, "node", f"node matches baseline {b.path}", check=CHECK_ID, category="baseline",
                           evidence=(Evidence("baseline", b.path),)))
    return out
