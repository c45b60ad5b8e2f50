"""The PCIe generation table: link speed (GT/s) -> generation and per-lane bandwidth. The only copy."""

from __future__ import annotations

#: GB/s per lane and direction, by link speed in GT/s (128b/130b from Gen3 on; Gen6 FLIT approx.)
LANE_GBPS = {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938, 64.0: 7.563}
#: PCIe generation by link speed in GT/s.
GENERATION = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
SPEED_OF_GEN = {v: k for k, v in GENERATION.items()}


def generation(speed: float | int | None) -> int | None:
    """``16.0`` -> 4; an unknown rate (``24.0``) or None -> None."""
    if speed is None:
        return None
    try:
        return GENERATION.get(float(speed))
    except (TypeError, ValueError):
        return None


def link_bandwidth(speed: float | None, width: int | None) -> float | None:
    """GB/s per direction of a link, or None if either value is unknown."""
    if speed is None or width is None:
        return None
    lane = LANE_GBPS.get(speed)
    if lane is None:
        lane = min(LANE_GBPS.items(), key=lambda kv: abs(kv[0] - speed))[1]
    return lane * width
