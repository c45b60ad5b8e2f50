"""runtime.debug_env: debugging variables left in an inference server's environment (docs/checks.md#runtime-debug-env)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from doctor.derived.gpu import all_consumer
from doctor.derived.procs import EnvSetting, process_label, server_roots, user_env
from doctor.facts import Facts
from doctor.findings import CRITICAL, HIGH, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes.startup import env_fix, flag_fix
from doctor.i18n import N_, capitalised, join
from doctor.lazyre import lazy
from doctor.reads import reads
from doctor.record import record
from doctor.registry import check


@record
class Rule:
    name: str
    matches: Callable[[str], bool]
    severity: str
    score: float
    effect: str
    server_only: bool = False
    basis: str = N_("the variable's documented effect (see the references)")


def _is(*values: str) -> Callable[[str], bool]:
    wanted = {v.lower() for v in values}
    return lambda v: v.strip().lower() in wanted


def _set(v: str) -> bool:
    return v.strip() != ""


#: docs/checks.md#runtime-debug-env (the transport variables live in nccl.transport).
RULES: tuple[Rule, ...] = (
    Rule("CUDA_LAUNCH_BLOCKING", _is("1", "true", "yes"), CRITICAL, 95,
         N_('every CUDA kernel launch becomes synchronous'),
         basis=N_('CUDA programming guide: each launch waits for the kernel to finish, so the CPU and GPU no longer overlap; applies to every request')),
    Rule("PYTORCH_NO_CUDA_MEMORY_CACHING", _is("1", "true", "yes"), HIGH, 60,
         N_("PyTorch's caching allocator is off: every allocation calls cudaMalloc/cudaFree"),
         basis=N_('PyTorch CUDA semantics documentation: the variable disables caching; cudaMalloc/cudaFree synchronise the device')),
    Rule("NCCL_DEBUG", _is("trace"), MEDIUM, 15, N_('NCCL logs every operation'),
         basis=N_('NCCL documentation: TRACE logs every call, writing to the log on every collective')),
    Rule("NCCL_DEBUG", _is("info"), LOW, 3, N_('NCCL logs at INFO (init and topology; cheap once running)')),
    Rule("NCCL_DEBUG_SUBSYS", _is("all"), LOW, 3, N_('NCCL logs every subsystem')),
    Rule("TORCH_COMPILE_DISABLE", _is("1", "true", "yes"), MEDIUM, 30,
         N_('torch.compile is off; vLLM V1 piecewise CUDA graphs need it')),
    Rule("TORCHDYNAMO_DISABLE", _is("1", "true", "yes"), MEDIUM, 30,
         N_("TorchDynamo is off, so torch.compile (and vLLM's compiled graphs) is skipped")),
    Rule("NCCL_ALGO", _set, LOW, 5, N_("overrides NCCL's algorithm choice")),
    Rule("NCCL_PROTO", _set, LOW, 5, N_("overrides NCCL's protocol choice")),
    Rule("VLLM_TRACE_FUNCTION", _is("1", "true", "yes"), HIGH, 60,
         N_('vLLM traces every Python function call to a log file (its docs: for debugging hangs only)')),
    Rule("TORCH_DISTRIBUTED_DEBUG", _is("detail"), MEDIUM, 20,
         "PyTorch wraps every collective with a consistency check (an extra collective per call)"),
    Rule("TORCH_DISTRIBUTED_DEBUG", _is("info"), LOW, 3, "PyTorch logs distributed initialisation details"),
    Rule("NCCL_MAX_NCHANNELS", _set, LOW, 5, "caps NCCL channels (discouraged in production)"),
    Rule("NCCL_BUFFSIZE", _set, LOW, 5, "overrides NCCL's buffer size"),
    Rule("NCCL_NTHREADS", _set, LOW, 5, "overrides NCCL's threads per block"),
    Rule("TORCH_NCCL_BLOCKING_WAIT", _is("1", "true", "yes"), LOW, 5, "collectives block the host thread"),
    Rule("CUDA_DEVICE_MAX_CONNECTIONS", _is("1"), LOW, 5,
         N_("serialises the GPU's hardware work queues (a Megatron training setting)"), server_only=True),
)
#: NCCL's own words on its algorithm and protocol variables (env.html, section "Debugging")
NCCL_DEBUG_SECTION = (N_('NCCL\'s documentation lists this variable under Debugging: such parameters "should not be used in production nor retained in scripts, or only as workaround, and removed as soon as the issue is resolved. Keeping them set may result in sub-optimal behavior, crashes, or hangs."'))
NVSWITCH_DEVICES = frozenset({0x1AF1, 0x22A3})  # A100 and H100 NVSwitch (class 0x0680)


def _items(value: str) -> tuple[bool, set[str]]:
    """``^LL128`` -> (True, {"ll128"}); ``Ring,Tree`` -> (False, {"ring", "tree"})."""
    text = value.strip()
    exclude = text.startswith("^")
    return exclude, {x.strip().lower() for x in text.lstrip("^").split(",") if x.strip()}


def _judge_proto(value: str, facts: Facts) -> tuple[str, float, str]:
    exclude, items = _items(value)
    if exclude and items == {"ll128"}:
        return (LOW, 3, N_("excludes LL128: NCCL's documented workaround for LL128 data corruption on HGX H100 (NCCL 2.18.1 known issue); drop it once NCCL is upgraded"))
    allowed = ({"ll", "ll128", "simple"} - items) if exclude else items
    if "ll" not in allowed:
        return (MEDIUM, 25, N_('forbids the LL protocol, which NCCL uses for small messages: the small all-reduces of every tensor-parallel decode step take the slower Simple path'))
    return LOW, 5, N_("restricts NCCL's protocols to {v}", v=join(', ', sorted(allowed)) or 'none')


def _judge_algo(value: str, facts: Facts) -> tuple[str, float, str]:
    exclude, items = _items(value)
    nvswitch = any(d.vendor == 0x10DE and d.device in NVSWITCH_DEVICES for d in facts.pci.devices.values())
    nvls = {"nvls", "nvlstree"}
    if nvswitch and (nvls <= items if exclude else not items & nvls):
        return (MEDIUM, 20, N_('keeps NCCL off NVLink SHARP (NVLS), the all-reduce the NVSwitches of this node offload; NCCL otherwise picks it for the tensor-parallel all-reduces'))
    return LOW, 5, N_('{v} the {items} algorithm(s)', v='excludes' if exclude else 'restricts NCCL to', items=join(', ', sorted(items)))


#: NCCL's defaults (env.html): "The default is 4194304 (4 MiB)."; "Default is 512 for recent generation GPUs"
NCCL_BUFFSIZE_DEFAULT = 4 << 20
NCCL_NTHREADS_DEFAULT = 512
NCCL_TUNING_DOC = N_("NCCL's documentation of NCCL_BUFFSIZE and NCCL_NTHREADS gives the defaults NCCL tunes for (4 MiB "
                   "buffers; 512 threads per block on recent GPUs, one block per channel) and lists both under "
                   "Debugging, for memory constraints, low GPU clocks or a lighter GPU load: a value left from a "
                   "debugging session stays in effect for every job.")


def _size(text: str) -> int | None:
    """An integer the way NCCL's getenv parsing reads it (decimal or 0x hex), else None."""
    t = text.strip()
    try:
        return int(t, 0) if t else None
    except ValueError:
        return None


