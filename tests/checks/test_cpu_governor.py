"""Check cpu.governor (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from doctor.findings import Finding
from tests.checks.pcie_overlays import healthy
from tests.helpers import facts, findings_of

CPUFREQ = "sys/devices/system/cpu/cpu0/cpufreq"


def _run(changes: dict, check_id: str) -> list[Finding]:
    return findings_of(facts(changes, base=healthy()), check_id)


def _pairs(found: list[Finding]) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found]


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
