"""Check numa.kernel_policy (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, sick
from tests.helpers import facts, findings_of


def test_kernel_policy_balancing_low_zone_reclaim_medium() -> None:
    found = findings_of(facts(base=sick()), "numa.kernel_policy")
    assert [(x.subject, x.severity) for x in found] == [("kernel.numa_balancing", "low")]
    zr = findings_of(facts({"proc/sys/vm/zone_reclaim_mode": "1\n"}, base=healthy()), "numa.kernel_policy")
    assert [(x.subject, x.severity) for x in zr] == [("vm.zone_reclaim_mode", "medium")]
    assert zr[0].fix.runtime == ("sysctl -w vm.zone_reclaim_mode=0",)
    assert "sysctl -w vm.zone_reclaim_mode=1" in zr[0].fix.rollback
