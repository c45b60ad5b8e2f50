"""Check gpu.persistence_mode (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import GPU3, SMI_XML, gpu_xml, pairs, run_check, smi_text


def test_persistence_disabled_is_low_with_persistenced_fix() -> None:
    changes = gpu_xml(GPU3, "<persistence_mode>Enabled<", "<persistence_mode>Disabled<")
    found = run_check(changes, "gpu.persistence_mode")
    assert pairs(found) == [("node", "low")]
    assert "GPU 3 (0000:3c:00.0)" in found[0].detail and "1 of 8" in found[0].title
    assert "systemctl enable --now nvidia-persistenced" in found[0].fix.persistent
    assert "nvidia-smi -pm 1" in found[0].fix.runtime and found[0].fix.rollback


def test_persistence_not_reported_is_silent() -> None:
    text = smi_text().replace("<persistence_mode>Enabled</persistence_mode>", "")
    assert run_check({SMI_XML: text}, "gpu.persistence_mode") == []
