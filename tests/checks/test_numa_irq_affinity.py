"""Check numa.irq_affinity (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import sick
from tests.helpers import facts, findings_of


def test_far_irqs_medium_when_tcp_carries_data_and_mention_irqbalance() -> None:
    found = findings_of(facts(base=sick()), "numa.irq_affinity")
    bad = [x for x in found if x.severity != "pass"]
    assert [(x.subject, x.severity) for x in bad] == [("enp27s0np0", "medium")]
    assert "irqbalance is running" in bad[0].detail
    assert any(c == "set_irq_affinity_bynode.sh 0 enp27s0np0" for c in bad[0].fix.runtime)


def test_far_irqs_low_on_rdma_node_and_requested_mask_ignored() -> None:
    base = sick()
    env = (base / "proc/4242/environ").read_bytes().replace(b"NCCL_IB_DISABLE=1\0", b"")
    unit = (base / "etc/systemd/system/vllm.service").read_text().replace("Environment=NCCL_IB_DISABLE=1\n", "")
    found = findings_of(facts({"proc/4242/environ": env, "etc/systemd/system/vllm.service": unit}, base=base),
                        "numa.irq_affinity")
    assert [x.severity for x in found if x.severity != "pass"] == ["low"]
    # requested mask local but effective far still counts as far; effective local passes
    ok = {f"proc/irq/{n}/effective_affinity_list": "8\n" for n in range(217, 225)}
    assert [x.severity for x in findings_of(facts(ok, base=base), "numa.irq_affinity")] == ["pass"]
