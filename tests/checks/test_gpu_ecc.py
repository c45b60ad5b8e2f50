"""gpu.ecc: ECC disabled or an ECC mode change pending, on the HGX fixture's nvidia-smi XML."""

from __future__ import annotations

from tests.checks.smi_overlay import SMI, smi
from tests.helpers import SICK, facts, findings_of

CHECK = "gpu.ecc"


def test_healthy_and_sick_fixtures_pass() -> None:
    for base in (None, SICK):
        found = findings_of(facts(base=base) if base else facts(), CHECK)
        assert [f.severity for f in found] == ["pass"]


def test_ecc_disabled_is_medium_with_enable_reset_and_rollback() -> None:
    (f,) = findings_of(facts({SMI: smi({2: {"current_ecc": "Disabled", "pending_ecc": "Disabled"}})}), CHECK)
    assert f.severity == "medium" and f.subject.startswith("GPU 2") and "0000:3a:00.0" in f.subject
    assert f.fix.runtime == ("nvidia-smi -i 2 -e 1", "nvidia-smi -r -i 2")
    assert f.fix.rollback == ("nvidia-smi -i 2 -e 0", "nvidia-smi -r -i 2")
    assert "current Disabled, pending Disabled" in f.evidence[0].value


def test_pending_change_is_medium_and_rollback_cancels_it() -> None:
    (f,) = findings_of(facts({SMI: smi({5: {"pending_ecc": "Disabled"}})}), CHECK)
    assert f.severity == "medium" and "pending" in f.title and f.subject.startswith("GPU 5")
    assert f.fix.runtime == ("nvidia-smi -r -i 5",) and f.fix.rollback == ("nvidia-smi -i 5 -e 1",)


def test_gpus_without_ecc_reporting_are_not_judged() -> None:
    xml = smi({i: {"current_ecc": "N/A", "pending_ecc": "N/A"} for i in range(8)})
    assert findings_of(facts({SMI: xml}), CHECK) == []
