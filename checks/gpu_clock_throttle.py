"""gpu.clock_throttle: clock event reasons that slow a GPU (hardware slowdown, thermal, power cap)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact, cmd
from doctor.registry import check

#: reason -> severity whenever it is active (NVML ``nvmlClocksEventReason*``).
HARDWARE = {"hw_slowdown": HIGH, "hw_thermal_slowdown": HIGH, "hw_power_brake_slowdown": HIGH,
            "sw_thermal_slowdown": MEDIUM}
#: The power cap is normal at full load; it matters only on a busy GPU (low) or when activity is unknown (info).
POWER_CAP = "sw_power_cap"
#: Never a problem: the GPU is idle, or the user set application/sync-boost clocks.
BENIGN = frozenset({"gpu_idle", "applications_clocks_setting", "sync_boost", "display_clocks_setting"})
MEANING = {HIGH: "the board or a hardware sensor forces clocks down, whatever the workload.",
           MEDIUM: "the driver lowers clocks to stay under the thermal target.",
           LOW: "clocks are held at the power limit under load (normal at TDP; costly if the limit was lowered).",
           INFO: "clocks are held at the power limit; whether the GPU was busy is unknown."}
IMPACT = {HIGH: 40.0, MEDIUM: 20.0, LOW: 5.0, INFO: 1.0}
REFERENCES = (
    "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",
    "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
    "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html",
)
NOTES = {
    "hw_slowdown": "HW Slowdown is asserted by the board (thermal or power-brake signal). Check inlet "
                   "temperature and fans, PSU redundancy and cabling, and the BIOS power-brake policy (some "
                   "vendors throttle when high-power PCIe devices exceed a share of PSU capacity).",
    "hw_thermal_slowdown": "The GPU is above its hardware thermal limit: check airflow, fan policy, blanking "
                           "panels, inlet temperature and heatsink contact.",
    "hw_power_brake_slowdown": "An external power brake is asserted (PSU failure or redundancy lost, or a BIOS "
                               "power-capping policy): check PSUs and the BMC event log.",
    "sw_thermal_slowdown": "The driver lowers clocks because the GPU nears its thermal target: improve cooling.",
    POWER_CAP: "Clocks are held to the power limit. Compare `Power Limit` with `Default Power Limit`; restore "
               "a lowered limit with `nvidia-smi -i <gpu> -pl <default watts>`.",
}


def _active(gpu: Gpu) -> list[str]:
    reasons = gpu.runtime.clock_event_reasons if gpu.runtime else {}
    return sorted(k for k, v in reasons.items() if v and k not in BENIGN)


def _grade(gpu: Gpu, active: list[str]) -> str | None:
    levels = [HARDWARE[r] for r in active if r in HARDWARE]
    if POWER_CAP in active:
        activity = gpu.activity
        levels.append(LOW if activity == "busy" else INFO if activity == "unknown" else "")
    return next((level for level in (HIGH, MEDIUM, LOW, INFO) if level in levels), None)


@check("gpu.clock_throttle", "GPU clock slowdown (thermal, power brake, power cap)", "gpu")
def gpu_clock_throttle(facts: Facts) -> Iterator[Finding]:
    """High for active hardware slowdown/thermal/power-brake reasons, medium for software thermal,
    low for the software power cap on a busy GPU. The idle reason is never a fault."""
    gpus = facts.gpus.gpus
    if not gpus:
        return
    where = facts.gpus.runtime_origin or "nvidia-smi"
    looked = [g for g in gpus if g.runtime is not None and g.runtime.clock_event_reasons]
    if not looked:
        missing = facts.gpus.runtime_missing or "the driver's view lists no clock event reasons"
        yield Finding(UNKNOWN, "node", "GPU clock event reasons not recorded",
                      detail="Without NVML or nvidia-smi output, thermal or power-brake slowdown cannot be seen.",
                      evidence=(Evidence("GPU runtime state", missing),))
        return
    flagged = 0
    for gpu in looked:
        active = _active(gpu)
        level = _grade(gpu, active)
        if level is None:
            continue
        flagged += 1
        shown = [r for r in active if r in HARDWARE or level in (LOW, INFO)]
        rt = gpu.runtime
        label = gpu_label(facts, gpu.address)
        yield Finding(
            level, label, f"clocks held down by {', '.join(shown)}",
            detail=f"{label} ({gpu.activity}, utilisation "
                   f"{'?' if rt is None or rt.util_gpu is None else f'{rt.util_gpu:g} %'}) reports active "
                   f"clock event reasons {', '.join(active)}: {MEANING[level]}",
            evidence=(Evidence(where, f"{label}: " + ", ".join(f"{r} Active" for r in active)),),
            expected="no slowdown reason active (gpu_idle is fine)", observed=", ".join(active),
            impact=Impact(IMPACT[level], "lower SM clocks: proportionally lower throughput while it lasts"),
            fix=Fix(notes=" ".join(NOTES[r] for r in shown if r in NOTES) + " Watch it with `"
                    + cmd("nvidia-smi", "-i", gpu.address, "-q", "-d", "PERFORMANCE,TEMPERATURE,POWER") + "`."),
            references=REFERENCES, confidence=0.9 if gpu.activity == "busy" else 0.7)
    if not flagged:
        yield Finding(PASS, "node", f"no clock slowdown reason active on {len(looked)} GPUs",
                      evidence=(Evidence(where, "clock event reasons: none but idle/application clocks"),))
