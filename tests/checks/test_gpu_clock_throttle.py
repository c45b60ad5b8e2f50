"""Check gpu.clock_throttle (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from doctor.findings import Finding
from tests.checks.pcie_overlays import GPU2, GPU3, SMI_XML, busy, healthy
from tests.helpers import facts, findings_of


def _run(changes: dict, check_id: str) -> list[Finding]:
    return findings_of(facts(changes, base=healthy()), check_id)


def _pairs(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found]


def _xml() -> str:
    return (healthy() / SMI_XML).read_text()


def _gpu_xml(address: str, old: str, new: str, changes: dict | None = None) -> dict:
    """Replace ``old`` by ``new`` inside one GPU's block of the nvidia-smi XML (after ``changes``)."""
    text = str((changes or {}).get(SMI_XML) or _xml())
    head, *blocks = text.split("<gpu id=")
    for i, block in enumerate(blocks):
        if block.split('"', 2)[1].lower().endswith(address[5:]):
            assert old in block, old
            blocks[i] = block.replace(old, new)
    return {**(changes or {}), SMI_XML: "<gpu id=".join([head, *blocks])}


def _reason(address: str, name: str, changes: dict | None = None) -> dict:
    tag = f"clocks_event_reason_{name}"
    return _gpu_xml(address, f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>", changes)


def test_hw_slowdown_on_a_busy_gpu_is_high() -> None:
    found = _run(_reason(GPU2, "hw_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "high")]
    assert "hw_slowdown" in found[0].title and "PSU" in found[0].fix.notes
    assert "0000:3a:00.0" in found[0].fix.notes


def test_hw_power_brake_counts_even_on_an_idle_gpu() -> None:
    found = _run(_reason(GPU3, "hw_power_brake_slowdown"), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 3 (0000:3c:00.0)", "high")]


def test_sw_thermal_is_medium() -> None:
    found = _run(_reason(GPU2, "sw_thermal_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "medium")]
    assert "cooling" in found[0].fix.notes


def test_power_cap_is_low_only_while_busy() -> None:
    found = _run(_reason(GPU2, "sw_power_cap", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "low")]
    idle = _run(_reason(GPU2, "sw_power_cap"), "gpu.clock_throttle")
    assert _pairs(idle) == [("node", "pass")]


def test_gpu_idle_reason_is_never_throttling() -> None:
    found = findings_of(facts(base=healthy()), "gpu.clock_throttle")
    assert "clocks_event_reason_gpu_idle>Active<" in _xml()  # the fixture's idle GPUs
    assert _pairs(found) == [("node", "pass")]


def test_no_runtime_view_is_unknown() -> None:
    found = _run({SMI_XML: None}, "gpu.clock_throttle")
    assert _pairs(found) == [("node", "unknown")]
