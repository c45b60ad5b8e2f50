"""Severity by lost PCIe bandwidth, shared by the PCIe checks.

Links, path words and chipset detection live in :mod:`doctor.derived`; fix builders in :mod:`doctor.fixes`.
"""

from __future__ import annotations

#: Severity thresholds: fraction of the path's expected bandwidth lost.
HIGH_LOSS = 0.5
MEDIUM_LOSS = 0.25


def severity_for_loss(loss: float) -> str:
    """``high`` at half the bandwidth or worse, ``medium`` from a quarter, else ``low``."""
    if loss >= HIGH_LOSS:
        return "high"
    if loss >= MEDIUM_LOSS:
        return "medium"
    return "low"
