"""cpu.governor: a CPU frequency policy that keeps host threads (launch, tokenizer, NCCL proxy) slow."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import gpu_absent
from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: Drivers whose ``powersave`` is a dynamic policy steered by EPP, not "lowest frequency" (pm/intel_pstate.rst).
ACTIVE_PSTATE = frozenset({"intel_pstate", "amd-pstate-epp"})
SLOW_GOVERNORS = frozenset({"powersave"})
SLOW_EPP = frozenset({"power", "balance_power"})
REFERENCES = (
    "https://docs.kernel.org/admin-guide/pm/intel_pstate.html",
    "https://docs.kernel.org/admin-guide/pm/amd-pstate.html",
    "https://docs.kernel.org/admin-guide/pm/cpufreq.html",
)


@check("cpu.governor", "CPU frequency governor and energy preference", "runtime", acts="os", fixes=("cpu_governor",),
       needs=("gpus", "cpufreq"), applies=gpu_absent)
def cpu_governor(facts: Facts) -> Iterator[Finding]:
    """Medium for ``powersave`` on a passive/legacy driver, or EPP ``power``/``balance_power``.

    Only CPU 0's policy is recorded; it stands for the host (tuned and cpupower set all CPUs alike).
    """
    if not facts.gpus.gpus:
        return
    cf = facts.cpufreq
    if not cf.recorded:
        return
    evidence = tuple(Evidence(f"{cf.origin}/{name}", value) for name, value in (
        ("scaling_driver", cf.driver), ("scaling_governor", cf.governor),
        ("energy_performance_preference", cf.epp)) if value is not None)
    slow_governor = cf.governor in SLOW_GOVERNORS and cf.driver not in ACTIVE_PSTATE
    slow_epp = cf.epp in SLOW_EPP
    if not (slow_governor or slow_epp):
        yield Finding(PASS, "cpu0", N_('CPU frequency policy {v}/{v2}', v=cf.driver or '?', v2=cf.governor or '?')
                      + (N_(', EPP {epp}', epp=cf.epp) if cf.epp else ""), evidence=evidence)
        return
    reasons = []
    if slow_governor:
        reasons.append(N_('governor powersave on {v} pins CPUs at their lowest frequency', v=cf.driver or 'an unknown driver'))
    if slow_epp:
        reasons.append(N_('energy_performance_preference {epp} trades latency for power', epp=cf.epp))
    observed = join(', ', (f"{k} {v}" for k, v in (("driver", cf.driver), ("governor", cf.governor),
                                                  ("EPP", cf.epp)) if v))
    yield Finding(
        MEDIUM, "cpu0", N_('CPU frequency policy favours power over latency'),
        detail=join('; ', reasons) + N_('. Kernel launches, the scheduler loop, tokenisation and NCCL proxy threads run on these CPUs; slow clocks show up as lower GPU utilisation and higher time to first token.'),
        evidence=evidence, expected=N_('governor performance (or intel_pstate/amd-pstate-epp powersave with EPP performance/balance_performance)'),
        observed=observed, impact=Impact(10, N_('host-side latency per step; GPUs wait on the CPU'), basis=N_('CPU frequency ramp-up and deep C-states add latency to the host work between GPU steps (scheduling, sampling, kernel launches); a general cost, not measured on this node')),
        fix=make("cpu_governor", governor=(cf.governor or "powersave") if slow_governor else None,
                 epp=cf.epp if slow_epp else None,
                 notes=N_("tuned's latency-performance (or throughput-performance) profile sets governor and EPP on every CPU at boot; without tuned, set them in a systemd unit. The rollback restores the recorded governor/EPP; `tuned-adm auto_profile` returns tuned to its recommendation. BIOS power profiles (OS control, C-states) matter as well.")),
        references=REFERENCES)
