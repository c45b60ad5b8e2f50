"""The driver's view of GPUs through NVML (``pynvml`` from nvidia-ml-py), in nvidia-smi's shape.

Absence of the library or of the driver is a normal answer: ``(None, reason)``.
"""

from __future__ import annotations

from typing import Any

from doctor.facts.util import normalise_bdf
from doctor.parsers.nvidia_smi import SmiGpu, SmiProcess, SmiReport

#: NVML clock event reason bits (nvml.h ``nvmlClocksEventReason*``)
REASON_BITS = {
    "gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40, "hw_power_brake_slowdown": 0x80,
}
#: nvml.h ``NVML_COMPUTEMODE_*`` -> the names nvidia-smi prints
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
#: nvml.h ``NVML_GPU_FABRIC_STATE_*`` -> nvidia-smi's words
FABRIC_STATES = {1: "Not Started", 2: "In Progress", 3: "Completed"}


#: nvml.h ``nvmlDeviceGpuRecoveryAction_t`` -> ``SmiGpu.recovery_action``
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain", 6: "bus_reset", 7: "system_reboot"}
#: ``nvmlValueType_t`` -> the member of ``nvmlValue_t`` that holds it
_VALUE_MEMBERS = {1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}

#: nvmlClockType_t
CLOCK_GRAPHICS, CLOCK_MEM = 0, 2


def _none(*_: Any) -> None:
    return None


def _watts(milliwatts: Any) -> float | None:
    return milliwatts / 1000.0 if isinstance(milliwatts, int) and milliwatts > 0 else None


def _mhz(value: Any) -> float | None:
    return float(value) if isinstance(value, int) and value > 0 else None


