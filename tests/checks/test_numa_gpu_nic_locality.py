"""Check numa.gpu_nic_locality (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy
from tests.helpers import facts, findings_of

GPU2 = "0000:3a:00.0"


def test_gpu_nic_locality_sys_is_high_and_healthy_passes() -> None:
    base = healthy()
    socket0_nics = {f"sys/bus/pci/devices/0000:{b}:00.0": None for b in ("19", "1b", "3b", "3d")}
    found = findings_of(facts(socket0_nics, base=base), "numa.gpu_nic_locality")
    high = [x for x in found if x.severity == "high"]
    assert {x.subject for x in high} == {"0000:18:00.0", "0000:1a:00.0", GPU2, "0000:3c:00.0"}
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.gpu_nic_locality")] == ["pass"]
