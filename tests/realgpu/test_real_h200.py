"""A real H200 node recorded by this project (fixtures/real-h200-vm/PROVENANCE.md): a healthy VM."""

from __future__ import annotations

from doctor.facts import Facts
from doctor.findings import FAIL_LEVELS, at_least
from doctor.runner import run_checks
from doctor.sources import open_source
from tests.helpers import FIXTURES

H200 = FIXTURES / "real-h200-vm"


def _facts() -> Facts:
    return Facts(open_source(str(H200)))


def test_h200_gpu_is_read_from_the_recording() -> None:
    facts = _facts()
    gpus = list(facts.gpus.gpus)
    assert [g.name for g in gpus] == ["NVIDIA H200"]
    assert gpus[0].address == "0000:00:06.0"
    dev = facts.pci.get("0000:00:06.0")
    assert dev is not None and dev.cur_speed == 32.0 and dev.cur_width == 16 and dev.max_speed == 32.0


def test_h200_vm_has_no_finding_at_low_or_above() -> None:
    result = run_checks(_facts())
    bad = [f"{f.check} {f.severity} {f.subject}: {f.title}" for f in result.findings
           if at_least(str(f.severity), FAIL_LEVELS[-2])]
    assert bad == []
    assert result.inventory  # the inventory was built from the recording
    titles = " ".join(f.title for f in result.findings)
    assert "virtual machine" in titles
