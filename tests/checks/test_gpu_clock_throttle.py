"""Check gpu.clock_throttle (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import GPU2, GPU3, SMI_XML, busy, gpu_xml, healthy, pairs, run_check, smi_text
from tests.helpers import facts, findings_of


def _reason(address: str, name: str, changes: dict | None = None) -> dict:
    tag = f"clocks_event_reason_{name}"
    return gpu_xml(address, f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>", changes)


def test_hw_slowdown_on_a_busy_gpu_is_high() -> None:
    found = run_check(_reason(GPU2, "hw_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert pairs(found) == [("GPU 2 (0000:3a:00.0)", "high")]
    assert "hw_slowdown" in found[0].title and "PSU" in found[0].fix.notes
    assert found[0].acts == "hardware"  # the board forces the clocks down: cooling, PSU, BMC
    assert "0000:3a:00.0" in found[0].fix.notes


def test_hw_power_brake_counts_even_on_an_idle_gpu() -> None:
    found = run_check(_reason(GPU3, "hw_power_brake_slowdown"), "gpu.clock_throttle")
    assert pairs(found) == [("GPU 3 (0000:3c:00.0)", "high")]


def test_sw_thermal_is_medium() -> None:
    found = run_check(_reason(GPU2, "sw_thermal_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert pairs(found) == [("GPU 2 (0000:3a:00.0)", "medium")]
    assert "cooling" in found[0].fix.notes


def test_power_cap_is_low_only_while_busy() -> None:
    found = run_check(_reason(GPU2, "sw_power_cap", busy(GPU2)), "gpu.clock_throttle")
    assert pairs(found) == [("GPU 2 (0000:3a:00.0)", "low")]
    idle = run_check(_reason(GPU2, "sw_power_cap"), "gpu.clock_throttle")
    assert pairs(idle) == [("node", "pass")]


def test_gpu_idle_reason_is_never_throttling() -> None:
    found = findings_of(facts(base=healthy()), "gpu.clock_throttle")
    assert "clocks_event_reason_gpu_idle>Active<" in smi_text()  # the fixture's idle GPUs
    assert pairs(found) == [("node", "pass")]


def test_no_runtime_view_is_unknown() -> None:
    found = run_check({SMI_XML: None}, "gpu.clock_throttle")
    assert pairs(found) == [("node", "unknown")]
