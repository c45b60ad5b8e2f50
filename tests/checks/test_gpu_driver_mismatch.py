"""Check gpu.driver_mismatch (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import SMI_XML, pairs, run_check

VERSION = "proc/driver/nvidia/version"




def test_kernel_module_older_than_nvml_is_critical() -> None:
    old = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
    found = run_check({VERSION: old}, "gpu.driver_mismatch")
    assert pairs(found) == [("node", "critical")]
    assert "535.183.01" in found[0].title and "550.90.07" in found[0].title
    assert "modprobe nvidia" in found[0].fix.runtime


def test_nvidia_smi_refusing_with_mismatch_is_critical() -> None:
    text = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.127\n"
    found = run_check({SMI_XML: text}, "gpu.driver_mismatch")
    assert pairs(found) == [("node", "critical")]
    assert found[0].evidence[0].source == SMI_XML
