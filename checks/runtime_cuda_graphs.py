"""runtime.cuda_graphs: server flags and deployment settings that turn CUDA Graphs off (docs/checks.md#runtime-cuda-graphs)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from doctor.derived.procs import process_label, server_gpus, server_roots
from doctor.facts import DeployFile, Facts
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.fixes.startup import flag_fix
from doctor.i18n import N_, join
from doctor.lazyre import lazy
from doctor.reads import reads
from doctor.record import record
from doctor.registry import check


@record
class GraphRule:
    key: str
    pattern: re.Pattern[str]
    severity: str
    what: str
    vllm_only: bool = False
    #: lower-case text every match holds; ASCII text without it is not searched (same answer, no compiling)
    needs: str = ""


_I = re.IGNORECASE | re.MULTILINE
#: Flags and settings that disable CUDA Graphs, with their severity (docs/checks.md#runtime-cuda-graphs).
RULES: tuple[GraphRule, ...] = (
    GraphRule("vllm.enforce_eager", lazy(r"--enforce[-_]eager(?![\w-])(?!\s*[= ]\s*[\"']?(false|0|no)\b)", _I),
              HIGH, N_('vLLM --enforce-eager (no CUDA graphs, no torch.compile)'), needs="--enforce"),
    GraphRule("vllm.enforce_eager", lazy(r"[\"']?enforce[-_]eager[\"']?\s*[:=]\s*[\"']?(true|1|yes)\b", _I),
              HIGH, N_('vLLM enforce_eager: true (no CUDA graphs, no torch.compile)'), needs="enforce"),
    GraphRule("vllm.cudagraph_mode", lazy(r"cudagraph[-_]mode[\"']?\s*[:= ]\s*[\"']?none\b", _I),
              HIGH, N_('vLLM cudagraph_mode NONE'), needs="cudagraph"),
    GraphRule("vllm.O0", lazy(r"(?<![\w-])(-O\s*0|--optimization-level[= ]0|-O\.level=0)(?![\w.])", _I),
              MEDIUM, N_('vLLM -O0 (compilation level 0; check the resolved cudagraph_mode in the log)'), vllm_only=True, needs="-o"),
    GraphRule("vllm.cc_mode_none", lazy(r"(-cc|--compilation-config)\.(mode|level)[= ](none|0)\b", _I),
              MEDIUM, N_('vLLM compilation mode none (check the resolved cudagraph_mode in the log)'), needs="-c"),
    GraphRule("sglang.disable_cuda_graph", lazy(r"--disable-cuda-graph(?![\w-])", _I),
              HIGH, "SGLang --disable-cuda-graph", needs="--disable-cuda-graph"),
    GraphRule("sglang.disable_cuda_graph", lazy(r"^[ \t]*disable_cuda_graph[ \t]*:[ \t]*true\b", _I),
              HIGH, N_('SGLang disable_cuda_graph: true'), needs="disable_cuda_graph"),
    GraphRule("sglang.graph_backend_disabled", lazy(r"--cuda-graph-backend[-\w]*[= ]disabled\b", _I),
              HIGH, N_('SGLang CUDA graph backend disabled'), needs="--cuda-graph-backend"),
    GraphRule("sglang.disable_padding", lazy(r"--disable-cuda-graph-padding(?![\w-])", _I),
              LOW, N_('SGLang --disable-cuda-graph-padding (graphs only for exact batch sizes)'), needs="--disable-cuda-graph-padding"),
    GraphRule("trtllm.cuda_graph_config_null", lazy(r"^[ \t]*cuda_graph_config[ \t]*:[ \t]*(null|~|None)?[ \t]*(#.*)?$", _I),
              HIGH, N_('TensorRT-LLM cuda_graph_config: null (graphs are on when the key is absent)'), needs="cuda_graph_config"),
    GraphRule("trtllm.use_cuda_graph_false", lazy(r"^[ \t]*use_cuda_graph[ \t]*:[ \t]*(false|no|0)\b", _I),
              HIGH, N_('TensorRT-LLM use_cuda_graph: false'), needs="use_cuda_graph"),
)
#: Disaggregated prefill / context-only workers may run without graphs (docs/checks.md#runtime-cuda-graphs, traps).
PREFILL = lazy(r"(--disaggregation-mode[= ]prefill|disaggregation_mode\s*:\s*prefill|"
               r"[\"']?kv_role[\"']?\s*:\s*[\"']?kv_producer|--server[-_]role[= ]context|"
               r"server_role\s*:\s*context)", re.IGNORECASE)
PREFILL_PATH = lazy(r"(^|[/_.-])(ctx|context|prefill)([/_.-]|$)", re.IGNORECASE)
#: Non-CUDA backends where "disable CUDA graph" is routine (Ascend CI passes --disable-cuda-graph).
NON_CUDA = lazy(r"--device[= ](npu|hpu|xpu|cpu|neuron|tpu)\b", re.IGNORECASE)
SEGMENT_START = lazy(r"^\s*(-\s*)?(ExecStart\w*|command|args|entrypoint)\s*[:=]", re.IGNORECASE)
#: the options and config keys whose values RULES, PREFILL and NON_CUDA read (kept when values are masked)
READ_FLAGS = ("--enforce-eager", "-O", "--optimization-level", "-cc", "--compilation-config", "--cuda-graph-backend*",
              "--disable-cuda-graph", "--disable-cuda-graph-padding", "--device", "--disaggregation-mode",
              "--server-role", "--kv-transfer-config")
READ_KEYS = ("enforce_eager", "cudagraph_mode", "disable_cuda_graph", "cuda_graph_config", "use_cuda_graph",
             "disaggregation_mode", "kv_role", "server_role")
#: the options a fix removes from the line that starts the server
REWRITES = ("--enforce-eager", "--disable-cuda-graph", "--disable-cuda-graph-padding", "--cuda-graph-backend", "-O",
            "--optimization-level", "-cc", "--compilation-config")
#: the published measurement the impact quotes: per-step latency 203.2 ms with --enforce-eager, 82.6 ms with
#: FULL_DECODE_ONLY graphs (vLLM, TP4, fp8 KV; 19.4 -> 51.7 tok/s end to end)
MEASUREMENT = "https://github.com/tonyd2wild/GLM-5.3-Flash-NVFP4-1M-KV-4x-DGX-Spark/pull/2"
REFERENCES = (
    "https://docs.vllm.ai/en/latest/configuration/engine_args.html",
    "https://docs.vllm.ai/en/latest/design/cuda_graphs.html",
    "https://docs.sglang.ai/advanced_features/server_arguments.html",
    "https://nvidia.github.io/TensorRT-LLM/",
)


@record
class Hit:
    rule: GraphRule
    where: str  # "proc/<pid>/cmdline" or a file path
    snippet: str
    prefill: bool
    non_cuda: bool
    pid: int | None = None


def _strip_comments(text: str) -> str:
    return join('\n', (line for line in text.splitlines() if not line.lstrip().startswith(("#", ";"))))


_SEGMENT_WORDS = ("execstart", "command", "args", "entrypoint")


def _segment_start(line: str) -> bool:
    """``SEGMENT_START.match(line)``, without the pattern where it cannot match (no ``:``/``=`` or no key word)."""
    if ":" not in line and "=" not in line:
        return False
    if line.isascii() and not any(word in line.lower() for word in _SEGMENT_WORDS):
        return False
    return SEGMENT_START.match(line) is not None


def _prefill_path(name: str) -> bool:
    """``PREFILL_PATH.search(name)``, without the pattern where none of its words is in an ASCII name."""
    if name.isascii() and not any(word in name.lower() for word in ("ctx", "context", "prefill")):
        return False
    return PREFILL_PATH.search(name) is not None


def _segments(df: DeployFile) -> list[str]:
    """Command blocks of a unit/compose/manifest (one per ExecStart/command/args), else the whole file."""
    lines = _strip_comments(df.text).splitlines()
    segments: list[list[str]] = [[]]
    for line in lines:
        if _segment_start(line) or line.strip() == "---":
            segments.append([])
        segments[-1].append(line)
    return [join('\n', s) for s in segments if any(x.strip() for x in s)]


def _has_children(text: str, m: re.Match[str]) -> bool:
    line = m.group(0).split("\n")[-1]
    indent = len(line) - len(line.lstrip())
    for line in text[m.end():].splitlines():
        if line.strip():
            return len(line) - len(line.lstrip()) > indent
    return False


def _match(text: str, where: str, pid: int | None, path_prefill: bool = False) -> list[Hit]:
    hits = []
    lower = text.lower()
    is_vllm = "vllm" in lower
    ascii_text = text.isascii()  # non-ASCII text may match case-insensitively without the literal (ſ is s)
    for rule in RULES:
        if rule.vllm_only and not is_vllm:
            continue
        if ascii_text and rule.needs not in lower:
            continue
        m = rule.pattern.search(text)
        if m is None:
            continue
        if rule.key == "trtllm.cuda_graph_config_null" and not m.group(1) and _has_children(text, m):
            continue  # "cuda_graph_config:" followed by a nested mapping: graphs configured, not disabled
        hits.append(Hit(rule, where, m.group(0).strip(), path_prefill or bool(PREFILL.search(text)),
                        bool(NON_CUDA.search(text)), pid))
    return hits


def _collect(facts: Facts) -> list[Hit]:
    hits: list[Hit] = []
    roots = {s.process.pid for s in server_roots(facts)}
    for s in server_roots(facts):
        text = join(' ', s.process.argv)
        hits += _match(text, f"{s.process.origin}/cmdline", s.process.pid)
    for cfg in facts.serve_configs:
        if cfg.text is not None and cfg.pid in roots:
            hits += _match(_strip_comments(cfg.text), cfg.path, cfg.pid)
    for df in facts.deploy_files:
        path_prefill = _prefill_path(df.path.rsplit("/", 1)[-1])
        for seg in _segments(df):
            hits += _match(seg, df.path, None, path_prefill)
    return hits


def _severity(hit: Hit, has_gpu: bool) -> str:
    if hit.prefill or hit.non_cuda or not has_gpu:
        return LOW if hit.rule.severity in (HIGH, MEDIUM) else hit.rule.severity
    return hit.rule.severity


def _fix(facts: Facts, files: list[str], pid: int | None, snippet: str) -> Fix:
    return flag_fix(facts, files, pid, snippet,
                    notes=(N_('Remove {snippet} where the server is started{v} and restart the server: graphs are captured at start-up, there is no runtime switch. Graphs cost about 0.3-1.8 GiB per rank; lower --gpu-memory-utilization slightly if memory is tight. If a model lane documents eager mode as required, keep it and record why. The rollback puts {snippet} back.', snippet=repr(snippet), v=' (' + join(', ', files) + ')' if files else '')))


@check("runtime.cuda_graphs", "CUDA Graphs disabled by server flags", "runtime", acts="application",
       fixes=("unit_exec", "unit_flag", "file_patch", "process_restart"), needs=("processes", "deploy_files"),
       flags=tuple(r.pattern for r in RULES), reads=reads(flags=READ_FLAGS, keys=READ_KEYS, rewrites=REWRITES))
def cuda_graphs(facts: Facts) -> Iterator[Finding]:
    """vLLM --enforce-eager / enforce_eager: true / cudagraph_mode NONE, SGLang --disable-cuda-graph, TRT-LLM
    cuda_graph_config: null / use_cuda_graph: false: high; low on disaggregated prefill/context-only workers.

    Looks at the command line of every server root process and at deployment files (units, compose
    files, manifests, ``--deploy`` extras). One finding per setting, merged across process and file.
    """
    if not facts.processes and not facts.deploy_files:
        return
    hits = _collect(facts)
    has_gpu = bool(facts.gpus.gpus)
    groups: dict[tuple[str, str, str], list[Hit]] = {}
    for hit in hits:
        level = _severity(hit, has_gpu)
        groups.setdefault((hit.rule.key, level, str(hit.pid) if hit.pid is not None else ""), []).append(hit)
    # attach file hits to the running process holding the same setting at the same severity
    for gkey, group in list(groups.items()):
        if gkey[2] == "":
            owner = next((k for k in groups if k[:2] == gkey[:2] and k[2] != ""), None)
            if owner is not None:
                groups[owner].extend(group)
                del groups[gkey]
    for (_rule, sev, pid), group in sorted(groups.items()):
        first = group[0]
        files = sorted({h.where for h in group if h.pid is None})
        subject = process_label(facts, int(pid)) if pid else files[0]
        gpus = server_gpus(facts, int(pid)) if pid else []
        why_low = (N_('a disaggregated prefill/context-only worker, which may run without graphs') if first.prefill
                   else N_('a non-CUDA backend') if first.non_cuda else N_('no NVIDIA GPU on this node')
                   if not has_gpu else "")
        detail = (N_('{what}. Without CUDA graphs every decode step launches its kernels one by one from Python: published measurements show 2-3x per-token latency (the impact names the source).', what=first.rule.what))
        if sev == LOW and why_low:
            detail = N_('{what} on {why_low}; reported for completeness.', what=first.rule.what, why_low=why_low)
        yield Finding(
            sev, subject, N_('CUDA Graphs disabled: {snippet}', snippet=first.snippet) + (N_(' (prefill worker)') if first.prefill else ""),
            detail=detail,
            evidence=tuple(Evidence(h.where, h.snippet) for h in group),
            expected=N_('CUDA graphs on (flag absent)'), observed=first.snippet,
            impact=Impact(95 if sev == HIGH else 40 if sev == MEDIUM else 5,
                          N_('2-3x higher per-token latency at small batch and with tensor parallelism')
                          if sev != LOW else N_('prefill/context phase only'), basis=(N_('a published measurement: vLLM TP4 decode step 203 ms eager against 83 ms with CUDA graphs (2.4x). Applies to decode (per-token) latency, most at small batch')
                                if sev != LOW else N_('prefill runs large batches, where kernel launch overhead is a small share')),
                          source=MEASUREMENT if sev != LOW else ""),
            fix=_fix(facts, files, int(pid) if pid else None, first.snippet), references=REFERENCES,
            related=tuple(gpus) + tuple(f for f in files if f != subject))
    roots = {s.process.pid for s in server_roots(facts)}
    for cfg in facts.serve_configs:
        if cfg.text is None and cfg.pid in roots:
            yield Finding(
                UNKNOWN, str(cfg.pid), N_('{flag} {path} of pid {pid} not read', flag=cfg.flag, path=cfg.path, pid=cfg.pid),
                detail=(N_('The server takes settings from {path} ({reason}); flags there that turn CUDA graphs off (enforce_eager, cudagraph_mode, disable_cuda_graph, cuda_graph_config) cannot be checked.', path=cfg.path, reason=cfg.reason)),
                evidence=(Evidence(f"proc/{cfg.pid}/cmdline", f"{cfg.flag} {cfg.path}"),), references=REFERENCES)
    if not hits and (server_roots(facts) or facts.deploy_files):
        yield Finding(PASS, "node", N_('no flag disables CUDA graphs'),
                      evidence=(Evidence("server command lines, deployment files",
                                         f"{len(server_roots(facts))} servers, {len(facts.deploy_files)} files"),))
