"""gpu.bar1: a BAR1 window smaller than the framebuffer on data-centre GPUs only."""

from __future__ import annotations

from tests.checks.pcie_overlays import attrs
from tests.checks.smi_overlay import GPUS, SMI, smi
from tests.helpers import facts, findings_of

CHECK = "gpu.bar1"


def test_full_size_bar1_passes() -> None:
    assert [f.severity for f in findings_of(facts(), CHECK)] == ["pass"]


def test_256_mib_bar1_is_medium_with_bios_advice_only() -> None:
    (f,) = findings_of(facts({SMI: smi({6: {"bar1_memory_usage/total": "256 MiB"}})}), CHECK)
    assert f.severity == "medium" and f.subject.startswith("GPU 6") and "256 MiB" in f.title
    assert f.fix.runtime == () and "Above 4G" in f.fix.notes and "Resizable BAR" in f.fix.notes


def test_consumer_gpu_with_small_bar1_is_not_judged() -> None:
    changes = {SMI: smi({6: {"bar1_memory_usage/total": "256 MiB", "product_name": "NVIDIA GeForce RTX 4090"}}),
               **attrs(GPUS[6], **{"class": "0x030000"})}
    found = findings_of(facts(changes), CHECK)
    assert [f.severity for f in found] == ["pass"] and "7 data-centre GPUs" in found[0].title
