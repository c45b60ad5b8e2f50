"""gpu.mig: MIG on GPUs that the inference server uses whole; pending MIG mode changes."""

from __future__ import annotations

from tests.checks.smi_overlay import SMI, smi
from tests.helpers import HEALTHY, facts, findings_of

CHECK = "gpu.mig"
ROOT_ENV = "proc/4242/environ"


def test_healthy_passes() -> None:
    assert [f.severity for f in findings_of(facts(), CHECK)] == ["pass"]


def test_mig_on_a_gpu_the_server_uses_whole_is_high() -> None:
    (f,) = findings_of(facts({SMI: smi({3: {"current_mig": "Enabled", "pending_mig": "Enabled"}})}), CHECK)
    assert f.severity == "high" and f.subject.startswith("GPU 3")
    assert "nvidia-smi -i 3 -mig 0" in f.fix.runtime and f.fix.rollback[0] == "nvidia-smi -i 3 -mig 1"
    assert any(e.source == "proc/4242/environ" for e in f.evidence)


def test_mig_used_through_mig_devices_passes() -> None:
    env = (HEALTHY / ROOT_ENV).read_bytes() + b"CUDA_VISIBLE_DEVICES=MIG-4b3f5e6a-1c2d-5e8f-9a0b-1c2d3e4f5a6b\0"
    found = findings_of(facts({SMI: smi({3: {"current_mig": "Enabled", "pending_mig": "Enabled"}}),
                               ROOT_ENV: env}), CHECK)
    assert [f.severity for f in found] == ["pass"] and "1 with MIG" in found[0].title


def test_pending_mig_change_is_medium() -> None:
    (f,) = findings_of(facts({SMI: smi({0: {"pending_mig": "Enabled"}})}), CHECK)
    assert f.severity == "medium" and f.fix.runtime == ("nvidia-smi -r -i 0",)
    assert f.fix.rollback == ("nvidia-smi -i 0 -mig 0",)


def test_gpus_without_mig_support_are_not_judged() -> None:
    xml = smi({i: {"current_mig": "N/A", "pending_mig": "N/A"} for i in range(8)})
    assert findings_of(facts({SMI: xml}), CHECK) == []


def test_mig_gpu_outside_the_servers_visible_devices_is_left_alone() -> None:
    env = (HEALTHY / ROOT_ENV).read_bytes() + b"CUDA_VISIBLE_DEVICES=0,1,2,4,5,6,7\0"
    found = findings_of(facts({SMI: smi({3: {"current_mig": "Enabled", "pending_mig": "Enabled"}}),
                               ROOT_ENV: env}), CHECK)
    assert [f.severity for f in found] == ["pass"]
    env = (HEALTHY / ROOT_ENV).read_bytes() + b"CUDA_VISIBLE_DEVICES=0,1,2,3\0"
    (high,) = findings_of(facts({SMI: smi({3: {"current_mig": "Enabled", "pending_mig": "Enabled"}}),
                                 ROOT_ENV: env}), CHECK)
    assert high.severity == "high" and "CUDA_VISIBLE_DEVICES=0,1,2,3" in high.evidence[1].value
