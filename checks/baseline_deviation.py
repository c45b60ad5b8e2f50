"""Deviations from the known-good baseline given with ``--baseline`` (see docs/checks.md#baseline-deviation).

Runs only when a baseline was given. Each difference between the node and the baseline (GPU and
NIC counts and models, per slot the model, link generation and width, NUMA node and driver,
sysctls, kernel parameters) is a finding with the baseline's ``file:line`` as evidence; a node
that matches gets one ``pass``.
"""

from __future__ import annotations

from collections.abc import Iterable

from doctor.facts import Facts
from doctor.findings import Finding
from doctor.registry import check


@check("baseline.deviation", "Deviations from the known-good baseline", "baseline", requires="baseline",
       fixes=("inspect_pci", "sysctl"))
def baseline_deviation(facts: Facts) -> Iterable[Finding]:
    """Every deviation of the node from its known-good baseline, or one pass."""
    if facts.baseline is None:
        return []
    from doctor.fleet.baseline import compare  # only runs with --baseline: keep it off the plain check path

    return compare(facts.baseline, facts)
