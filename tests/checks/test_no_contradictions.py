"""No run asks for opposite changes (issue 13 item 7).

Every fixture (the committed trees, generated variants and the unseen node shapes) is checked; the
structured fix steps of its findings (an argv or a file write) are reduced to *effects* (a sysfs/procfs file written with a value, a
device bound to or away from a driver, a sysctl, an nvidia-smi mode, a systemd unit state) and the
test fails when two findings' runtime fixes set one thing to different values, or move devices of
one IOMMU group onto vfio-pci and off it at the same time.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.findings import Finding, Fix, FixStep
from doctor.sources import open_source
from doctor.sources.tree import Link
from fixtures.tools.make_node import HEALTHY as HEALTHY_SPEC
from fixtures.tools.make_node import SICK as SICK_SPEC
from tests.checks import unseen_nodes as u
from tests.checks.pcie_overlays import GPU3, attrs, node
from tests.checks.smi_overlay import generated
from tests.helpers import HEALTHY, SICK, facts, run

VFIO = Link("../../../../../../bus/pci/drivers/vfio-pci")
DEVICE = re.compile(r"/sys/bus/pci/devices/(?P<bdf>[^/]+)/driver_override$")
UNBIND = re.compile(r"/sys/bus/pci/drivers/(?P<driver>[^/]+)/unbind$")
OPPOSITE = {"start": "stop", "enable": "enable", "disable": "enable", "stop": "start"}


NODES: dict[str, Callable[[], Facts]] = {
    "healthy": lambda: facts(base=HEALTHY),
    "sick": lambda: facts(base=SICK),
    "gpu3-on-vfio-no-hypervisor": lambda: node(attrs(GPU3, driver=VFIO)),
    "sick-gpu7-on-vfio": lambda: generated(replace(SICK_SPEC, vfio_gpus=(7,))),
    "healthy-gpu2-on-vfio-dma": lambda: generated(replace(HEALTHY_SPEC, vfio_gpus=(2,), iommu_mode="dma-fq")),
    "dgx-a100": lambda: u.dgx_a100().facts(),
    "dgx-a100-nps4": lambda: u.dgx_a100(nps4=True, iommu="dma").facts(),
    "workstation-pch": lambda: u.workstation(gpu_behind_pch=True).facts(),
    "cloud-vm": lambda: u.cloud_vm(link_unknown=True).facts(),
    "gh200": lambda: u.gh200().facts(),
    "l40s-far": lambda: u.l40s(gpu0=u.L40S_NODES[1]).facts(),
    "passthrough": lambda: u.passthrough_host().facts(),
    "passthrough-no-hypervisor": lambda: u.passthrough_host(hypervisor=False).facts(),
}


def effects(step: FixStep) -> Iterator[tuple[str, str]]:
    """(thing, value) pairs a fix step sets; manual text and unknown commands set nothing we compare."""
    if step.heredoc:
        path, content = step.heredoc
        value = " ".join(content.split())
        dev = DEVICE.search(path)
        unbind = UNBIND.search(path)
        if dev:
            yield f"driver:{dev.group('bdf')}", value or "(default)"
        elif unbind:
            yield f"unbound:{value}", unbind.group("driver")
        elif not path.endswith("drivers_probe"):
            yield f"file:{path}", value
        return
    argv = list(step.argv)
    if argv[:2] == ["sysctl", "-w"]:
        for kv in argv[2:]:
            key, _, value = kv.partition("=")
            yield f"sysctl:{key}", value
    elif argv[:1] == ["nvidia-smi"] and "-i" in argv:
        gpu = argv[argv.index("-i") + 1]
        for flag in ("-e", "-mig", "-c", "-pm"):
            if flag in argv[1:] and argv.index(flag) + 1 < len(argv):
                yield f"nvidia-smi:{gpu}:{flag}", argv[argv.index(flag) + 1]
    elif argv[:1] == ["systemctl"] and len(argv) >= 3:
        verb = argv[1]
        for unit in (a for a in argv[2:] if not a.startswith("-")):
            if verb in ("start", "stop", "enable", "disable"):
                yield f"systemd:{unit}:{'active' if verb in ('start', 'stop') else 'enabled'}", \
                    "yes" if verb in ("start", "enable") else "no"
            if "--now" in argv and verb in ("enable", "disable"):
                yield f"systemd:{unit}:active", "yes" if verb == "enable" else "no"


def contradictions(f: Facts, found: list[Finding]) -> list[str]:
    seen: dict[str, tuple[str, str]] = {}
    out = []
    for finding in found:
        who = f"{finding.check} [{finding.subject}]"
        for step in finding.fix.phase("runtime"):
            for thing, value in effects(step):
                if thing in seen and seen[thing][0] != value and seen[thing][1] != who:
                    out.append(f"{who} sets {thing}={value!r} but {seen[thing][1]} sets {seen[thing][0]!r}")
                seen.setdefault(thing, (value, who))
    # a finding's runtime fix that is another finding's rollback undoes that finding's fix
    for a in found:
        for b in found:
            if a is b:
                continue
            back = {_action(s) for s in b.fix.phase("rollback")}
            undo = [s for s in a.fix.phase("runtime") if _action(s) in back and any(effects(s))]
            if undo:
                out.append(f"{a.check} [{a.subject}] runs {undo[0].text!r}, the rollback of {b.check} [{b.subject}]")
    # IOMMU groups: one finding moves a device off vfio-pci while another moves a group mate onto it
    groups = {d.address: d.iommu_group for d in f.pci.devices.values() if d.iommu_group}
    onto = {k.split(":", 1)[1]: v[1] for k, v in seen.items() if k.startswith("driver:") and v[0] == "vfio-pci"}
    off = {k.split(":", 1)[1]: v[1] for k, v in seen.items() if k.startswith("unbound:") and v[0] == "vfio-pci"}
    for a, who_a in onto.items():
        for b, who_b in off.items():
            if a != b and groups.get(a) and groups.get(a) == groups.get(b):
                out.append(f"{who_a} moves {a} onto vfio-pci while {who_b} moves {b} (same IOMMU group) off it")
    return out


def _action(step: FixStep) -> tuple[tuple[str, ...], tuple[str, str] | None]:
    """What a step does, whatever its phase, flags and key."""
    return step.argv, step.heredoc


def _fix(*runtime: FixStep, rollback: tuple[FixStep, ...] = ()) -> Fix:
    return Fix(steps=(*runtime, *rollback))


def test_sosreport_of_the_hgx_node_asks_for_nothing_contradictory(tmp_path: Path) -> None:
    root = tmp_path / "sosreport-hgx-sos-01"
    for name, text in u.sosreport_files(gpu_x8="0000:3c:00.0").items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    f = Facts(open_source(str(root)))
    assert f.source.kind == "sosreport" and contradictions(f, run(f).findings) == []


@pytest.mark.parametrize("name", sorted(NODES))
def test_no_two_findings_ask_for_opposite_changes(name: str) -> None:
    f = NODES[name]()
    found = run(f).findings
    assert contradictions(f, found) == []


def test_the_detector_sees_the_vfio_contradiction_it_guards_against() -> None:
    """The detector itself: the pre-fix vfio.binding advice (GPU back to nvidia, its NIC onto vfio) is caught."""
    f = node(attrs(GPU3, driver=VFIO))
    back = Finding("high", "GPU 3", "t", check="vfio.binding", fix=_fix(
        FixStep("runtime", heredoc=("/sys/bus/pci/drivers/vfio-pci/unbind", GPU3))))
    onto = Finding("medium", "GPU 3", "t", check="vfio.binding", fix=_fix(
        FixStep("runtime", heredoc=("/sys/bus/pci/devices/0000:3b:00.0/driver_override", "vfio-pci"))))
    assert len(contradictions(f, [back, onto])) == 1
    sysctl_a = Finding("low", "a", "t", check="a", fix=_fix(FixStep("runtime", ("sysctl", "-w", "vm.swappiness=1"))))
    sysctl_b = Finding("low", "b", "t", check="b", fix=_fix(FixStep("runtime", ("sysctl", "-w", "vm.swappiness=60"))))
    assert len(contradictions(f, [sysctl_a, sysctl_b])) == 1
    undo = Finding("low", "c", "t", check="c", fix=_fix(FixStep("runtime", ("nvidia-smi", "-i", "2", "-e", "0"))))
    ecc = Finding("medium", "d", "t", check="d", fix=_fix(
        FixStep("runtime", ("nvidia-smi", "-i", "2", "-e", "1")),
        rollback=(FixStep("rollback", ("nvidia-smi", "-i", "2", "-e", "0")),)))
    assert len(contradictions(f, [undo, ecc])) == 2  # -e set to 0 and to 1, and c runs the rollback of d
    manual = Finding("low", "e", "t", check="e", fix=Fix.from_text(runtime=("nvidia-smi -i 2 -e 0",)))
    assert contradictions(f, [manual, ecc]) == []  # display-only text is never run, so never compared
