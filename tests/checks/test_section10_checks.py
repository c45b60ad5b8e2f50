"""docs/checks.md (GPU health, AER, governor, GDR, THP): persistence mode, clock throttling, AER, CPU governor, GDR module, driver mismatch, THP."""

from __future__ import annotations

from doctor.findings import Finding
from tests.checks.pcie_overlays import DSP_GPU3, GPU2, GPU3, SMI_XML, attrs, busy, healthy, link
from tests.helpers import facts, findings_of

CPUFREQ = "sys/devices/system/cpu/cpu0/cpufreq"
THP = "sys/kernel/mm/transparent_hugepage"
VERSION = "proc/driver/nvidia/version"
COR_ZERO = "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n"
UNC_ZERO = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nTOTAL_ERR_{k} 0\n"


def _run(changes: dict, check_id: str) -> list[Finding]:
    return findings_of(facts(changes, base=healthy()), check_id)


def _pairs(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found]


def _xml() -> str:
    return (healthy() / SMI_XML).read_text()


def _gpu_xml(address: str, old: str, new: str, changes: dict | None = None) -> dict:
    """Replace ``old`` by ``new`` inside one GPU's block of the nvidia-smi XML (after ``changes``)."""
    text = str((changes or {}).get(SMI_XML) or _xml())
    head, *blocks = text.split("<gpu id=")
    for i, block in enumerate(blocks):
        if block.split('"', 2)[1].lower().endswith(address[5:]):
            assert old in block, old
            blocks[i] = block.replace(old, new)
    return {**(changes or {}), SMI_XML: "<gpu id=".join([head, *blocks])}


def _reason(address: str, name: str, changes: dict | None = None) -> dict:
    tag = f"clocks_event_reason_{name}"
    return _gpu_xml(address, f"<{tag}>Not Active</{tag}>", f"<{tag}>Active</{tag}>", changes)


def _aer(bdf: str, cor: int = 0, nonfatal: int = 0, fatal: int = 0) -> dict:
    return attrs(bdf, aer_dev_correctable=COR_ZERO.replace("BadTLP 0", f"BadTLP {cor}").replace(
                     "TOTAL_ERR_COR 0", f"TOTAL_ERR_COR {cor}").rstrip("\n"),
                 aer_dev_nonfatal=UNC_ZERO.format(k="NONFATAL").replace("DLP 0", f"DLP {nonfatal}").replace(
                     "TOTAL_ERR_NONFATAL 0", f"TOTAL_ERR_NONFATAL {nonfatal}").rstrip("\n"),
                 aer_dev_fatal=UNC_ZERO.format(k="FATAL").replace("MalfTLP 0", f"MalfTLP {fatal}").replace(
                     "TOTAL_ERR_FATAL 0", f"TOTAL_ERR_FATAL {fatal}").rstrip("\n"))


# --- the healthy fixture -------------------------------------------------------------------------


def test_healthy_fixture_passes_or_is_silent() -> None:
    f = facts(base=healthy())
    expect = {"gpu.persistence_mode": ["pass"], "gpu.clock_throttle": ["pass"], "rdma.gdr_module": ["pass"],
              "gpu.driver_mismatch": ["pass"], "pcie.aer": [], "cpu.governor": [], "kernel.thp": []}
    for check_id, severities in expect.items():
        assert [x.severity for x in findings_of(f, check_id)] == severities, check_id


# --- gpu.persistence_mode --------------------------------------------------------------------------


def test_persistence_disabled_is_low_with_persistenced_fix() -> None:
    changes = _gpu_xml(GPU3, "<persistence_mode>Enabled<", "<persistence_mode>Disabled<")
    found = _run(changes, "gpu.persistence_mode")
    assert _pairs(found) == [("node", "low")]
    assert "GPU 3 (0000:3c:00.0)" in found[0].detail and "1 of 8" in found[0].title
    assert "systemctl enable --now nvidia-persistenced" in found[0].fix.persistent
    assert "nvidia-smi -pm 1" in found[0].fix.runtime and found[0].fix.rollback


