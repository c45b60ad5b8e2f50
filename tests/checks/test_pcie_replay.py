"""pcie.replay: replay totals graded by magnitude, saying that one sample cannot show growth."""

from __future__ import annotations

import pytest

from tests.checks.smi_overlay import SMI, smi
from tests.helpers import SICK, facts, findings_of

CHECK = "pcie.replay"


def test_zero_replays_pass() -> None:
    assert [f.severity for f in findings_of(facts(), CHECK)] == ["pass"]


@pytest.mark.parametrize(("count", "severity"), [(3, "low"), (250, "medium"), (48_213, "high")])
def test_replays_graded_by_magnitude(count: int, severity: str) -> None:
    (f,) = findings_of(facts({SMI: smi({7: {"replay_counter": str(count)}})}), CHECK)
    assert f.severity == severity and f.subject.startswith("GPU 7") and f"{count} PCIe replays" in f.title
    assert "One sample" in f.detail and f.fix.runtime == ("nvidia-smi -q -d PCIE -i 7",)


def test_counter_not_reported_is_not_judged() -> None:
    xml = smi({i: {"replay_counter": "N/A"} for i in range(8)})
    assert findings_of(facts({SMI: xml}), CHECK) == []


def test_sick_fixture_flags_the_x8_gpu_replays() -> None:
    (f,) = findings_of(facts(base=SICK), CHECK)
    assert (f.severity, f.subject, f.observed) == ("medium", "GPU 3 (0000:3c:00.0)", "1843")
