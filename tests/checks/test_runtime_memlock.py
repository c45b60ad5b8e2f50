"""runtime.memlock: limited locked memory for RDMA-using servers; quiet when RDMA carries nothing."""

from __future__ import annotations

from dataclasses import replace

from fixtures.tools.make_node import HEALTHY as SPEC
from tests.checks.smi_overlay import generated
from tests.helpers import HEALTHY, SICK, facts, findings_of

CHECK = "runtime.memlock"


def test_unlimited_passes_for_the_whole_server() -> None:
    (f,) = findings_of(facts(), CHECK)
    assert f.severity == "pass" and f.subject == "pid 4242 (vllm)" and "9 server processes" in f.title


def test_container_default_memlock_with_active_rdma_is_high_with_prlimit() -> None:
    (f,) = findings_of(generated(replace(SPEC, memlock="65536")), CHECK)
    assert f.severity == "high" and f.subject == "pid 4242 (vllm)" and "9 server processes" in f.title
    assert f.subject_id == "pid:4242" and "pid:4242" in f.related
    assert f.fix.runtime[0] == "prlimit --pid 4242 --memlock=unlimited:unlimited" and len(f.fix.runtime) == 9
    assert f.fix.rollback[0] == "prlimit --pid 4242 --memlock=65536:65536"
    assert f.evidence[0].source == "proc/4242/limits" and "LimitMEMLOCK=infinity" in f.fix.notes


def test_nccl_forced_onto_sockets_makes_memlock_irrelevant() -> None:
    # the sick fixture sets NCCL_IB_DISABLE=1: RDMA is not in use
    assert findings_of(facts(base=SICK), CHECK) == []
    assert findings_of(generated(replace(SPEC, memlock="65536", env_overrides={"NCCL_IB_DISABLE": "1"})), CHECK) == []


def test_no_active_rdma_port_is_quiet() -> None:
    down = generated(replace(SPEC, memlock="65536", nic_link_down=tuple(range(8))))
    assert findings_of(down, CHECK) == []


def test_limits_not_recorded_is_unknown() -> None:
    gone = {f"proc/{p.name}/limits": None for p in HEALTHY.glob("proc/[0-9]*")}
    (f,) = findings_of(facts(gone), CHECK)
    assert f.severity == "unknown" and f.evidence[0].source == "proc/4242/limits"
