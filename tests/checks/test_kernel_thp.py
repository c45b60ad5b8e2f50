"""Check kernel.thp (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import pairs, run_check

THP = "sys/kernel/mm/transparent_hugepage"




def test_thp_defrag_always_is_low_madvise_passes() -> None:
    found = run_check({f"{THP}/defrag": "[always] defer defer+madvise madvise never\n"}, "kernel.thp")
    assert pairs(found) == [("transparent_hugepage", "low")]
    assert "madvise" in found[0].fix.runtime[0] and "always" in found[0].fix.rollback[0]
    ok = run_check({f"{THP}/defrag": "always defer defer+madvise [madvise] never\n"}, "kernel.thp")
    assert pairs(ok) == [("transparent_hugepage", "pass")]