def _judge_buffsize(value: str, facts: Facts) -> tuple[str, float, str]:
    size = _size(value)
    if size is None or size <= 0:
        return (LOW, 5, "not a positive byte count: NCCL reads it with strtoll, so what buffer it ends up with "
                        "depends on the NCCL version; remove it")
    mib = f"{size / (1 << 20):g} MiB"
    if size < NCCL_BUFFSIZE_DEFAULT:
        return (LOW, 10, f"shrinks NCCL's per-channel buffers to {mib} (default 4 MiB): fewer bytes in flight, so large "
                         "transfers (prefill all-reduces, KV-cache moves between nodes) lose bandwidth; the small "
                         "decode all-reduces are not affected")
    if size > NCCL_BUFFSIZE_DEFAULT:
        return (LOW, 3, f"grows NCCL's per-channel buffers to {mib} (default 4 MiB): more GPU memory per peer and "
                        "channel, taken from what the server can give the KV cache")
    return LOW, 1, "sets NCCL's default buffer size (4 MiB) explicitly; nothing changes"


def _judge_nthreads(value: str, facts: Facts) -> tuple[str, float, str]:
    n = _size(value)
    if n is None or n % 32 or not 64 <= n <= 512:
        return (LOW, 2, "not a thread count NCCL accepts (documented: 64, 128, 256 or 512): NCCL warns and keeps its "
                        "default, so the setting does nothing")
    if n < NCCL_NTHREADS_DEFAULT:
        return (LOW, 10, f"runs NCCL's kernels with {n} threads per block (default 512 on recent GPUs): less copy "
                         "bandwidth per channel for the tensor-parallel all-reduces")
    return LOW, 1, "sets NCCL's default thread count explicitly; nothing changes"


