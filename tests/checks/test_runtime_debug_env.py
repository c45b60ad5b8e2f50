"""Check runtime.debug_env (tests moved from test_runtime_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, healthy, sick
from tests.helpers import facts, findings_of


def _pairs(found: list) -> list[tuple[str, str]]:
    return [(f.subject_id, f.severity) for f in found if f.severity != "pass"]


def test_debug_env_severities_on_sick() -> None:
    found = findings_of(facts(base=sick()), "runtime.debug_env")
    assert _pairs(found) == [("pid:4242", "critical")] and "CUDA_LAUNCH_BLOCKING" in found[0].title
    assert found[0].subject == "vllm api_server (pid 4242)"
    assert [f.severity for f in findings_of(facts(base=healthy()), "runtime.debug_env")] == ["pass"]


def test_debug_env_table() -> None:
    env = environ(PYTORCH_NO_CUDA_MEMORY_CACHING="1", NCCL_DEBUG="TRACE", TORCH_COMPILE_DISABLE="1", NCCL_ALGO="Ring")
    got = {f.title.split(":")[0]: f.severity for f in findings_of(facts(env, base=healthy()), "runtime.debug_env")}
    assert got == {"PYTORCH_NO_CUDA_MEMORY_CACHING=1": "high", "NCCL_DEBUG=TRACE": "medium",
                   "TORCH_COMPILE_DISABLE=1": "medium", "NCCL_ALGO=Ring": "low"}
    info = findings_of(facts(environ(NCCL_DEBUG="INFO"), base=healthy()), "runtime.debug_env")
    assert _pairs(info) == [("pid:4242", "low")]


def test_framework_values_in_workers_are_not_blamed() -> None:
    worker = 4318  # VLLM::Worker_TP0, child of the root
    env = environ(worker, CUDA_LAUNCH_BLOCKING="1", CUDA_DEVICE_MAX_CONNECTIONS="1", TORCHINDUCTOR_COMPILE_THREADS="1")
    assert _pairs(findings_of(facts(env, base=healthy()), "runtime.debug_env")) == []


def test_compose_and_manifest_env_are_blamed() -> None:
    manifest = ("apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
                "      - name: vllm\n        env:\n        - name: CUDA_LAUNCH_BLOCKING\n          value: \"1\"\n")
    found = findings_of(facts({"etc/kubernetes/manifests/vllm.yaml": manifest}, base=healthy()), "runtime.debug_env")
    assert _pairs(found) == [("etc/kubernetes/manifests/vllm.yaml", "critical")]
