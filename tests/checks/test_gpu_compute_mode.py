"""gpu.compute_mode: Prohibited and Exclusive_Process modes, graded by how many processes share the GPU."""

from __future__ import annotations

from tests.checks.smi_overlay import SMI, smi, with_process
from tests.helpers import facts, findings_of

CHECK = "gpu.compute_mode"


def test_default_mode_passes() -> None:
    assert [f.severity for f in findings_of(facts(), CHECK)] == ["pass"]


def test_prohibited_is_high() -> None:
    (f,) = findings_of(facts({SMI: smi({1: {"compute_mode": "Prohibited"}})}), CHECK)
    assert f.severity == "high" and f.subject.startswith("GPU 1")
    assert f.fix.runtime == ("nvidia-smi -i 1 -c DEFAULT",) and f.fix.rollback == ("nvidia-smi -i 1 -c PROHIBITED",)


def test_exclusive_with_one_process_is_low_and_with_two_is_medium() -> None:
    (low,) = findings_of(facts({SMI: smi({4: {"compute_mode": "Exclusive_Process"}})}), CHECK)
    assert low.severity == "low" and low.fix.rollback == ("nvidia-smi -i 4 -c EXCLUSIVE_PROCESS",)
    xml = with_process(4, 9001, text=smi({4: {"compute_mode": "Exclusive_Process"}}))
    (medium,) = findings_of(facts({SMI: xml}), CHECK)
    assert medium.severity == "medium" and "2 processes" in medium.title and "9001" in medium.evidence[0].value
