"""Check cpu.governor (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import pairs, run_check

CPUFREQ = "sys/devices/system/cpu/cpu0/cpufreq"




def _cpufreq(governor: str, driver: str, epp: str | None = None) -> dict:
    out = {f"{CPUFREQ}/scaling_governor": governor + "\n", f"{CPUFREQ}/scaling_driver": driver + "\n"}
    if epp:
        out[f"{CPUFREQ}/energy_performance_preference"] = epp + "\n"
    return out


def test_powersave_on_acpi_cpufreq_is_medium_with_rollback() -> None:
    found = run_check(_cpufreq("powersave", "acpi-cpufreq"), "cpu.governor")
    assert pairs(found) == [("cpu0", "medium")]
    assert "cpupower frequency-set -g performance" in found[0].fix.runtime
    assert "cpupower frequency-set -g powersave" in found[0].fix.rollback
    assert "tuned-adm profile latency-performance" in found[0].fix.persistent


def test_intel_pstate_powersave_is_fine_unless_epp_saves_power() -> None:
    assert pairs(run_check(_cpufreq("powersave", "intel_pstate", "balance_performance"), "cpu.governor")) == [
        ("cpu0", "pass")]
    found = run_check(_cpufreq("powersave", "amd-pstate-epp", "balance_power"), "cpu.governor")
    assert pairs(found) == [("cpu0", "medium")]
    assert any("balance_power" in r for r in found[0].fix.rollback)
    assert run_check({}, "cpu.governor") == []  # not recorded: silent
