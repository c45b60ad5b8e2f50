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


def _policy(value: str) -> dict[str, str]:
    text = (healthy() / "var/lib/kubelet/config.yaml").read_text()
    return {"var/lib/kubelet/config.yaml": text.replace("topologyManagerPolicy: single-numa-node",
                                                        f"topologyManagerPolicy: {value}")}


def test_best_effort_is_low_restricted_passes() -> None:
    (f,) = findings_of(facts(_policy("best-effort")), "numa.kubelet_policy")
    assert f.severity == "low" and f.fix.builder == "kubelet_policy"
    assert f.fix.params["settings"] == {"topologyManagerPolicy": ["single-numa-node", True]}
    assert "memoryManagerPolicy: None" in [e.value for e in f.evidence]
    # restricted also admits whole-node (8-GPU) pods with their preferred alignment: not flagged
    assert [x.severity for x in findings_of(facts(_policy("restricted")), "numa.kubelet_policy")] == ["pass"]


def test_best_effort_without_rdma_is_not_flagged() -> None:
    import os

    base = healthy()
    downs = {}
    for dev in sorted(os.listdir(base / "sys/class/infiniband")):
        port = os.path.relpath(os.path.realpath(base / f"sys/class/infiniband/{dev}"), os.path.realpath(base))
        downs[f"{port}/ports/1/state"] = "1: DOWN\n"
    found = findings_of(facts({**_policy("best-effort"), **downs}), "numa.kubelet_policy")
    assert [x.severity for x in found] == ["pass"]
