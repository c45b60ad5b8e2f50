"""Deviations from the known-good baseline given with ``--baseline`` (see docs/checks.md#baseline-deviation).

Runs only when a baseline was given. Each difference between the node and the baseline (GPU and
NIC counts and models, per slot the model, link generation and width, NUMA node and driver,
sysctls, kernel parameters) is a finding with the baseline's ``file:line`` as evidence; a node
that matches gets one ``pass``. ``gnd baseline`` writes the file (:mod:`doctor.fleet.baseline`).
"""

from __future__ import annotations

import re
from typing import Any

from doctor.derived.pcie import expected_gen, model_id
from doctor.facts import Facts
from doctor.facts.baseline import Baseline
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Actor, Evidence, Finding, Fix, Impact, cmd
from doctor.fixes import make, sysctl_fix
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check
from doctor.secrets import MASK

CHECK_ID = "baseline.deviation"
#: Severity of each kind of deviation (a lower link than the baseline; the other cases are below).
SEVERITY = {"gpus.count": HIGH, "nics.count": MEDIUM, "gpus.models": HIGH, "nics.models": MEDIUM,
            "pci.missing": HIGH, "pci.model": HIGH, "pci.kind": MEDIUM, "pci.width": HIGH, "pci.gen": HIGH,
            "pci.better": LOW, "pci.numa_node": MEDIUM, "pci.driver": HIGH, "sysctl": MEDIUM, "cmdline": MEDIUM}
#: Impact score per severity when no better estimate exists.
#: kernel parameters whose values a baseline compares (performance settings; any other value is masked
#: on the host, so only its presence is compared)
CMDLINE_PARAMS = ("iommu", "iommu.passthrough", "intel_iommu", "amd_iommu", "pcie_aspm", "pcie_aspm.policy", "pci",
                  "pcie_acs_override", "isolcpus", "nohz_full", "rcu_nocbs", "irqaffinity", "intel_pstate",
                  "amd_pstate", "processor.max_cstate", "intel_idle.max_cstate", "idle", "numa_balancing",
                  "transparent_hugepage", "default_hugepagesz", "hugepagesz", "hugepages", "mitigations", "nosmt",
                  "vfio-pci.ids", "vfio_pci.ids", "nvidia.*", "nvidia_drm.*", "rdma.*", "numa", "hpet", "clocksource",
                  "tsc", "kvm.*", "mem_encrypt", "preempt", "console")
SCORE = {HIGH: 40.0, MEDIUM: 20.0, LOW: 5.0, UNKNOWN: 0.0}
#: Deviations the node's administrator undoes (a driver bound, a sysctl, a kernel parameter); every other
#: kind (devices, models, slots, links, NUMA placement) is the hardware's or its firmware's (the check's own)
OS_KINDS = frozenset({"pci.driver", "sysctl", "cmdline"})


def _finding(kind: str, subject: str, title: str, expected: object, observed: object,
             evidence: list[Evidence], severity: str | None = None, fix: Fix | None = None,
             score: float | None = None, detail: str = "") -> Finding:
    sev = severity or SEVERITY[kind]
    return Finding(severity=sev, subject=subject, title=title, detail=detail, evidence=tuple(evidence),
                   subject_id=subject.removeprefix("sysctl "),
                   expected=str(expected), observed=str(observed),
                   impact=Impact(SCORE.get(sev, 0.0) if score is None else score,
                                 N_('differs from the known-good node this baseline was written from')),
                   fix=fix or Fix(), check=CHECK_ID, category="baseline", acts=Actor.OS if kind in OS_KINDS else None)


