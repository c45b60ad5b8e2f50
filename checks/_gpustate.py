"""Shared helpers for the data-centre GPU state checks (gpu.ecc, gpu.mig, gpu.compute_mode, gpu.bar1,
pcie.replay, gpu.fabric): which GPUs have a driver view, and how to name and address them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from checks.gpu_persistence_mode import is_datacentre
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import Evidence

if TYPE_CHECKING:
    from doctor.parsers.nvidia_smi import SmiGpu

__all__ = ["gpu_label", "is_datacentre", "reported", "smi_evidence", "where"]


def where(facts: Facts) -> str:
    """The file or interface the GPUs' runtime state came from."""
    return facts.gpus.runtime_origin or "nvidia-smi -q -x"


def reported(facts: Facts) -> list[tuple[Gpu, SmiGpu]]:
    """GPUs with a driver view (NVML or nvidia-smi), in index order."""
    return [(g, g.runtime) for g in facts.gpus.gpus if g.runtime is not None]


def smi_evidence(facts: Facts, gpu: Gpu, text: str) -> Evidence:
    return Evidence(where(facts), f"{gpu_label(facts, gpu.address)}: {text}")