def _call(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # NVML raises NVMLError_NotSupported and friends per field
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _pair(value: Any) -> tuple[bool | None, bool | None]:
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return tuple(None if v is None else bool(v) for v in value)  # type: ignore[return-value]
    return None, None


def _mib(value: Any, attr: str) -> int | None:
    n = getattr(value, attr, None)
    return n >> 20 if isinstance(n, int) else None


def _datacentre(nvml: Any, handle: Any) -> dict[str, Any]:
    """ECC and MIG modes (current, pending), compute mode, BAR1 and framebuffer size, fabric state."""
    ecc, ecc_pending = _pair(_call(getattr(nvml, "nvmlDeviceGetEccMode", None) or (lambda h: None), handle))
    _, mig_pending = _pair(_call(getattr(nvml, "nvmlDeviceGetMigMode", None) or (lambda h: None), handle))
    mode = _call(getattr(nvml, "nvmlDeviceGetComputeMode", None) or (lambda h: None), handle)
    fabric = _call(getattr(nvml, "nvmlDeviceGetGpuFabricInfo", None) or (lambda h: None), handle)
    state = FABRIC_STATES.get(getattr(fabric, "state", None))  # type: ignore[arg-type]
    status = getattr(fabric, "status", None)
    return {
        "ecc_mode": ecc, "ecc_mode_pending": ecc_pending, "mig_mode_pending": mig_pending,
        "compute_mode": COMPUTE_MODES.get(mode) if isinstance(mode, int) else None,
        "fb_total_mib": _mib(_call(getattr(nvml, "nvmlDeviceGetMemoryInfo", None) or (lambda h: None), handle), "total"),
        "bar1_total_mib": _mib(_call(getattr(nvml, "nvmlDeviceGetBAR1MemoryInfo", None) or (lambda h: None),
                                     handle), "bar1Total"),
        "fabric_state": state,
        "fabric_status": (None if state != "Completed" or not isinstance(status, int)
                          else "Success" if status == 0 else f"NVML error {status}"),
    }


def _field(nvml: Any, handle: Any, name: str) -> int | None:
    """One integer field value (``nvmlDeviceGetFieldValues``); None when the library or driver lacks it."""
    field_id = getattr(nvml, name, None)
    values = _call(getattr(nvml, "nvmlDeviceGetFieldValues", _none), handle, [field_id]) if field_id else None
    value = values[0] if values else None
    if value is None or getattr(value, "nvmlReturn", None) != 0:
        return None
    member = _VALUE_MEMBERS.get(getattr(value, "valueType", 1), "uiVal")
    number = getattr(getattr(value, "value", None), member, None)
    return number if isinstance(number, int) else None


def _recovery(nvml: Any, handle: Any) -> dict[str, Any]:
    """The recovery action (R565+ field 230), else the deprecated reset and drain-and-reset status fields."""
    action = _field(nvml, handle, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION")
    if action is not None:
        return {"recovery_action": RECOVERY_ACTIONS.get(action, "unrecognised"),
                "recovery_text": f"NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = {action}"}
    reset = _field(nvml, handle, "NVML_FI_DEV_RESET_STATUS")
    drain = _field(nvml, handle, "NVML_FI_DEV_DRAIN_AND_RESET_STATUS")
    if reset is None and drain is None:
        return {}
    return {"recovery_action": "drain_and_reset" if drain else "reset" if reset else "none",
            "recovery_text": f"NVML_FI_DEV_RESET_STATUS = {reset}, NVML_FI_DEV_DRAIN_AND_RESET_STATUS = {drain}"}


def nvml_report(nvml: Any = None) -> tuple[SmiReport | None, str | None]:
    """Query every GPU through NVML; ``nvml`` may be injected (tests pass a fake module)."""
    if nvml is None:
        try:
            import pynvml as nvml  # type: ignore[import-not-found,no-redef]
        except Exception:
            return None, "pynvml (nvidia-ml-py) is not installed"
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return None, f"NVML unavailable: {exc}"
    try:
        count = nvml.nvmlDeviceGetCount()
        gpus = []
        for i in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            pci = _call(nvml.nvmlDeviceGetPciInfo, handle)
            bus_id = _text(getattr(pci, "busId", None)) if pci is not None else None
            address = normalise_bdf(bus_id or "") if bus_id else None
            if address is None:
                continue
            util = _call(nvml.nvmlDeviceGetUtilizationRates, handle)
            reasons_mask = _call(getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                                 or nvml.nvmlDeviceGetCurrentClocksThrottleReasons, handle)
            reasons = ({k: bool(reasons_mask & bit) for k, bit in REASON_BITS.items()}
                       if isinstance(reasons_mask, int) else {})
            pstate = _call(nvml.nvmlDeviceGetPerformanceState, handle)
            persistence = _call(nvml.nvmlDeviceGetPersistenceMode, handle)
            procs = _call(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
            limit = _call(getattr(nvml, "nvmlDeviceGetPowerManagementLimit", _none), handle)
            default_limit = _call(getattr(nvml, "nvmlDeviceGetPowerManagementDefaultLimit", _none), handle)
            app_clock = getattr(nvml, "nvmlDeviceGetApplicationsClock", _none)
            default_clock = getattr(nvml, "nvmlDeviceGetDefaultApplicationsClock", _none)
            gpus.append(SmiGpu(
                address=address,
                product_name=_text(_call(nvml.nvmlDeviceGetName, handle)),
                uuid=_text(_call(nvml.nvmlDeviceGetUUID, handle)),
                serial=_text(_call(nvml.nvmlDeviceGetSerial, handle)),
                pstate=f"P{pstate}" if isinstance(pstate, int) and pstate < 32 else None,
                util_gpu=float(util.gpu) if util is not None else None,
                link_gen_current=_call(nvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
                link_gen_max=_call(nvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
                link_gen_device_max=_call(getattr(nvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", None) or
                                          (lambda h: None), handle),
                link_gen_host_max=None,
                link_width_current=_call(nvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
                link_width_max=_call(nvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
                persistence_mode=None if persistence is None else bool(persistence),
                clock_event_reasons=reasons,
                idle=reasons.get("gpu_idle") if reasons else None,
                replays_since_reset=_call(nvml.nvmlDeviceGetPcieReplayCounter, handle),
                processes=tuple(
                    SmiProcess(pid=int(p.pid), name=None,
                               used_memory_mib=(int(p.usedGpuMemory) >> 20) if isinstance(
                                   getattr(p, "usedGpuMemory", None), int) else None, type="C")
                    for p in procs
                ),
                power_limit_w=_watts(limit),
                default_power_limit_w=_watts(default_limit),
                app_clock_graphics_mhz=_mhz(_call(app_clock, handle, CLOCK_GRAPHICS)),
                default_app_clock_graphics_mhz=_mhz(_call(default_clock, handle, CLOCK_GRAPHICS)),
                app_clock_mem_mhz=_mhz(_call(app_clock, handle, CLOCK_MEM)),
                default_app_clock_mem_mhz=_mhz(_call(default_clock, handle, CLOCK_MEM)),
                **_datacentre(nvml, handle),
                **_recovery(nvml, handle),
            ))
        driver = _text(_call(nvml.nvmlSystemGetDriverVersion))
        cuda = _call(nvml.nvmlSystemGetCudaDriverVersion)
        cuda_text = f"{cuda // 1000}.{(cuda % 1000) // 10}" if isinstance(cuda, int) else None
        return SmiReport(driver_version=driver, cuda_version=cuda_text, timestamp=None, gpus=tuple(gpus)), None
    except Exception as exc:
        return None, f"NVML query failed: {exc}"
    finally:
        _call(nvml.nvmlShutdown)
