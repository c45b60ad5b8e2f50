"""Which processes are inference servers, which GPU each process uses, and which settings the user made.

* Servers are recognised by argv (vLLM, SGLang, TensorRT-LLM, Triton) or by the process titles the
  frameworks give their workers (``VLLM::Worker_TP0``, ``sglang::scheduler``). A process below a
  server (a multiprocessing worker) belongs to that server.
* The *root* of a server is a server process whose ancestors are not servers; only its initial
  environment (``/proc/<pid>/environ``) is what the user set. Workers inherit it plus values the
  framework injects (docs/checks.md#cross-cutting-rules), which are never blamed on the user.
* The GPUs of a process come from NVML / ``nvidia-smi -q -x`` process lists, else from a
  ``CUDA_VISIBLE_DEVICES`` naming exactly one GPU (index order = PCI bus order with
  ``CUDA_DEVICE_ORDER=PCI_BUS_ID``, or with the default order on identical GPUs; UUIDs always).
* Deployment files (systemd units, compose files, manifests, ``--deploy`` extras) are parsed for
  ``NAME=value`` environment settings by :mod:`doctor.parsers.deploy_env`.

Server lists, GPU holders and the user's environment are computed once per run (``facts.derived``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from doctor.derived import cached
from doctor.facts import Facts, Gpu, Process
from doctor.i18n import N_
from doctor.lazyre import lazy
from doctor.parsers.deploy_env import deploy_env
from doctor.reads import Reads
from doctor.record import record

#: values read here: ``python -m MODULE`` (server recognition), the GPU a single visible device selects
READS = Reads(flags=("-m",), env=("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"))

#: framework -> argv patterns (matched against the joined command line)
SERVER_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "vllm": (lazy(r"(^|[\s/])vllm(\.entrypoints|\s+serve\b)"), lazy(r"-m\s+vllm\b"),
             lazy(r"^VLLM::")),
    "sglang": (lazy(r"\bsglang\.(launch_server|srt\.|launch_router)"), lazy(r"(^|[\s/])sglang\s+serve\b"),
               lazy(r"^sglang::", re.IGNORECASE)),
    "tensorrt-llm": (lazy(r"(^|[\s/])trtllm-(serve|llmapi-launch)\b"), lazy(r"\btensorrt_llm\b")),
    "triton": (lazy(r"(^|[\s/])tritonserver\b"),),
}
#: Titles frameworks give their own worker processes (never a root, even without a parent pid).
WORKER_TITLE = lazy(r"^(VLLM::|sglang::|ray::)", re.IGNORECASE)

#: vLLM's Ray workers (multi-node vLLM): started by the raylet, not by the vLLM process, so on a worker
#: node they are the only trace of the server; their environment comes from the user (Ray runtime_env,
#: ``ray start`` environment or variables vLLM copies from the driver).
RAY_VLLM_WORKER = "ray::RayWorkerWrapper"  # a process title's start

#: Values frameworks set in their own workers (docs/checks.md#cross-cutting-rules); never blamed on the user.
FRAMEWORK_INJECTED: dict[str, frozenset[str]] = {
    "sglang": frozenset({"NCCL_CUMEM_ENABLE", "NCCL_NVLS_ENABLE", "TORCH_NCCL_AVOID_RECORD_STREAMS",
                         "CUDA_DEVICE_MAX_CONNECTIONS"}),
    "vllm": frozenset({"TORCHINDUCTOR_COMPILE_THREADS", "NCCL_CUMEM_ENABLE"}),
}


#: A word (lower case) that every pattern of :data:`SERVER_PATTERNS` needs, case-insensitively.
_SERVER_WORDS = ("vllm", "sglang", "trtllm-", "tensorrt_llm", "tritonserver")


def framework_of(proc: Process) -> str | None:
    """``vllm``, ``sglang``, ``tensorrt-llm``, ``triton`` or None, from the command line."""
    line = " ".join(proc.argv) if proc.argv else (proc.name or "")
    if line.isascii() and not any(word in line.lower() for word in _SERVER_WORDS):
        return None  # most processes: no pattern can match (non-ASCII text is left to the patterns)
    for name, patterns in SERVER_PATTERNS.items():
        if any(p.search(line) for p in patterns):
            return name
    return None


@record
class ServerProcess:
    """A process that belongs to an inference server; ``root`` when its ancestors are not servers."""

    process: Process
    framework: str
    root: bool


def _ancestors(proc: Process, by_pid: dict[int, Process]) -> Iterator[Process]:
    seen = {proc.pid}
    current = proc
    while current.ppid and current.ppid in by_pid and current.ppid not in seen:
        seen.add(current.ppid)
        current = by_pid[current.ppid]
        yield current


def servers(facts: Facts) -> list[ServerProcess]:
    """Every process of an inference server, in pid order, with its framework and root flag."""
    return list(cached(facts, "procs.servers", lambda: tuple(_servers(facts))))


def _servers(facts: Facts) -> list[ServerProcess]:
    procs = facts.processes
    by_pid = {p.pid: p for p in procs}
    direct = {p.pid: fw for p in procs if (fw := framework_of(p))}
    out = []
    for proc in procs:
        inherited = next((direct[a.pid] for a in _ancestors(proc, by_pid) if a.pid in direct), None)
        framework = direct.get(proc.pid) or inherited
        if framework is None:
            continue
        title = " ".join(proc.argv) if proc.argv else (proc.name or "")
        root = inherited is None and not WORKER_TITLE.match(title)
        out.append(ServerProcess(proc, framework, root))
    return out


def server_roots(facts: Facts) -> list[ServerProcess]:
    return [s for s in servers(facts) if s.root]


def gpu_holders(facts: Facts) -> dict[int, list[Gpu]]:
    """pid -> GPUs, from the driver's process lists (NVML or ``nvidia-smi -q -x``)."""
    held = cached(facts, "procs.gpu_holders", lambda: tuple((pid, tuple(gpus)) for pid, gpus in _gpu_holders(facts).items()))
    return {pid: list(gpus) for pid, gpus in held}


