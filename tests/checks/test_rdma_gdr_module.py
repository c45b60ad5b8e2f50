"""Check rdma.gdr_module (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import healthy, pairs, run_check

VERSION = "proc/driver/nvidia/version"




def _no_peermem() -> dict:
    text = (healthy() / "proc/modules").read_text()
    kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("nvidia_peermem "))
    return {"proc/modules": kept}


def test_no_peermem_and_proprietary_module_is_high() -> None:
    found = run_check(_no_peermem(), "rdma.gdr_module")
    assert pairs(found) == [("node", "high")]
    assert found[0].fix.runtime == ("modprobe nvidia-peermem",)
    assert "/etc/modules-load.d/nvidia-peermem.conf" in found[0].fix.persistent[0]
    assert "modprobe -r nvidia-peermem" in found[0].fix.rollback


def test_peermem_sysfs_file_or_open_module_is_enough() -> None:
    with_file = {**_no_peermem(), "sys/module/nvidia_peermem/version": "550.90.07\n"}
    assert pairs(run_check(with_file, "rdma.gdr_module")) == [("node", "pass")]
    open_module = {**_no_peermem(), VERSION: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  "
                                             "Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri May 31 2024\n"}
    found = run_check(open_module, "rdma.gdr_module")
    assert pairs(found) == [("node", "pass")] and "DMA-BUF" in found[0].title


def test_no_active_rdma_port_is_silent() -> None:
    down = {f"sys/class/infiniband/mlx5_{i}/ports/1/state": "1: DOWN\n" for i in range(8)}
    assert run_check({**_no_peermem(), **down}, "rdma.gdr_module") == []
    efa = {f"sys/class/infiniband/mlx5_{i}/ports/1/link_layer": "Unknown\n" for i in range(8)}
    assert run_check({**_no_peermem(), **efa}, "rdma.gdr_module") == []  # EFA-like ports: the efa driver does GDR
