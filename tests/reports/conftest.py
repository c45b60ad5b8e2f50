"""Shared results for the report tests: each fixture node is checked once per session."""

from __future__ import annotations

from typing import Any

import pytest

from doctor.facts import Facts
from doctor.findings import Evidence, Finding, Fix, FixStep, Impact, rank
from doctor.runner import Result
from tests.helpers import HEALTHY, SICK, facts, run

#: Host data a hostile or broken node might carry: markup, quotes and shell substitutions
EVIL = "<script>alert(1)</script>'\"$(touch /tmp/gnd-pwned)`id`"
EVIL_IMG = '<img src="http://127.0.0.1:9/x.png"><img src="file:///etc/passwd">'


def _result(base: Any) -> dict[str, Any]:
    if not base.exists():
        pytest.skip(f"fixture {base.name} not generated yet")
    return run(facts(base=base)).to_dict()


@pytest.fixture(scope="session")
def sick_data() -> dict[str, Any]:
    return _result(SICK)


@pytest.fixture(scope="session")
def sick_facts() -> Facts:
    """The sick fixture's own facts: what a fix script run on that host binds its fixes to."""
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    return facts(base=SICK)


@pytest.fixture(scope="session")
def healthy_data() -> dict[str, Any]:
    return _result(HEALTHY)


def hostile_finding() -> Finding:
    """A finding as a check would build it from an interface and a process argv carrying EVIL."""
    return Finding(
        severity="critical", subject=EVIL, title=f"interface {EVIL} misconfigured",
        detail=f"process argv: python3 --served-model-name {EVIL} {EVIL_IMG}",
        evidence=(Evidence(f"sys/class/net/{EVIL}/mtu", EVIL_IMG),),
        expected="mtu 9000", observed=EVIL, impact=Impact(99, EVIL),
        fix=Fix(steps=(FixStep("runtime", argv=("ip", "link", "set", "dev", EVIL, "mtu", "9000"), unattended=True),
                       FixStep("runtime", heredoc=("/proc/irq/5/smp_affinity_list", "1"), unattended=True),
                       FixStep("persistent", heredoc=("/etc/gnd-test", EVIL)),
                       FixStep("rollback", argv=("ip", "link", "set", "dev", EVIL, "mtu", "1500"))),
                notes=EVIL, builder="link_mtu", params={"netdev": EVIL, "mtu": 9000, "previous": 1500}),
        references=("javascript:alert(1)", "http://127.0.0.1:9/ref"), related=(EVIL,),
        check="net.evil", category="network")


@pytest.fixture(scope="session")
def hostile_data(sick_data: dict[str, Any]) -> dict[str, Any]:
    result = Result.from_dict(sick_data)
    result.findings = rank([*result.findings, hostile_finding()])
    data = result.to_dict()
    data["inventory"]["nics"][0]["netdevs"] = [EVIL]
    return data