def _gpu_holders(facts: Facts) -> dict[int, list[Gpu]]:
    out: dict[int, list[Gpu]] = {}
    for gpu in facts.gpus.gpus:
        for sp in gpu.processes:
            out.setdefault(sp.pid, []).append(gpu)
    return out


def _identical_gpus(gpus: Iterable[Gpu]) -> bool:
    models = {(g.pci.device if g.pci else None, g.name) for g in gpus}
    return len(models) == 1


def gpus_from_env(facts: Facts, proc: Process) -> list[Gpu] | None:
    """The one GPU a ``CUDA_VISIBLE_DEVICES`` naming exactly one device selects, else None."""
    visible = proc.env.get("CUDA_VISIBLE_DEVICES")
    if not visible:
        return None
    items = [v.strip() for v in visible.split(",") if v.strip()]
    if len(items) != 1:
        return None
    item = items[0]
    gpus = facts.gpus.gpus
    if item.upper().startswith("GPU-"):
        found = [g for g in gpus if g.runtime and g.runtime.uuid and g.runtime.uuid.lower().startswith(item.lower())]
        return found[:1] or None
    if not item.isdigit():
        return None  # MIG-... or something we cannot map
    index = int(item)
    pci_order = proc.env.get("CUDA_DEVICE_ORDER", "FASTEST_FIRST").upper() == "PCI_BUS_ID"
    if not pci_order and not _identical_gpus(gpus):
        return None
    return [gpus[index]] if 0 <= index < len(gpus) else None


def gpus_of(facts: Facts, proc: Process) -> tuple[list[Gpu], str]:
    """GPUs a process uses and how that was learned (``nvidia-smi``/``CUDA_VISIBLE_DEVICES``/``""``)."""
    held = gpu_holders(facts).get(proc.pid)
    if held:
        return held, facts.gpus.runtime_origin or "nvidia-smi"
    from_env = gpus_from_env(facts, proc)
    if from_env:
        return from_env, f"{proc.origin}/environ CUDA_VISIBLE_DEVICES={proc.env.get('CUDA_VISIBLE_DEVICES')}"
    return [], ""


@record
class EnvSetting:
    """One user-set environment value and everywhere it was seen."""

    name: str
    value: str
    pids: tuple[int, ...]  # root processes holding it
    files: tuple[str, ...]  # deployment files setting it
    frameworks: tuple[str, ...]

    @property
    def evidence(self) -> list[tuple[str, str]]:
        out = [(f"proc/{pid}/environ", f"{self.name}={self.value}") for pid in self.pids]
        out += [(path, f"{self.name}={self.value}") for path in self.files]
        return out