def test_persistence_not_reported_is_silent() -> None:
    text = _xml().replace("<persistence_mode>Enabled</persistence_mode>", "")
    assert _run({SMI_XML: text}, "gpu.persistence_mode") == []


# --- gpu.clock_throttle ----------------------------------------------------------------------------


def test_hw_slowdown_on_a_busy_gpu_is_high() -> None:
    found = _run(_reason(GPU2, "hw_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "high")]
    assert "hw_slowdown" in found[0].title and "PSU" in found[0].fix.notes
    assert "0000:3a:00.0" in found[0].fix.notes


def test_hw_power_brake_counts_even_on_an_idle_gpu() -> None:
    found = _run(_reason(GPU3, "hw_power_brake_slowdown"), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 3 (0000:3c:00.0)", "high")]


def test_sw_thermal_is_medium() -> None:
    found = _run(_reason(GPU2, "sw_thermal_slowdown", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "medium")]
    assert "cooling" in found[0].fix.notes


def test_power_cap_is_low_only_while_busy() -> None:
    found = _run(_reason(GPU2, "sw_power_cap", busy(GPU2)), "gpu.clock_throttle")
    assert _pairs(found) == [("GPU 2 (0000:3a:00.0)", "low")]
    idle = _run(_reason(GPU2, "sw_power_cap"), "gpu.clock_throttle")
    assert _pairs(idle) == [("node", "pass")]


def test_gpu_idle_reason_is_never_throttling() -> None:
    found = findings_of(facts(base=healthy()), "gpu.clock_throttle")
    assert "clocks_event_reason_gpu_idle>Active<" in _xml()  # the fixture's idle GPUs
    assert _pairs(found) == [("node", "pass")]


def test_no_runtime_view_is_unknown() -> None:
    found = _run({SMI_XML: None}, "gpu.clock_throttle")
    assert _pairs(found) == [("node", "unknown")]


# --- pcie.aer --------------------------------------------------------------------------------------


def test_correctable_errors_low_and_medium_with_a_narrow_link() -> None:
    found = _run(_aer(GPU3, cor=12), "pcie.aer")
    assert _pairs(found) == [("GPU 3 (0000:3c:00.0)", "low")]
    assert "12 correctable" in found[0].title and "firmware-first" in found[0].detail
    narrow = _run({**_aer(GPU3, cor=12), **link(GPU3, width=8)}, "pcie.aer")
    assert _pairs(narrow) == [("GPU 3 (0000:3c:00.0)", "medium")]
    assert "downgraded" in narrow[0].title


def test_uncorrectable_error_on_the_switch_port_above_a_gpu_is_high() -> None:
    found = _run({**_aer(GPU3), **_aer(DSP_GPU3, nonfatal=2)}, "pcie.aer")
    assert _pairs(found) == [(DSP_GPU3, "high")]
    assert "GPU 3" in found[0].detail and "2 nonfatal" in found[0].title
    assert f"lspci -vvv -s {DSP_GPU3}" in found[0].fix.notes


def test_zero_counters_pass_and_vm_is_silent() -> None:
    assert _pairs(_run(_aer(GPU3), "pcie.aer")) == [("node", "pass")]
    vm = {**_aer(GPU3, fatal=1), "sys/class/dmi/id/sys_vendor": "QEMU\n"}
    assert _run(vm, "pcie.aer") == []


# --- cpu.governor ----------------------------------------------------------------------------------


def _cpufreq(governor: str, driver: str, epp: str | None = None) -> dict:
    out = {f"{CPUFREQ}/scaling_governor": governor + "\n", f"{CPUFREQ}/scaling_driver": driver + "\n"}
    if epp:
        out[f"{CPUFREQ}/energy_performance_preference"] = epp + "\n"
    return out


def test_powersave_on_acpi_cpufreq_is_medium_with_rollback() -> None:
    found = _run(_cpufreq("powersave", "acpi-cpufreq"), "cpu.governor")
    assert _pairs(found) == [("cpu0", "medium")]
    assert "cpupower frequency-set -g performance" in found[0].fix.runtime
    assert "cpupower frequency-set -g powersave" in found[0].fix.rollback
    assert "tuned-adm profile latency-performance" in found[0].fix.persistent


def test_intel_pstate_powersave_is_fine_unless_epp_saves_power() -> None:
    assert _pairs(_run(_cpufreq("powersave", "intel_pstate", "balance_performance"), "cpu.governor")) == [
        ("cpu0", "pass")]
    found = _run(_cpufreq("powersave", "amd-pstate-epp", "balance_power"), "cpu.governor")
    assert _pairs(found) == [("cpu0", "medium")]
    assert any("balance_power" in r for r in found[0].fix.rollback)
    assert _run({}, "cpu.governor") == []  # not recorded: silent


# --- rdma.gdr_module -------------------------------------------------------------------------------


def _no_peermem() -> dict:
    text = (healthy() / "proc/modules").read_text()
    kept = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("nvidia_peermem "))
    return {"proc/modules": kept}


def test_no_peermem_and_proprietary_module_is_high() -> None:
    found = _run(_no_peermem(), "rdma.gdr_module")
    assert _pairs(found) == [("node", "high")]
    assert found[0].fix.runtime == ("modprobe nvidia-peermem",)
    assert "/etc/modules-load.d/nvidia-peermem.conf" in found[0].fix.persistent[0]
    assert "modprobe -r nvidia-peermem" in found[0].fix.rollback


def test_peermem_sysfs_file_or_open_module_is_enough() -> None:
    with_file = {**_no_peermem(), "sys/module/nvidia_peermem/version": "550.90.07\n"}
    assert _pairs(_run(with_file, "rdma.gdr_module")) == [("node", "pass")]
    open_module = {**_no_peermem(), VERSION: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  "
                                             "Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri May 31 2024\n"}
    found = _run(open_module, "rdma.gdr_module")
    assert _pairs(found) == [("node", "pass")] and "DMA-BUF" in found[0].title


def test_no_active_rdma_port_is_silent() -> None:
    down = {f"sys/class/infiniband/mlx5_{i}/ports/1/state": "1: DOWN\n" for i in range(8)}
    assert _run({**_no_peermem(), **down}, "rdma.gdr_module") == []
    efa = {f"sys/class/infiniband/mlx5_{i}/ports/1/link_layer": "Unknown\n" for i in range(8)}
    assert _run({**_no_peermem(), **efa}, "rdma.gdr_module") == []  # EFA-like ports: the efa driver does GDR


# --- gpu.driver_mismatch ---------------------------------------------------------------------------


def test_kernel_module_older_than_nvml_is_critical() -> None:
    old = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n"
    found = _run({VERSION: old}, "gpu.driver_mismatch")
    assert _pairs(found) == [("node", "critical")]
    assert "535.183.01" in found[0].title and "550.90.07" in found[0].title
    assert "modprobe nvidia" in found[0].fix.runtime


def test_nvidia_smi_refusing_with_mismatch_is_critical() -> None:
    text = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.127\n"
    found = _run({SMI_XML: text}, "gpu.driver_mismatch")
    assert _pairs(found) == [("node", "critical")]
    assert found[0].evidence[0].source == SMI_XML


# --- kernel.thp ------------------------------------------------------------------------------------


def test_thp_defrag_always_is_low_madvise_passes() -> None:
    found = _run({f"{THP}/defrag": "[always] defer defer+madvise madvise never\n"}, "kernel.thp")
    assert _pairs(found) == [("transparent_hugepage", "low")]
    assert "madvise" in found[0].fix.runtime[0] and "always" in found[0].fix.rollback[0]
    ok = _run({f"{THP}/defrag": "always defer defer+madvise [madvise] never\n"}, "kernel.thp")
    assert _pairs(ok) == [("transparent_hugepage", "pass")]