def _compare_groups(b: Baseline, facts: Facts) -> list[Finding]:
    out = []
    for group, devs in (("gpus", facts.pci.gpus), ("nics", facts.pci.nics)):
        spec = b.data.get(group) or {}
        word = group[:-1].upper()
        ev = Evidence(facts.pci.origin or "pci", f"{len(devs)} {word}s: " + join(', ', (d.address for d in devs)))
        if "count" in spec and spec["count"] != len(devs):
            out.append(_finding(f"{group}.count", "node", N_('{n_devs} {word}s where the baseline has {spec}', n_devs=len(devs), word=word, spec=spec['count']),
                                spec["count"], len(devs), [ev, Evidence("baseline", b.where(group, name="count"))]))
        if "models" in spec:
            allowed = {str(m).lower() for m in spec["models"]}
            for dev in devs:
                model = model_id(dev)
                if model and model not in allowed:
                    out.append(_finding(f"{group}.models", dev.address, N_('{word} model {model} is not in the baseline', word=word, model=model),
                                        join(', ', sorted(allowed)), model,
                                        [Evidence(dev.attr("device"), model),
                                         Evidence("baseline", b.where(group, name="models"))]))
    return out


def _link_fix(address: str) -> Fix:
    return make("inspect_pci", flags="-vvv", address=address,
                notes=N_("Compare LnkCap with LnkSta; reseat the card or riser, check the slot's bifurcation setting in the BIOS, then collect again."))


def _compare_device(b: Baseline, facts: Facts, address: str, spec: dict[str, Any]) -> list[Finding]:
    dev = facts.pci.get(address)
    where = Evidence("baseline", b.where("pci", address))
    if dev is None:
        return [_finding("pci.missing", address, N_('{get} {address} in the baseline is missing', get=spec.get('kind', 'device'), address=address),
                         f"a {spec.get('kind', 'device')} at {address}", "absent",
                         [Evidence(facts.pci.origin or "pci", f"no device {address}"), where],
                         fix=Fix(notes=N_('Check that the card is seated and powered, and the BIOS enumerates it (`{v}`).', v=cmd('lspci', '-s', address))))]
    out: list[Finding] = []
    model = model_id(dev)
    if "model" in spec and model and model != spec["model"].lower():
        out.append(_finding("pci.model", address, N_('{address} is {model}, the baseline has {spec}', address=address, model=model, spec=spec['model']),
                            spec["model"], model, [Evidence(dev.attr("device"), model), where]))
    kind = "gpu" if dev.is_gpu else "nic" if dev.is_nic else "other"
    if "kind" in spec and spec["kind"] != kind:
        out.append(_finding("pci.kind", address, N_('{address} is a {kind}, the baseline has a {spec}', address=address, kind=kind, spec=spec['kind']),
                            spec["kind"], kind, [Evidence(dev.attr("class"), kind), where]))
    if "width" in spec:
        want = spec["width"]
        if dev.cur_width is None:
            out.append(_finding("pci.width", address, N_('link width of {address} not recorded', address=address), f"x{want}", "unknown",
                                [Evidence(dev.attr("current_link_width"), "missing"), where], severity=UNKNOWN))
        elif dev.cur_width != want:
            worse = dev.cur_width < want
            out.append(_finding("pci.width", address, N_('{address} link runs x{cur_width}, the baseline has x{want}', address=address, cur_width=dev.cur_width, want=want),
                                f"x{want}", f"x{dev.cur_width}",
                                [Evidence(dev.attr("current_link_width"), str(dev.cur_width)), where],
                                severity=None if worse else SEVERITY["pci.better"], fix=_link_fix(address),
                                score=100.0 * (1 - dev.cur_width / want) if worse and want else None))
    if "gen" in spec:
        want = spec["gen"]
        gen, how = expected_gen(facts, dev)
        if gen is None:
            out.append(_finding("pci.gen", address, N_('link generation of {address} not recorded', address=address), f"gen {want}",
                                "unknown", [Evidence(dev.attr("current_link_speed"), "missing"), where],
                                severity=UNKNOWN))
        elif gen != want:
            worse = gen < want
            attr = "current_link_speed" if how == "current" else "max_link_speed"
            speed = dev.cur_speed if how == "current" else dev.max_speed
            out.append(_finding("pci.gen", address, N_('{address} link is gen {gen} ({how}), the baseline has gen {want}', address=address, gen=gen, how=how, want=want),
                                f"gen {want}", f"gen {gen}", [Evidence(dev.attr(attr), f"{speed} GT/s"), where],
                                severity=None if worse else SEVERITY["pci.better"], fix=_link_fix(address),
                                score=100.0 * (1 - 2 ** (gen - want)) if worse else None))
    if "numa_node" in spec and dev.numa_node != spec["numa_node"]:
        out.append(_finding("pci.numa_node", address,
                            N_('{address} reports NUMA node {numa_node}, the baseline has {spec}', address=address, numa_node=dev.numa_node, spec=spec['numa_node']),
                            spec["numa_node"], dev.numa_node, [Evidence(dev.attr("numa_node"), str(dev.numa_node)), where],
                            fix=Fix(notes=N_('A changed NUMA node means a different slot or a BIOS setting (NPS/SNC, ACPI SRAT); check both.'))))
    if "driver" in spec and (dev.driver or "") != spec["driver"]:
        fix = make("inspect_pci", flags="-k", address=address,
                   notes=N_('Bind {address} to {v}: check driver_override, vfio-pci.ids on the kernel command line and modprobe.d.', address=address, v=spec['driver'] or 'no driver'))
        out.append(_finding("pci.driver", address,
                            N_('{address} is bound to {v}, the baseline has {v2}', address=address, v=dev.driver or 'no driver', v2=spec['driver'] or 'no driver'), spec["driver"] or "none", dev.driver or "none",
                            [Evidence(dev.attr("driver"), dev.driver or "no driver link"), where], fix=fix))
    return out


