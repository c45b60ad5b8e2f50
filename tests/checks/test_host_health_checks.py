"""Host health checks together (persistence mode, clock throttling, AER, governor, GDR, driver, THP) on healthy."""

from __future__ import annotations

from tests.checks.pcie_overlays import healthy
from tests.helpers import facts, findings_of


def test_healthy_fixture_passes_or_is_silent() -> None:
    f = facts(base=healthy())
    expect = {"gpu.persistence_mode": ["pass"], "gpu.clock_throttle": ["pass"], "rdma.gdr_module": ["pass"],
              "gpu.driver_mismatch": ["pass"], "pcie.aer": ["unknown"], "cpu.governor": [], "kernel.thp": []}
    for check_id, severities in expect.items():
        assert [x.severity for x in findings_of(f, check_id)] == severities, check_id