def user_roots(facts: Facts) -> list[tuple[Process, str | None]]:
    """Processes whose environment the user set: server roots, and GPU holders not below a server/GPU holder."""
    return list(cached(facts, "procs.user_roots", lambda: tuple(_user_roots(facts))))


def _user_roots(facts: Facts) -> list[tuple[Process, str | None]]:
    roots: dict[int, tuple[Process, str | None]] = {}
    all_servers = servers(facts)
    in_server = {s.process.pid for s in all_servers}
    for s in all_servers:
        if s.root:
            roots[s.process.pid] = (s.process, s.framework)
    by_pid = {p.pid: p for p in facts.processes}
    for candidate in facts.processes:
        title = " ".join(candidate.argv) if candidate.argv else (candidate.name or "")
        if title.startswith(RAY_VLLM_WORKER) and candidate.pid not in in_server and not any(
                a.pid in in_server for a in _ancestors(candidate, by_pid)):
            roots[candidate.pid] = (candidate, "vllm")
    holders = set(gpu_holders(facts))
    for pid in holders:
        proc = by_pid.get(pid)
        if proc is None or pid in in_server or pid in roots:
            continue
        if any(a.pid in holders or a.pid in in_server for a in _ancestors(proc, by_pid)):
            continue
        roots[pid] = (proc, None)
    return [roots[k] for k in sorted(roots)]


def user_env(facts: Facts, names: Iterable[str] | None = None) -> list[EnvSetting]:
    """Environment values set by the user: in root processes and in deployment files.

    Values a framework injects into its own workers never appear here (workers are not roots). A
    root that is itself a framework process may still carry an injected name if the user set it.
    """
    settings = cached(facts, "procs.user_env", lambda: tuple(_user_env(facts)))
    if names is None:
        return list(settings)
    wanted = set(names)
    return [s for s in settings if s.name in wanted]


def _user_env(facts: Facts) -> list[EnvSetting]:
    seen: dict[tuple[str, str], dict[str, set[object]]] = {}

    def add(name: str, value: str, pid: int | None = None, path: str | None = None, fw: str | None = None) -> None:
        slot = seen.setdefault((name, value), {"pids": set(), "files": set(), "fw": set()})
        if pid is not None:
            slot["pids"].add(pid)
        if path is not None:
            slot["files"].add(path)
        if fw:
            slot["fw"].add(fw)

    for proc, fw in user_roots(facts):
        for name, value in proc.env.items():
            add(name, value, pid=proc.pid, fw=fw)
    for name, value, path in cached(facts, "procs.deploy_env", lambda: tuple(deploy_env(facts.deploy_files))):
        add(name, value, path=path)
    return [EnvSetting(name, value, tuple(sorted(int(p) for p in s["pids"])),  # type: ignore[call-overload]
                       tuple(sorted(str(f) for f in s["files"])), tuple(sorted(str(f) for f in s["fw"])))
            for (name, value), s in sorted(seen.items())]


def by_place(s: EnvSetting) -> list[EnvSetting]:
    """``s`` split into one setting per place that must be changed: each deployment file that sets it
    (the first also carries the processes holding it, which that file presumably starts), or the
    processes alone when no file sets it. A fix edits one place, so a value set in two units needs two."""
    if len(s.files) <= 1:
        return [s]
    return [EnvSetting(s.name, s.value, s.pids if i == 0 else (), (f,), s.frameworks) for i, f in enumerate(s.files)]


def env_value(facts: Facts, name: str) -> EnvSetting | None:
    """The user's setting of ``name`` (the one in a running root process first)."""
    settings = user_env(facts, [name])
    if not settings:
        return None
    return sorted(settings, key=lambda s: (not s.pids, s.value))[0]


def irqbalance_running(facts: Facts) -> bool | None:
    """Whether a process named irqbalance runs; None when no process list was recorded."""
    if not facts.processes:
        return None
    return any((p.name or "") == "irqbalance" or (p.argv and p.argv[0].rsplit("/", 1)[-1] == "irqbalance")
               for p in facts.processes)


