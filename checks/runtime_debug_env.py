"""runtime.debug_env: debugging variables left in an inference server's environment (docs/checks.md#runtime-debug-env)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from doctor.derived.procs import EnvSetting, process_label, server_roots, user_env
from doctor.facts import Facts
from doctor.findings import CRITICAL, HIGH, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes.startup import env_fix
from doctor.registry import check


@dataclass(frozen=True)
class Rule:
    name: str
    matches: Callable[[str], bool]
    severity: str
    score: float
    effect: str
    server_only: bool = False
    basis: str = "the variable's documented effect (see the references)"


def _is(*values: str) -> Callable[[str], bool]:
    wanted = {v.lower() for v in values}
    return lambda v: v.strip().lower() in wanted


def _set(v: str) -> bool:
    return v.strip() != ""


#: docs/checks.md#runtime-debug-env (the transport variables live in nccl.transport).
RULES: tuple[Rule, ...] = (
    Rule("CUDA_LAUNCH_BLOCKING", _is("1", "true", "yes"), CRITICAL, 95,
         "every CUDA kernel launch becomes synchronous",
         basis="CUDA programming guide: each launch waits for the kernel to finish, so the CPU and GPU no longer "
               "overlap; applies to every request"),
    Rule("PYTORCH_NO_CUDA_MEMORY_CACHING", _is("1", "true", "yes"), HIGH, 60,
         "PyTorch's caching allocator is off: every allocation calls cudaMalloc/cudaFree",
         basis="PyTorch CUDA semantics documentation: the variable disables caching; cudaMalloc/cudaFree synchronise "
               "the device"),
    Rule("NCCL_DEBUG", _is("trace"), MEDIUM, 15, "NCCL logs every operation",
         basis="NCCL documentation: TRACE logs every call, writing to the log on every collective"),
    Rule("NCCL_DEBUG", _is("info"), LOW, 3, "NCCL logs at INFO (init and topology; cheap once running)"),
    Rule("NCCL_DEBUG_SUBSYS", _is("all"), LOW, 3, "NCCL logs every subsystem"),
    Rule("TORCH_COMPILE_DISABLE", _is("1", "true", "yes"), MEDIUM, 30,
         "torch.compile is off; vLLM V1 piecewise CUDA graphs need it"),
    Rule("TORCHDYNAMO_DISABLE", _is("1", "true", "yes"), MEDIUM, 30,
         "TorchDynamo is off, so torch.compile (and vLLM's compiled graphs) is skipped"),
    Rule("NCCL_ALGO", _set, LOW, 5, "overrides NCCL's algorithm choice (NCCL discourages it in production)"),
    Rule("NCCL_PROTO", _set, LOW, 5, "overrides NCCL's protocol choice (NCCL discourages it in production)"),
    Rule("NCCL_MAX_NCHANNELS", _set, LOW, 5, "caps NCCL channels (discouraged in production)"),
    Rule("TORCH_NCCL_BLOCKING_WAIT", _is("1", "true", "yes"), LOW, 5, "collectives block the host thread"),
    Rule("CUDA_DEVICE_MAX_CONNECTIONS", _is("1"), LOW, 5,
         "serialises the GPU's hardware work queues (a Megatron training setting)", server_only=True),
)
REFERENCES = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars",
    "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
    "https://docs.vllm.ai/en/latest/configuration/env_vars.html",
)


def _fix(facts: Facts, s: EnvSetting) -> Fix:
    places = ", ".join([f"pid {p}" for p in s.pids] + list(s.files))
    return env_fix(facts, s, notes=(f"{s.name}={s.value} is set where the server is started ({places}); the "
                                    "variable is read at start-up only, so the server must restart. The rollback "
                                    "puts it back exactly as it was."))


@check("runtime.debug_env", "Debug variables in the server environment", "runtime")
def debug_env(facts: Facts) -> Iterator[Finding]:
    """CUDA_LAUNCH_BLOCKING=1 (critical), PYTORCH_NO_CUDA_MEMORY_CACHING=1 (high), NCCL_DEBUG=TRACE and
    TORCH_COMPILE_DISABLE=1 (medium), NCCL_DEBUG=INFO, NCCL_ALGO/NCCL_PROTO overrides (low), set by the user in
    a root process, unit, compose file or manifest; values frameworks inject into their workers are ignored.
    """
    names = {r.name for r in RULES}
    settings = user_env(facts, names)
    has_server = bool(server_roots(facts)) or any(s.files for s in settings)
    looked = bool(facts.processes) or bool(facts.deploy_files)
    if not looked:
        return
    found = False
    for s in settings:
        rule = next((r for r in RULES if r.name == s.name and r.matches(s.value)), None)
        if rule is None or (rule.server_only and not has_server):
            continue
        found = True
        subject = process_label(facts, s.pids[0]) if s.pids else s.files[0]
        yield Finding(
            rule.severity, subject, f"{s.name}={s.value}: {rule.effect}",
            detail=(f"Set by the user in {', '.join([process_label(facts, p) for p in s.pids] + list(s.files))}. "
                    f"{rule.effect[0].upper() + rule.effect[1:]}."),
            evidence=tuple(Evidence(src, val) for src, val in s.evidence),
            expected=f"{s.name} unset", observed=f"{s.name}={s.value}",
            impact=Impact(rule.score, rule.effect, basis=rule.basis), fix=_fix(facts, s), references=REFERENCES,
            related=tuple(s.files if s.pids else s.files[1:]))
    if not found and (facts.processes or facts.deploy_files):
        yield Finding(PASS, "node", "no debugging variable in the servers' environment",
                      evidence=(Evidence("proc/*/environ, deployment files",
                                         f"{len(facts.processes)} processes, {len(facts.deploy_files)} files"),))
