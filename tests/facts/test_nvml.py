"""NVML (pynvml) is used when present; its absence or failure is a normal answer."""

from __future__ import annotations

import types
from typing import Any

from doctor.facts.nvml import nvml_report


class _Err(Exception):
    pass


def fake_nvml(count: int = 2, fail_init: bool = False) -> Any:
    """A stand-in for pynvml answering like an idle two-GPU H100 node."""
    def not_supported(*_a: Any) -> Any:
        raise _Err("Not Supported")

    m = types.SimpleNamespace()
    m.nvmlInit = (lambda: (_ for _ in ()).throw(_Err("Driver Not Loaded"))) if fail_init else (lambda: None)
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: count
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=f"00000000:{0x18 + 2 * h:02X}:00.0".encode())
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetUUID = lambda h: f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd"
    m.nvmlDeviceGetSerial = not_supported
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=0 if h == 0 else 93, memory=1)
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x1 if h == 0 else 0x0
    m.nvmlDeviceGetCurrentClocksThrottleReasons = not_supported
    m.nvmlDeviceGetPerformanceState = lambda h: 0
    m.nvmlDeviceGetPersistenceMode = lambda h: 1
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=4300 + h, usedGpuMemory=2 << 30)]
    m.nvmlDeviceGetCurrPcieLinkGeneration = lambda h: 1 if h == 0 else 5
    m.nvmlDeviceGetMaxPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetGpuMaxPcieLinkGeneration = lambda h: 5
    m.nvmlDeviceGetCurrPcieLinkWidth = lambda h: 16
    m.nvmlDeviceGetMaxPcieLinkWidth = lambda h: 16
    m.nvmlDeviceGetPcieReplayCounter = not_supported
    m.nvmlSystemGetDriverVersion = lambda: "550.90.07"
    m.nvmlSystemGetCudaDriverVersion = lambda: 12040
    return m


def test_nvml_maps_into_the_nvidia_smi_shape() -> None:
    report, reason = nvml_report(fake_nvml())
    assert reason is None and report is not None
    idle, busy = report.gpus
    assert (idle.address, idle.pstate, idle.util_gpu, idle.idle, idle.link_gen_current) == (
        "0000:18:00.0", "P0", 0.0, True, 1)
    assert (busy.address, busy.util_gpu, busy.idle, busy.link_gen_current) == ("0000:1a:00.0", 93.0, False, 5)
    assert idle.serial is None and idle.replays_since_reset is None  # Not Supported is missing, not zero
    assert [p.pid for p in busy.processes] == [4301] and busy.processes[0].used_memory_mib == 2048
    assert (report.driver_version, report.cuda_version) == ("550.90.07", "12.4")


def test_nvml_absent_or_failing_is_a_reason_not_an_error() -> None:
    report, reason = nvml_report(fake_nvml(fail_init=True))
    assert report is None and "Driver Not Loaded" in (reason or "")
    report, reason = nvml_report()  # this machine has no NVIDIA driver (or no pynvml)
    assert report is None or report.gpus is not None
    if report is None:
        assert reason


def test_nvml_power_limit_and_application_clocks() -> None:
    """mW and MHz as NVML reports them; a GPU without the call (older pynvml) reads as not reported."""
    m = fake_nvml()
    m.nvmlDeviceGetPowerManagementLimit = lambda h: 400000 if h == 0 else 700000
    m.nvmlDeviceGetPowerManagementDefaultLimit = lambda h: 700000
    m.nvmlDeviceGetApplicationsClock = lambda h, kind: 1200 if kind == 0 else 2619
    m.nvmlDeviceGetDefaultApplicationsClock = lambda h, kind: 1755 if kind == 0 else 2619
    report, _ = nvml_report(m)
    assert report is not None
    lowered, normal = report.gpus
    assert (lowered.power_limit_w, lowered.default_power_limit_w) == (400.0, 700.0)
    assert normal.power_limit_w == 700.0
    assert (lowered.app_clock_graphics_mhz, lowered.default_app_clock_graphics_mhz) == (1200.0, 1755.0)
    assert lowered.app_clock_mem_mhz == lowered.default_app_clock_mem_mhz == 2619.0
    plain, _ = nvml_report(fake_nvml())
    assert plain is not None and plain.gpus[0].power_limit_w is None


def test_nvml_data_centre_state_ecc_mig_compute_bar1_fabric() -> None:
    m = fake_nvml()
    m.nvmlDeviceGetEccMode = lambda h: (1, 0) if h == 0 else (1, 1)
    m.nvmlDeviceGetMigMode = lambda h: (0, 1) if h == 1 else (0, 0)
    m.nvmlDeviceGetComputeMode = lambda h: 3 if h == 1 else 0
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=81559 << 20)
    m.nvmlDeviceGetBAR1MemoryInfo = lambda h: types.SimpleNamespace(bar1Total=(256 if h else 131072) << 20)
    m.nvmlDeviceGetGpuFabricInfo = lambda h: types.SimpleNamespace(state=3 if h == 0 else 2, status=0)
    report, _ = nvml_report(m)
    assert report is not None
    first, second = report.gpus
    assert (first.ecc_mode, first.ecc_mode_pending, first.compute_mode) == (True, False, "Default")
    assert (second.mig_mode_pending, second.compute_mode, second.bar1_total_mib) == (True, "Exclusive_Process", 256)
    assert (first.fb_total_mib, first.fabric_state, first.fabric_status) == (81559, "Completed", "Success")
    assert (second.fabric_state, second.fabric_status) == ("In Progress", None)


def test_nvml_without_data_centre_calls_leaves_them_unknown() -> None:
    report, _ = nvml_report(fake_nvml())
    assert report is not None
    g = report.gpus[0]
    assert (g.ecc_mode, g.compute_mode, g.bar1_total_mib, g.fabric_state) == (None, None, None, None)
