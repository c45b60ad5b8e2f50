"""Parsers for ``nvidia-smi nvlink -s`` (per-link speed) and ``nvidia-smi nvlink -e`` (error counters).

Formats as printed by nvidia-smi (driver 470-560) and kept by sosreport's nvidia plugin
(``sos_commands/nvidia/nvidia-smi_nvlink_-s`` / ``_-e``); samples follow public recordings
(an RTX A6000 NVLink-bridge benchmark README for ``-s``, including the all-inactive message, and
the ``"\\t Link 0: Replay Errors: 12"`` lines test harnesses parse for ``-e``)::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-72979150-8ec9-e8bb-dbc6-fae365a5367c)
    \t Link 0: 26.562 GB/s
    \t Link 1: <inactive>
    GPU 2: NVIDIA RTX A6000 (UUID: GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3)
    NVML: Unable to retrieve NVLink information as all links are inActive

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-72979150-8ec9-e8bb-dbc6-fae365a5367c)
    \t Link 0: Replay Errors: 0
    \t Link 0: Recovery Errors: 0
    \t Link 0: CRC Errors: 0

On a single H200 without NVLink peers (driver 580.159.04) both commands print nothing and exit 0:
an empty output means "no NVLink", not "not recorded".

Both parsers never raise; lines they do not understand are skipped.
"""

from __future__ import annotations

import re
from dataclasses import field

from doctor.lazyre import lazy
from doctor.record import record

__all__ = ["NvlinkGpu", "parse_nvlink_errors", "parse_nvlink_status"]

_GPU_RE = lazy(r"^GPU\s+(?P<index>\d+):\s*(?P<name>.*?)\s*(?:\(UUID:\s*(?P<uuid>[^)\s]+)\s*\))?\s*$")
_SPEED_RE = lazy(r"^\s*Link\s+(?P<link>\d+):\s*(?P<value>.*?)\s*$")
_ERR_RE = lazy(r"^\s*Link\s+(?P<link>\d+):\s*(?P<name>[A-Za-z][A-Za-z0-9 _-]*?)\s*:\s*(?P<value>-?\d+)\s*$")
_GBS_RE = lazy(r"^(?P<n>\d+(?:\.\d+)?)\s*GB/s$", re.IGNORECASE)
MAX_LINKS = 64


@record
class NvlinkGpu:
    """One GPU's links: ``speeds`` link -> GB/s (None: inactive), ``errors`` link -> {counter: value}."""

    index: int
    name: str | None
    uuid: str | None
    speeds: dict[int, float | None] = field(default_factory=dict)
    errors: dict[int, dict[str, int]] = field(default_factory=dict)
    all_inactive: bool = False  # "NVML: Unable to retrieve NVLink information as all links are inActive"


def _sections(text: str) -> list[tuple[re.Match[str], list[str]]]:
    out: list[tuple[re.Match[str], list[str]]] = []
    if not isinstance(text, str):
        return out
    for line in text.splitlines()[:100_000]:
        m = _GPU_RE.match(line.strip())
        if m:
            out.append((m, []))
        elif out:
            out[-1][1].append(line)
    return out


def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """``nvidia-smi nvlink -s``: per GPU, each link's speed or None for ``<inactive>``."""
    gpus = []
    for m, lines in _sections(text):
        speeds: dict[int, float | None] = {}
        inactive_all = False
        for line in lines:
            if "all links are inactive" in line.lower():
                inactive_all = True
                continue
            s = _SPEED_RE.match(line)
            if not s or int(s.group("link")) >= MAX_LINKS:
                continue
            value = s.group("value")
            gbs = _GBS_RE.match(value)
            if gbs:
                speeds[int(s.group("link"))] = float(gbs.group("n"))
            elif "inactive" in value.lower():
                speeds[int(s.group("link"))] = None
        gpus.append(NvlinkGpu(int(m.group("index")), m.group("name") or None, m.group("uuid"), speeds=speeds,
                              all_inactive=inactive_all))
    return tuple(gpus)


def parse_nvlink_errors(text: str) -> tuple[NvlinkGpu, ...]:
    """``nvidia-smi nvlink -e``: per GPU and link, counters keyed ``replay``, ``recovery``, ``crc`` (lower case,
    ``Errors`` dropped; other counters newer drivers print keep their own words)."""
    gpus = []
    for m, lines in _sections(text):
        errors: dict[int, dict[str, int]] = {}
        for line in lines:
            e = _ERR_RE.match(line)
            if not e or int(e.group("link")) >= MAX_LINKS:
                continue
            name = re.sub(r"\s*errors?$", "", e.group("name").strip(), flags=re.IGNORECASE).lower() or "errors"
            errors.setdefault(int(e.group("link")), {})[name] = int(e.group("value"))
        gpus.append(NvlinkGpu(int(m.group("index")), m.group("name") or None, m.group("uuid"), errors=errors))
    return tuple(gpus)
