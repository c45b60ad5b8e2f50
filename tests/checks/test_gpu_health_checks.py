"""gpu.xid_errors and gpu.row_remap on the HGX fixture with a kernel log or nvidia-smi state overlaid."""

from __future__ import annotations

from tests.helpers import facts, findings_of


def test_healthy_fixture_stays_quiet_at_low_and_above() -> None:
    for check_id in ("gpu.xid_errors", "gpu.row_remap"):
        found = findings_of(facts(), check_id)
        assert not [x for x in found if x.severity in ("critical", "high", "medium", "low")]
