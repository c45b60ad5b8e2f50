"""Check kernel.thp (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from doctor.findings import Finding
from tests.checks.pcie_overlays import healthy
from tests.helpers import facts, findings_of

THP = "sys/kernel/mm/transparent_hugepage"


def _run(changes: dict, check_id: str) -> list[Finding]:
    return findings_of(facts(changes, base=healthy()), check_id)


def _pairs(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found]


def test_thp_defrag_always_is_low_madvise_passes() -> None:
    found = _run({f"{THP}/defrag": "[always] defer defer+madvise madvise never\n"}, "kernel.thp")
    assert _pairs(found) == [("transparent_hugepage", "low")]
    assert "madvise" in found[0].fix.runtime[0] and "always" in found[0].fix.rollback[0]
    ok = _run({f"{THP}/defrag": "always defer defer+madvise [madvise] never\n"}, "kernel.thp")
    assert _pairs(ok) == [("transparent_hugepage", "pass")]
