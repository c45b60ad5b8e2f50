"""Check plugins: discovery through entry points, isolation of failing checks and plugins."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.findings import ACTORS, HIGH, INFO, MEDIUM, UNKNOWN, Actor, Finding
from doctor.registry import Check, check, load_checks, refusal
from doctor.runner import Result, run_checks
from tests.helpers import facts as overlay_facts

PLUGIN = '''
from doctor.findings import Finding, INFO
from doctor.registry import check

@check("thirdparty.hello", "A third-party check", "gpu", acts="os", fixes=("module_load",))
def hello(facts):
    yield Finding(INFO, "node", "hello from a plugin")
'''


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gnd_hello.py").write_text(PLUGIN)
    dist = tmp_path / "gnd_hello-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gnd-hello\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[gpu_node_doctor.checks]\nhello = gnd_hello\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("gnd_hello", None)


def test_builtin_checks_have_stable_unique_ids() -> None:
    checks, errors = load_checks()
    ids = [c.id for c in checks]
    assert not errors
    assert len(ids) == len(set(ids))
    assert {"net.socket_buffers", "numa.kernel_policy", "gpu.inventory"} <= set(ids)
    assert all(c.id.count(".") >= 1 and c.id == c.id.lower() for c in checks)


def test_third_party_package_registers_through_entry_point(third_party: None) -> None:
    checks, errors = load_checks()
    hello = next(c for c in checks if c.id == "thirdparty.hello")
    assert hello.plugin == "hello" and not errors
    result = run_checks(overlay_facts(base=None), only=["thirdparty"], checks=checks)
    assert [f.title for f in result.findings] == ["hello from a plugin"]


def test_a_check_that_raises_becomes_unknown_and_the_run_goes_on() -> None:
    @check("test.broken", "broken", "gpu", acts="os")
    def broken(facts: Facts):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    ok = Check("test.ok", "ok", "gpu", lambda facts: [])
    result = run_checks(overlay_facts(base=None), checks=[broken, ok])
    (finding,) = result.findings
    assert finding.severity == UNKNOWN and finding.check == "test.broken" and "boom" in finding.detail
    assert [c["status"] for c in result.checks] == [UNKNOWN, "not_applicable"]


def test_unknown_category_is_refused() -> None:
    with pytest.raises(ValueError):
        check("x.y", "t", "nonsense", acts="os")


def test_who_acts_is_declared_by_every_check_and_nothing_else_is_accepted() -> None:
    checks, _errors = load_checks()
    assert {c.acts for c in checks} == set(ACTORS)  # every built-in declares one, and each kind occurs
    with pytest.raises(ValueError, match="acts"):
        check("x.y", "t", "gpu", acts="vendor")
    with pytest.raises(TypeError):
        check("x.y", "t", "gpu")  # type: ignore[call-arg]
    with pytest.raises(ValueError):
        Finding(INFO, "node", "t", acts="nobody")


def test_a_plugin_check_without_who_acts_is_refused_at_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gnd_silent.py").write_text(
        "from doctor.registry import Check\n"
        "silent = Check('thirdparty.silent', 'declares no owner', 'gpu', lambda facts: [])\n")
    dist = tmp_path / "gnd_silent-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: gnd-silent\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[gpu_node_doctor.checks]\nsilent = gnd_silent\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        checks, errors = load_checks()
    finally:
        sys.modules.pop("gnd_silent", None)
    assert "thirdparty.silent" not in {c.id for c in checks}
    assert [e.plugin for e in errors] == ["silent"] and "acts" in errors[0].error


def test_findings_carry_who_acts_from_their_check_unless_they_say_otherwise() -> None:
    @check("test.mixed", "mixed owners", "network", acts="hardware")
    def mixed(facts: Facts):  # type: ignore[no-untyped-def]
        yield Finding(HIGH, "eth0", "link down")
        yield Finding(MEDIUM, "eth0", "MTU differs", acts="os")

    result = run_checks(overlay_facts(base=None), checks=[mixed])
    assert {f.title: f.acts for f in result.findings} == {"link down": Actor.HARDWARE, "MTU differs": Actor.OS}
    data = result.to_dict()
    assert [f["acts"] for f in data["findings"]] == ["hardware", "os"]
    assert data["checks"][0]["acts"] == "hardware"
    assert [f.acts for f in Result.from_dict(data).findings] == [Actor.HARDWARE, Actor.OS]


def test_fix_script_rebuilds_only_through_the_builders_a_check_declares(third_party: None) -> None:
    from reports.fixscript import declared_checks

    declared = declared_checks()
    assert declared["thirdparty.hello"].fixes == ("module_load",)  # a plugin declares its builders the same way
    assert refusal(declared["thirdparty.hello"], "thirdparty.hello", "module_load", {"module": "x"}) == ""
    assert refusal(declared["thirdparty.hello"], "thirdparty.hello", "sysctl", {}) == \
        "check thirdparty.hello does not produce sysctl fixes"
    assert refusal(None, "gone.check", "sysctl", {}) == "check gone.check does not produce sysctl fixes"
    tuning = declared["net.tcp_tuning"]
    assert refusal(tuning, tuning.id, "sysctl", {"set": {"net.core.somaxconn": "4096"}}) == ""
    assert refusal(tuning, tuning.id, "sysctl", {"set": {"kernel.core_pattern": "|x"}}) == \
        "check net.tcp_tuning does not set kernel.core_pattern"