def server_gpus(facts: Facts, root_pid: int) -> list[str]:
    """Addresses of the GPUs used by a server root or any process below it."""
    children = cached(facts, "procs.children", lambda: _children(facts.processes))
    out: set[str] = set()
    todo, seen = [root_pid], {root_pid}
    while todo:  # the tree below the root, each process once (a ppid loop ends where it began)
        for proc in children.get(todo.pop(), ()):
            if proc.pid not in seen:
                seen.add(proc.pid)
                todo.append(proc.pid)
    by_pid = cached(facts, "procs.by_pid", lambda: {p.pid: p for p in reversed(facts.processes)})
    for pid in seen:
        if pid in by_pid:
            out.update(g.address for g in gpus_of(facts, by_pid[pid])[0])
    return sorted(out)


def _children(processes: tuple[Process, ...]) -> dict[int, tuple[Process, ...]]:
    """Processes by their parent's pid, in pid order."""
    out: dict[int, list[Process]] = {}
    for proc in processes:
        if proc.ppid is not None and proc.ppid != proc.pid:
            out.setdefault(proc.ppid, []).append(proc)
    return {k: tuple(v) for k, v in out.items()}


_PYTHON = lazy(r"python[0-9.]*$")
_WORD = lazy(r"[A-Za-z0-9_.+:-]{1,64}")


def program_of(proc: Process) -> str:
    """What a reader recognises a process by: ``vllm serve``, ``vllm.entrypoints.openai.api_server``
    (``python -m``), ``tritonserver``; the process name when argv says nothing usable."""
    argv = [a for a in proc.argv if a]
    if not argv:
        return proc.name if proc.name and _WORD.fullmatch(proc.name) else "process"
    words = argv[0].split()  # a title set by the program (VLLM::Worker_TP0) may hold spaces
    base = words[0].rsplit("/", 1)[-1]
    rest = words[1:] + argv[1:]
    if _PYTHON.match(base) and rest:
        if rest[0] == "-m" and len(rest) > 1:
            parts = rest[1].split(".")  # vllm.entrypoints.openai.api_server -> vllm api_server
            base, rest = (f"{parts[0]} {parts[-1]}" if len(parts) > 2 else rest[1]), rest[2:]
            if not all(_WORD.fullmatch(w) for w in base.split(" ")):
                return proc.name if proc.name and _WORD.fullmatch(proc.name) else "process"
            return base
        elif not rest[0].startswith("-"):
            base, rest = rest[0].rsplit("/", 1)[-1], rest[1:]
    if not _WORD.fullmatch(base):
        return proc.name if proc.name and _WORD.fullmatch(proc.name) else "process"
    if rest and re.fullmatch(r"[a-z][a-z-]{1,20}", rest[0]) and framework_of(proc) in ("vllm", "sglang"):
        return f"{base} {rest[0]}"
    return base


def process_label(facts: Facts, pid: int) -> str:
    """``vllm serve (pid 4242)``; ``process (pid 4242)`` when the process was not recorded."""
    proc = facts.process(pid)
    if proc is None:
        return N_("process (pid {pid})", pid=pid)
    return f"{program_of(proc)} (pid {pid})"


def setting_owner(facts: Facts, s: EnvSetting) -> str:
    """Who a user setting is about: the first process holding it, else the file setting it."""
    if s.pids:
        return process_label(facts, s.pids[0])
    return s.files[0].rsplit("/", 1)[-1] if s.files else "the environment"


def setting_label(facts: Facts, s: EnvSetting) -> str:
    """``NCCL_IB_DISABLE in vllm serve (pid 4242)`` (the finding's ``subject_id`` stays the name)."""
    return N_("{name} in {owner}", name=s.name, owner=setting_owner(facts, s))


def server_groups(procs: list[ServerProcess]) -> dict[int, list[ServerProcess]]:
    """Root pid -> the root and the server processes below it (workers register memory too)."""
    roots = {s.process.pid for s in procs if s.root}
    by_pid = {s.process.pid: s for s in procs}
    out: dict[int, list[ServerProcess]] = {}
    for s in procs:
        top, seen = s.process, {s.process.pid}
        while top.pid not in roots and top.ppid in by_pid and top.ppid not in seen:
            seen.add(top.ppid)
            top = by_pid[top.ppid].process
        out.setdefault(top.pid, []).append(s)
    return out
