"""Consumer GPUs (GeForce/TITAN): checks that assume peer-to-peer or GPUDirect RDMA judge them accordingly."""

from __future__ import annotations

from doctor.derived.gpu import all_consumer
from tests.checks._netnuma_base import environ, healthy
from tests.helpers import facts, findings_of

SMI = "commands/nvidia-smi_-q_-x"


def geforce(name: str = "NVIDIA GeForce RTX 4090") -> dict[str, str]:
    text = (healthy() / SMI).read_text()
    return {SMI: text.replace("<product_name>NVIDIA H100 80GB HBM3</product_name>", f"<product_name>{name}</product_name>")}


def _no_peermem() -> dict[str, str]:
    text = (healthy() / "proc/modules").read_text()
    return {"proc/modules": "".join(x for x in text.splitlines(keepends=True) if not x.startswith("nvidia_peermem "))}


def test_names_decide_consumer() -> None:
    assert all_consumer(facts(geforce()))
    assert all_consumer(facts(geforce("NVIDIA TITAN RTX")))
    assert not all_consumer(facts())
    assert not all_consumer(facts(geforce("NVIDIA RTX A6000")))  # professional: GPUDirect RDMA supported


def test_gdr_module_on_geforce_is_info_without_a_fix() -> None:
    found = findings_of(facts({**geforce(), **_no_peermem()}), "rdma.gdr_module")
    assert [f.severity for f in found] == ["info"] and found[0].fix.empty
    # the same node with data-centre GPUs stays high
    assert [f.severity for f in findings_of(facts(_no_peermem()), "rdma.gdr_module")] == ["high"]


def test_p2p_disable_on_geforce_is_info() -> None:
    env = environ(NCCL_P2P_DISABLE="1", NCCL_P2P_LEVEL="LOC")
    got = {(f.subject_id, f.severity) for f in findings_of(facts({**env, **geforce()}), "nccl.transport")}
    assert ("NCCL_P2P_DISABLE", "info") in got and ("NCCL_P2P_LEVEL", "info") in got
    assert not {s for s in got if s[1] in ("critical", "high", "medium")}
    dc = {(f.subject_id, f.severity) for f in findings_of(facts(env), "nccl.transport")}
    assert ("NCCL_P2P_DISABLE", "high") in dc and ("NCCL_P2P_LEVEL", "high") in dc


def test_persistence_mode_is_not_asked_of_geforce() -> None:
    smi = geforce()[SMI].replace("<persistence_mode>Enabled</persistence_mode>",
                                 "<persistence_mode>Disabled</persistence_mode>")
    assert findings_of(facts({SMI: smi}), "gpu.persistence_mode") == []
    dc = (healthy() / SMI).read_text().replace("<persistence_mode>Enabled</persistence_mode>",
                                            "<persistence_mode>Disabled</persistence_mode>")
    assert [f.severity for f in findings_of(facts({SMI: dc}), "gpu.persistence_mode")] == ["low"]
