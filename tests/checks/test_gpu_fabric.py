"""gpu.fabric: fabric state per GPU, the Fabric Manager process and its version, quiet without NVSwitch."""

from __future__ import annotations

from dataclasses import replace

from tests.checks import unseen_nodes as u
from tests.checks.smi_overlay import SMI, smi
from tests.helpers import SICK, facts, findings_of

CHECK = "gpu.fabric"
FM_CMDLINE = "proc/2314/cmdline"
FM_VERSION = "commands/nv-fabricmanager_--version"


def test_fixtures_pass_with_the_fabric_manager_running() -> None:
    for f in (facts(), facts(base=SICK)):
        (found,) = findings_of(f, CHECK)
        assert found.severity == "pass" and "Fabric Manager running" in found.title
        assert any("version 550.90.07" in e.value for e in found.evidence)


def test_gpu_with_fabric_in_progress_is_critical() -> None:
    (f,) = findings_of(facts({SMI: smi({4: {"fabric/state": "In Progress", "fabric/status": "N/A"}})}), CHECK)
    assert f.severity == "critical" and f.subject.startswith("GPU 4") and "802" in f.detail
    assert f.fix.runtime == ("systemctl restart nvidia-fabricmanager",)


def test_stopped_fabric_manager_is_critical() -> None:
    (f,) = findings_of(facts({FM_CMDLINE: None, "proc/2314/status": None}), CHECK)
    assert f.severity == "critical" and f.subject == "node" and "without a running Fabric Manager" in f.title
    assert f.fix.runtime == ("systemctl start nvidia-fabricmanager",)
    assert f.fix.persistent == ("systemctl enable nvidia-fabricmanager",)
    assert f.fix.rollback == ("systemctl disable --now nvidia-fabricmanager",)


def test_version_mismatch_is_critical_and_names_both_versions() -> None:
    (f,) = findings_of(facts({FM_VERSION: "Fabric Manager version is : 535.183.01\n"}), CHECK)
    assert f.severity == "critical" and f.expected == "550.90.07" and f.observed == "535.183.01"
    assert "nvidia-fabricmanager-550=550.90.07" in f.fix.notes


def test_pcie_only_gpus_are_quiet() -> None:
    assert findings_of(u.l40s().facts(), CHECK) == []


def test_a100_nvswitch_system_without_fabric_state_still_needs_the_manager() -> None:
    node = u.dgx_a100()
    assert [x.severity for x in findings_of(node.facts(), CHECK)] == ["pass"]
    files = {k: v for k, v in node.files.items() if not k.startswith("proc/2314/")}
    (f,) = findings_of(replace(node, files=files).facts(), CHECK)
    assert f.severity == "critical"
