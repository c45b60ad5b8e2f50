"""Check plugins: discovery through entry points, isolation of failing checks and plugins."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.findings import UNKNOWN
from doctor.registry import Check, check, load_checks, refusal
from doctor.runner import run_checks
from tests.helpers import facts as overlay_facts

PLUGIN = '''
from doctor.findings import Finding, INFO
from doctor.registry import check

@check("thirdparty.hello", "A third-party check", "gpu", fixes=("module_load",))
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
    @check("test.broken", "broken", "gpu")
    def broken(facts: Facts):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    ok = Check("test.ok", "ok", "gpu", lambda facts: [])
    result = run_checks(overlay_facts(base=None), checks=[broken, ok])
    (finding,) = result.findings
    assert finding.severity == UNKNOWN and finding.check == "test.broken" and "boom" in finding.detail
    assert [c["status"] for c in result.checks] == [UNKNOWN, "not_applicable"]


def test_unknown_category_is_refused() -> None:
    with pytest.raises(ValueError):
        check("x.y", "t", "nonsense")


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
