"""gpu.clock_throttle: clock event reasons that slow a GPU (hardware slowdown, thermal, power cap)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, UNKNOWN, Actor, Evidence, Finding, Fix, Impact, cmd
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: reason -> severity whenever it is active (NVML ``nvmlClocksEventReason*``).
HARDWARE = {"hw_slowdown": HIGH, "hw_thermal_slowdown": HIGH, "hw_power_brake_slowdown": HIGH,
            "sw_thermal_slowdown": MEDIUM}
#: The power cap is normal at full load; it matters only on a busy GPU (low) or when activity is unknown (info).
POWER_CAP = "sw_power_cap"
#: Never a problem: the GPU is idle, or the user set application/sync-boost clocks.
BENIGN = frozenset({"gpu_idle", "applications_clocks_setting", "sync_boost", "display_clocks_setting"})
MEANING = {HIGH: N_('the board or a hardware sensor forces clocks down, whatever the workload.'),
           MEDIUM: N_('the driver lowers clocks to stay under the thermal target.'),
           LOW: N_('clocks are held at the power limit under load (normal at TDP; costly if the limit was lowered).'),
           INFO: N_('clocks are held at the power limit; whether the GPU was busy is unknown.')}
IMPACT = {HIGH: 40.0, MEDIUM: 20.0, LOW: 5.0, INFO: 1.0}
REFERENCES = (
    "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html",
    "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
    "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html",
)
NOTES = {
    "hw_slowdown": N_('HW Slowdown is asserted by the board (thermal or power-brake signal). Check inlet temperature and fans, PSU redundancy and cabling, and the BIOS power-brake policy (some vendors throttle when high-power PCIe devices exceed a share of PSU capacity).'),
    "hw_thermal_slowdown": N_('The GPU is above its hardware thermal limit: check airflow, fan policy, blanking panels, inlet temperature and heatsink contact.'),
    "hw_power_brake_slowdown": N_('An external power brake is asserted (PSU failure or redundancy lost, or a BIOS power-capping policy): check PSUs and the BMC event log.'),
    "sw_thermal_slowdown": N_('The driver lowers clocks because the GPU nears its thermal target: improve cooling.'),
    POWER_CAP: N_('Clocks are held to the power limit. Compare `Power Limit` with `Default Power Limit`; restore a lowered limit with `nvidia-smi -i <gpu> -pl <default watts>`.'),
}


#: A configured limit this far below the default (fraction) is a finding; smaller gaps are rounding.
LIMIT_TOLERANCE = 0.02


def _lowered(value: float | None, default: float | None) -> bool:
    return value is not None and default is not None and default > 0 and value < default * (1 - LIMIT_TOLERANCE)


def _settings(facts: Facts, gpu: Gpu, where: str) -> Iterator[Finding]:
    """Medium: a power limit below the board default, or application clocks locked below their default."""
    rt = gpu.runtime
    if rt is None:
        return
    label = gpu_label(facts, gpu.address)
    if _lowered(rt.power_limit_w, rt.default_power_limit_w):
        limit, default = rt.power_limit_w or 0.0, rt.default_power_limit_w or 0.0
        yield Finding(
            MEDIUM, label, N_('power limit lowered to {limit} W (default {default} W)', limit=format(limit, "g"), default=format(default, "g")),
            detail=N_('{label} may draw at most {limit} W, {v} below its default {default} W: under load it holds clocks down (SW Power Cap) and loses throughput. Someone or something (nvidia-smi -pl, a power-capping agent, DCGM policy) set it.', label=label, limit=format(limit, "g"), v=format(1 - limit / default, ".0%"), default=format(default, "g")),
            evidence=(Evidence(where, f"{label}: power limit {limit:g} W, default power limit {default:g} W"),),
            expected=N_('{default} W (default)', default=f"{default:g}"), observed=N_('{limit} W', limit=f"{limit:g}"),
            impact=Impact(20.0, N_('lower sustained clocks under load, roughly in proportion to the power cut'), basis=N_('clocks of power-limited work scale roughly with the power the limit allows; the limit set and the default are in the evidence')),
            fix=make("gpu_power_limit", N_('Restores the default limit until reboot (needs root). If a power-capping agent or a site policy set the limit on purpose, change it there instead.'),
                     gpu=gpu.address, watts=default, previous=limit),
            references=REFERENCES, confidence=0.9, acts=Actor.OS)  # a limit someone set, not the board's doing
    locked = [(name, cur, dflt) for name, cur, dflt in (
        ("graphics", rt.app_clock_graphics_mhz, rt.default_app_clock_graphics_mhz),
        ("memory", rt.app_clock_mem_mhz, rt.default_app_clock_mem_mhz)) if _lowered(cur, dflt)]
    if locked:
        text = join(', ', (f"{name} {cur:g} of {dflt:g} MHz" for name, cur, dflt in locked))
        yield Finding(
            MEDIUM, label, N_('application clocks locked below default ({text})', text=text),
            detail=N_("{label}'s application clocks were set below their defaults (nvidia-smi -ac): the GPU runs its compute work at these lower clocks.", label=label),
            evidence=(Evidence(where, f"{label}: applications clocks {text}"),),
            expected=N_('default application clocks'), observed=text,
            impact=Impact(20.0, N_('compute runs at the lower clock: throughput drops in proportion'), basis=N_('compute-bound kernels run in proportion to the SM clock; the locked and default clocks are in the evidence')),
            fix=make("gpu_app_clocks", N_('Resets application clocks to the defaults (needs root); the rollback re-applies the locked values.'), gpu=gpu.address,
                     memory=rt.app_clock_mem_mhz or rt.default_app_clock_mem_mhz or 0,
                     graphics=rt.app_clock_graphics_mhz or rt.default_app_clock_graphics_mhz or 0),
            references=REFERENCES, confidence=0.9, acts=Actor.OS)


def _active(gpu: Gpu) -> list[str]:
    reasons = gpu.runtime.clock_event_reasons if gpu.runtime else {}
    return sorted(k for k, v in reasons.items() if v and k not in BENIGN)


def _grade(gpu: Gpu, active: list[str]) -> str | None:
    levels = [HARDWARE[r] for r in active if r in HARDWARE]
    if POWER_CAP in active:
        activity = gpu.activity
        levels.append(LOW if activity == "busy" else INFO if activity == "unknown" else "")
    return next((level for level in (HIGH, MEDIUM, LOW, INFO) if level in levels), None)


@check("gpu.clock_throttle", "GPU clock slowdown (thermal, power brake, power cap)", "gpu", acts="hardware",
       fixes=("gpu_power_limit", "gpu_app_clocks"), needs=("gpus",))
def gpu_clock_throttle(facts: Facts) -> Iterator[Finding]:
    """High for active hardware slowdown/thermal/power-brake reasons, medium for software thermal,
    low for the software power cap on a busy GPU. The idle reason is never a fault. Medium for a
    power limit below the default or application clocks locked below the default (NVML or nvidia-smi)."""
    gpus = facts.gpus.gpus
    if not gpus:
        return
    where = facts.gpus.runtime_origin or "nvidia-smi"
    looked = [g for g in gpus if g.runtime is not None and g.runtime.clock_event_reasons]
    settings = [f for gpu in gpus for f in _settings(facts, gpu, where)]
    yield from settings
    if not looked:
        missing = facts.gpus.runtime_missing or N_("the driver's view lists no clock event reasons")
        yield Finding(UNKNOWN, "node", N_('GPU clock event reasons not recorded'),
                      detail=N_('Without NVML or nvidia-smi output, thermal or power-brake slowdown cannot be seen.'),
                      evidence=(Evidence("GPU runtime state", missing),))
        return
    flagged = len(settings)
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
            level, label, N_('clocks held down by {shown}', shown=join(', ', shown)),
            detail=N_('{label} ({activity}, utilisation {v}) reports active clock event reasons {active}: {MEANING}', label=label, activity=gpu.activity, v='?' if rt is None or rt.util_gpu is None else f'{rt.util_gpu:g} %', active=join(', ', active), MEANING=MEANING[level]),
            evidence=(Evidence(where, f"{label}: " + join(', ', (f"{r} Active" for r in active))),),
            expected=N_('no slowdown reason active (gpu_idle is fine)'), observed=join(', ', active),
            impact=Impact(IMPACT[level], N_('lower SM clocks: proportionally lower throughput while it lasts'), basis=N_("the driver's clock event (throttle) reasons in the evidence; compute throughput follows the SM clock while they are active")),
            fix=Fix(notes=join(' ', (NOTES[r] for r in shown if r in NOTES)) + N_(' Watch it with `')
                    + cmd("nvidia-smi", "-i", gpu.address, "-q", "-d", "PERFORMANCE,TEMPERATURE,POWER") + "`."),
            references=REFERENCES, confidence=0.9 if gpu.activity == "busy" else 0.7)
    if not flagged:
        yield Finding(PASS, "node", N_('no clock slowdown reason active on {n_looked} GPUs', n_looked=len(looked)),
                      evidence=(Evidence(where, "clock event reasons: none but idle/application clocks"),))
