"""NVLink links and counters (``nvidia-smi nvlink -s`` / ``-e``) and the Fabric Manager's version.

Missing evidence stays explicit: ``status_missing`` / ``errors_missing`` carry the reason a command's
output is absent, and an empty ``gpus`` never means "no NVLink" on its own.
"""

from __future__ import annotations

import re
from dataclasses import replace

from doctor.lazyre import lazy
from doctor.parsers.nvlink import NvlinkGpu, parse_nvlink_errors, parse_nvlink_status
from doctor.record import record
from doctor.sources import Source

_FM_VERSION_RE = lazy(r"version\s+is\s*:\s*(?P<v>[0-9][0-9.]*)", re.IGNORECASE)


@record
class Nvlink:
    """Per GPU index: link speeds (from ``-s``) and error counters (from ``-e``) merged."""

    gpus: tuple[NvlinkGpu, ...]
    status_origin: str | None
    errors_origin: str | None
    status_missing: str | None
    errors_missing: str | None

    def gpu(self, index: int) -> NvlinkGpu | None:
        return next((g for g in self.gpus if g.index == index), None)


@record
class FabricManager:
    """``nv-fabricmanager --version``: ``version`` or why it is unknown."""

    version: str | None
    origin: str
    missing: str | None


def build_nvlink(src: Source) -> Nvlink:
    status = src.command("nvlink_status")
    errors = src.command("nvlink_errors")
    by_index: dict[int, NvlinkGpu] = {g.index: g for g in parse_nvlink_status(status.text or "")}
    for g in parse_nvlink_errors(errors.text or ""):
        base = by_index.get(g.index)
        by_index[g.index] = replace(base, errors=g.errors) if base else g
    return Nvlink(tuple(by_index[i] for i in sorted(by_index)),
                  status.where if status.text is not None else None, errors.where if errors.text is not None else None,
                  None if status.text is not None else (status.reason or "not recorded"),
                  None if errors.text is not None else (errors.reason or "not recorded"))


def build_fabric_manager(src: Source) -> FabricManager:
    out = src.command("fabricmanager_version")
    m = _FM_VERSION_RE.search(out.text or "")
    if m:
        return FabricManager(m.group("v"), out.where, None)
    return FabricManager(None, out.where, out.reason or f"{out.where} holds no version")
