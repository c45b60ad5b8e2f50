"""Check gpu.persistence_mode (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from doctor.findings import Finding
from tests.checks.pcie_overlays import GPU3, SMI_XML, healthy
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


def test_persistence_disabled_is_low_with_persistenced_fix() -> None:
    changes = _gpu_xml(GPU3, "<persistence_mode>Enabled<", "<persistence_mode>Disabled<")
    found = _run(changes, "gpu.persistence_mode")
    assert _pairs(found) == [("node", "low")]
    assert "GPU 3 (0000:3c:00.0)" in found[0].detail and "1 of 8" in found[0].title
    assert "systemctl enable --now nvidia-persistenced" in found[0].fix.persistent
    assert "nvidia-smi -pm 1" in found[0].fix.runtime and found[0].fix.rollback


def test_persistence_not_reported_is_silent() -> None:
    text = _xml().replace("<persistence_mode>Enabled</persistence_mode>", "")
    assert _run({SMI_XML: text}, "gpu.persistence_mode") == []
