"""Check numa.kubelet_policy (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, sick
from tests.helpers import facts, findings_of


def test_kubelet_none_is_medium_with_full_procedure() -> None:
    found = findings_of(facts(base=sick()), "numa.kubelet_policy")
    assert [(x.subject, x.severity) for x in found] == [("node", "medium")]
    steps = " ".join(found[0].fix.runtime)
    for step in ("kubectl drain gpu-node-13", "systemctl stop kubelet", "rm -f /var/lib/kubelet/cpu_manager_state",
                 "cpuManagerPolicy: static", "single-numa-node", "systemctl start kubelet", "kubectl uncordon"):
        assert step in steps
    assert found[0].fix.rollback
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.kubelet_policy")] == ["pass"]
