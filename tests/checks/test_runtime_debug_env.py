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
                   "TORCH_COMPILE_DISABLE=1": "medium", "NCCL_ALGO=Ring": "medium"}  # Ring keeps NVLS off
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


def _titles(env: dict) -> dict[str, str]:
    return {f.title.split(":")[0]: f.severity for f in findings_of(facts(env, base=healthy()), "runtime.debug_env")}


def test_nccl_algo_and_proto_are_judged_by_what_they_do() -> None:
    # the documented LL128 workaround is low; forbidding LL (small messages) is medium
    assert _titles(environ(NCCL_PROTO="^LL128")) == {"NCCL_PROTO=^LL128": "low"}
    assert _titles(environ(NCCL_PROTO="Simple")) == {"NCCL_PROTO=Simple": "medium"}
    assert _titles(environ(NCCL_PROTO="^LL,LL128")) == {"NCCL_PROTO=^LL,LL128": "medium"}
    assert _titles(environ(NCCL_PROTO="LL,Simple")) == {"NCCL_PROTO=LL,Simple": "low"}
    # NVLS kept on an NVSwitch node: low; NVLS excluded: medium
    assert _titles(environ(NCCL_ALGO="Ring,NVLS")) == {"NCCL_ALGO=Ring,NVLS": "low"}
    assert _titles(environ(NCCL_ALGO="^NVLS,NVLSTree")) == {"NCCL_ALGO=^NVLS,NVLSTree": "medium"}
    (f,) = findings_of(facts(environ(NCCL_PROTO="Simple"), base=healthy()), "runtime.debug_env")
    assert "should not be used in production" in f.detail


def test_nccl_algo_without_nvswitch_is_low() -> None:
    import os

    base = healthy()
    nvsw = [d for d in os.listdir(base / "sys/bus/pci/devices")
            if (base / f"sys/bus/pci/devices/{d}/device").read_text().strip() == "0x22a3"]
    assert nvsw
    overlay = {os.path.relpath(os.path.realpath(base / f"sys/bus/pci/devices/{d}"), os.path.realpath(base))
               + "/device": "0x0000\n" for d in nvsw}
    got = {f.title.split(":")[0]: f.severity
           for f in findings_of(facts({**environ(NCCL_ALGO="Ring"), **overlay}, base=base), "runtime.debug_env")}
    assert got == {"NCCL_ALGO=Ring": "low"}


def test_new_debug_variables() -> None:
    got = _titles(environ(VLLM_TRACE_FUNCTION="1", TORCH_DISTRIBUTED_DEBUG="DETAIL"))
    assert got == {"VLLM_TRACE_FUNCTION=1": "high", "TORCH_DISTRIBUTED_DEBUG=DETAIL": "medium"}
    off = _titles(environ(VLLM_TRACE_FUNCTION="0", TORCH_DISTRIBUTED_DEBUG="OFF"))
    assert set(off.values()) == {"pass"}


def test_verbose_and_all_reduce_flags() -> None:
    from tests.checks._netnuma_base import cmdline

    argv = ["/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m",
            "--tensor-parallel-size", "8", "--disable-custom-all-reduce"]
    found = findings_of(facts(cmdline(*argv), base=healthy()), "runtime.debug_env")
    bad = [f for f in found if f.severity != "pass"]
    assert [(f.subject_id, f.severity, f.observed) for f in bad] == [("pid:4242", "medium", "--disable-custom-all-reduce")]
    unit = "etc/systemd/system/triton.service"
    quiet = {unit: "[Service]\nExecStart=/opt/tritonserver/bin/tritonserver --model-repository=/m --log-verbose=0\n"}
    assert [f.severity for f in findings_of(facts(quiet, base=healthy()), "runtime.debug_env")] == ["pass"]
    loud = {unit: "[Service]\nExecStart=/opt/tritonserver/bin/tritonserver --model-repository=/m --log-verbose 1\n"}
    (g,) = [f for f in findings_of(facts(loud, base=healthy()), "runtime.debug_env") if f.severity != "pass"]
    assert (g.subject, g.severity) == (unit, "medium") and not g.fix.steps and "--log-verbose 1" in g.fix.notes


def test_ray_workers_of_multi_node_vllm_are_user_roots() -> None:
    status = (healthy() / "proc/4242/status").read_text().replace("\t4242\n", "\t9100\n").replace("PPid:\t1\n", "PPid:\t9000\n")
    raylet = (healthy() / "proc/4242/status").read_text().replace("\t4242\n", "\t9000\n")
    worker = {
        "proc/9000/cmdline": b"/usr/local/lib/python3.12/dist-packages/ray/core/src/ray/raylet/raylet\x00--node_ip=10.0.0.2\x00",
        "proc/9000/status": raylet.replace("Name:\tpython3", "Name:\traylet"),
        "proc/9000/environ": b"PATH=/usr/bin\x00",
        "proc/9100/cmdline": b"ray::RayWorkerWrapper.execute_method\x00",
        "proc/9100/status": status.replace("Name:\tpython3", "Name:\tray::RayWorkerW"),
        "proc/9100/environ": b"CUDA_LAUNCH_BLOCKING=1\x00TORCH_DISTRIBUTED_DEBUG=DETAIL\x00",
    }
    got = {(f.subject_id, f.severity) for f in findings_of(facts(worker, base=healthy()), "runtime.debug_env")}
    assert {("pid:9100", "critical"), ("pid:9100", "medium")} <= got