def _compare_sysctls(b: Baseline, facts: Facts) -> list[Finding]:
    out = []
    for name, want_raw in (b.data.get("sysctl") or {}).items():
        want = join(' ', str(want_raw).split())
        have = facts.sysctls.get(name)
        where = Evidence("baseline", b.where("sysctl", name=name))
        if have is None:
            out.append(_finding("sysctl", f"sysctl {name}", N_('sysctl {name} not recorded', name=name), want, "unknown",
                                [Evidence("sysctl", f"{name} missing from this source"), where], severity=UNKNOWN))
        elif join(' ', have.split()) != want:
            conf = "90-gnd-baseline-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:30] + ".conf"
            fix = sysctl_fix({name: want}, facts.sysctls, conf)
            out.append(_finding("sysctl", f"sysctl {name}", N_('sysctl {name} is {have}, the baseline has {want}', name=name, have=have, want=want),
                                want, have, [Evidence(facts.sysctls.origins.get(name, "sysctl"), have), where],
                                fix=fix))
    return out


def _compare_cmdline(b: Baseline, facts: Facts) -> list[Finding]:
    wanted = ((b.data.get("kernel") or {}).get("cmdline")) or {}
    if not wanted:
        return []
    if facts.cmdline.raw is None:
        return [_finding("cmdline", N_('kernel cmdline'), N_('kernel command line not recorded'), "recorded", "unknown",
                         [Evidence(facts.cmdline.origin, "missing")], severity=UNKNOWN)]
    params = facts.cmdline.params
    out = []
    for name, want in wanted.items():
        have = params.get(name)
        if have == want or (have == MASK and want is not None):
            continue  # equal, or a value no check reads (masked on the host): only its presence is compared
        shown = f"{name}={want}" if want else name
        fix = Fix(notes=N_("Add {shown} to GRUB_CMDLINE_LINUX in /etc/default/grub (or the boot loader's entry), run update-grub or grub2-mkconfig, and reboot.", shown=shown))
        observed = "absent" if have is None else (f"{name}={have}" if have else name)
        out.append(_finding("cmdline", f"cmdline {name}", N_('kernel parameter {shown} expected, found {observed}', shown=shown, observed=observed),
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
        out.append(Finding(PASS, "node", N_('node matches baseline {path}', path=b.path), check=CHECK_ID, category="baseline",
                           evidence=(Evidence("baseline", b.path),)))
    return out


@check(CHECK_ID, "Deviations from the known-good baseline", "baseline", acts="hardware", requires="baseline",
       fixes=("inspect_pci", "sysctl"), reads=reads(params=CMDLINE_PARAMS),
       needs=("pci", "cmdline", "sysctls"))
def baseline_deviation(facts: Facts) -> list[Finding]:
    """Every deviation of the node from its known-good baseline, or one pass."""
    return [] if facts.baseline is None else compare(facts.baseline, facts)