#: server flags with the same effect as a debug variable: (pattern, severity, score, effect)
FLAGS: tuple[tuple[re.Pattern[str], str, float, str], ...] = (
    (lazy(r"--log[-_]verbose(?:\s*[=: ]\s*[\"']?(\d+))?(?![\w-])"), MEDIUM, 15,
     N_('Triton logs every request and model step at verbose level')),
    (lazy(r"--disable[-_]custom[-_]all[-_]reduce(?![\w-])(?!\s*:\s*[\"']?(false|no|0)\b)"), MEDIUM, 20,
     N_('vLLM hands its small tensor-parallel all-reduces to NCCL instead of its faster custom all-reduce')),
)


def _flag_hits(facts: Facts) -> list[tuple[int, str, str, str, float, str]]:
    """(pattern index, where, snippet, severity, score, effect) for server command lines and deployment files."""
    texts = [(f"{s.process.origin}/cmdline", join(' ', s.process.argv)) for s in server_roots(facts)]
    texts += [(df.path, join('\n', (x for x in df.text.splitlines() if not x.lstrip().startswith("#"))))
              for df in facts.deploy_files]
    roots = {s.process.pid for s in server_roots(facts)}
    texts += [(c.path, join('\n', ("--" + x.strip() for x in c.text.splitlines() if not x.lstrip().startswith("#"))))
              for c in facts.serve_configs if c.text is not None and c.pid in roots]
    hits = []
    for where, text in texts:
        for i, (pattern, severity, score, effect) in enumerate(FLAGS):
            m = pattern.search(text)
            if m is None or (m.lastindex and m.group(1) is not None and int(m.group(1)) == 0):
                continue
            if i == 1 and all_consumer(facts):
                severity, score = LOW, 3
                effect += N_(' (GeForce GPUs have no peer-to-peer, so vLLM would not use it anyway)')
            hits.append((i, where, m.group(0).strip(), severity, score, effect))
    return hits


#: variables judged by their value (what the setting does), not only by being set
JUDGES = {"NCCL_PROTO": _judge_proto, "NCCL_ALGO": _judge_algo, "NCCL_BUFFSIZE": _judge_buffsize,
          "NCCL_NTHREADS": _judge_nthreads}
#: the documentation each judged variable's impact rests on (and which its detail quotes)
JUDGE_BASIS = {"NCCL_PROTO": NCCL_DEBUG_SECTION, "NCCL_ALGO": NCCL_DEBUG_SECTION, "NCCL_BUFFSIZE": NCCL_TUNING_DOC,
               "NCCL_NTHREADS": NCCL_TUNING_DOC}
REFERENCES = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#env-vars",
    "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
    "https://docs.vllm.ai/en/latest/configuration/env_vars.html",
)


