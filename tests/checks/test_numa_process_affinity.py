"""Check numa.process_affinity (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, sick
from tests.helpers import facts, findings_of

GPU2 = "0000:3a:00.0"


def test_worker_on_far_node_is_medium_with_pid_subject() -> None:
    found = findings_of(facts(base=sick()), "numa.process_affinity")
    bad = [x for x in found if x.severity == "medium"]
    assert [(x.subject, x.subject_id, x.related) for x in bad] == [("VLLM::Worker_TP2 (pid 4336)", "pid:4336", (GPU2,))]
    assert "taskset -a -p -c 0-47 4336" in bad[0].fix.runtime


def test_partial_overlap_is_low_and_healthy_passes() -> None:
    status = (sick() / "proc/4336/status").read_text().replace("Cpus_allowed_list:\t48-95", "Cpus_allowed_list:\t40-55")
    found = findings_of(facts({"proc/4336/status": status}, base=sick()), "numa.process_affinity")
    assert [(x.subject_id, x.severity) for x in found if x.severity != "pass"] == [("pid:4336", "low")]
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.process_affinity")] == ["pass"]