def _pid_of(where: str) -> int | None:
    """The pid of a ``proc/<pid>/cmdline`` location, else None."""
    parts = where.split("/")
    return int(parts[1]) if len(parts) == 3 and parts[0] == "proc" and parts[1].isdigit() else None


def _flag_fix(facts: Facts, files: list[str], pid: int | None, snippet: str, places: list[str]) -> Fix:
    """Remove a one-word flag where the server is started; a flag with a separate value is for a human."""
    notes = (N_("Remove {snippet} from the server's command line ({places}) and restart it. To undo, add {snippet} back and restart the server.", snippet=repr(snippet), places=join(', ', places)))
    if len(snippet.split()) != 1:
        return Fix(notes=notes)
    return flag_fix(facts, files, pid, snippet, notes=notes)


def _fix(facts: Facts, s: EnvSetting) -> Fix:
    places = join(', ', [f"pid {p}" for p in s.pids] + list(s.files))
    return env_fix(facts, s, notes=(N_('{name}={value} is set where the server is started ({places}); the variable is read at start-up only, so the server must restart. The rollback puts it back exactly as it was.', name=s.name, value=s.value, places=places)))


@check("runtime.debug_env", "Debug variables in the server environment", "runtime", acts="application",
       fixes=("unit_env", "file_patch", "process_restart"), needs=("processes", "process_env", "deploy_files"),
       env=tuple(r.name for r in RULES), flags=tuple(f[0] for f in FLAGS),
       reads=reads(env=(r.name for r in RULES), flags=("--log-verbose", "--disable-custom-all-reduce"),
                   keys=("log_verbose", "disable_custom_all_reduce"),
                   rewrites=("--log-verbose", "--disable-custom-all-reduce")))
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
        severity, score, effect, basis = rule.severity, rule.score, rule.effect, rule.basis
        judge = JUDGES.get(s.name)
        if judge is not None:
            severity, score, effect = judge(s.value, facts)
            basis = JUDGE_BASIS[s.name]
        extra = join("", [" ", JUDGE_BASIS[s.name]]) if judge is not None else ""  # translated with the detail
        yield Finding(
            severity, subject, N_('{name}={value}: {effect}', name=s.name, value=s.value, effect=effect),
            detail=(N_('Set by the user in {v}. {effect}.{extra}', v=join(', ', [process_label(facts, p) for p in s.pids] + list(s.files)), effect=capitalised(effect), extra=extra)),
            evidence=tuple(Evidence(src, val) for src, val in s.evidence),
            expected=N_('{name} unset', name=s.name), observed=N_('{name}={value}', name=s.name, value=s.value),
            impact=Impact(score, effect, basis=basis), fix=_fix(facts, s), references=REFERENCES,
            related=tuple(s.files if s.pids else s.files[1:]))
    by_flag: dict[int, list[tuple[int, str, str, str, float, str]]] = {}
    for hit in _flag_hits(facts):
        by_flag.setdefault(hit[0], []).append(hit)
    for hits in by_flag.values():
        found = True
        _, where, snippet, severity, score, effect = hits[0]
        places = [h[1] for h in hits]
        files = [p for p in places if not p.endswith("/cmdline")]
        pid = _pid_of(where)
        yield Finding(
            severity, process_label(facts, pid) if pid is not None else where,
            N_('{snippet}: {effect}', snippet=snippet, effect=effect), detail=N_('Found in {places}. {effect}.', places=join(', ', places), effect=capitalised(effect)),
            evidence=tuple(Evidence(h[1], h[2]) for h in hits), expected=N_('flag absent'), observed=snippet,
            impact=Impact(score, effect, basis=N_("the flag's documented effect (see the references)")),
            fix=_flag_fix(facts, files, pid, snippet, places),
            references=REFERENCES)
    if not found and (facts.processes or facts.deploy_files):
        yield Finding(PASS, "node", N_("no debugging variable in the servers' environment"),
                      evidence=(Evidence("proc/*/environ, deployment files",
                                         f"{len(facts.processes)} processes, {len(facts.deploy_files)} files"),))
