"""Keep secrets on the host: environment allowlist, masking of tokens in argv and files.

Applied when a snapshot is collected (so the tarball never holds a secret) and again when facts
are built from any source (so a live run or an old snapshot cannot leak one either).
"""

from __future__ import annotations

import re

MASK = "***"

#: Environment names kept from /proc/<pid>/environ; everything else is dropped at collection.
ENV_ALLOW = re.compile(
    r"^(NCCL_|CUDA_|TORCH_|PYTORCH_|VLLM_|SGLANG_|TRTLLM_|TLLM_|UCX_|NVIDIA_|OMP_|NVSHMEM_|GLOO_|MKL_|"
    r"CUBLAS_|CUDNN_|TORCHINDUCTOR_|HF_HUB_OFFLINE$|LOCAL_RANK$|RANK$|WORLD_SIZE$|MASTER_PORT$)"
)
#: Names whose value is masked even when allowlisted.
SECRET_NAME = re.compile(r"(TOKEN|KEY|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)
#: Options whose next argument (or ``=value``) is a secret.
SECRET_OPTION = re.compile(
    r"^--?[A-Za-z0-9_.-]*(api[-_]?key|token|secret|password|passwd|credential|auth|access[-_]?key)"
    r"[A-Za-z0-9_.-]*$",
    re.IGNORECASE,
)
#: Well-known token shapes, masked wherever they appear.
SECRET_VALUE = re.compile(
    r"(hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{12,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"xox[abpsr]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}|"
    r"glpat-[A-Za-z0-9_-]{16,})"
)
URL_CREDENTIALS = re.compile(r"(://[^/\s:@]+:)[^@\s/]+@")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def mask_text(text: str) -> str:
    """Mask token-shaped values and URL credentials inside free text."""
    text = SECRET_VALUE.sub(MASK, text)
    return URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + "@", text)


def mask_argv(argv: list[str]) -> list[str]:
    """Mask values after ``--api-key``-style options, secret ``NAME=value`` words and tokens."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            opt, _, _value = arg.partition("=")
            if SECRET_OPTION.match(opt):
                out.append(f"{opt}={MASK}")
                continue
        elif SECRET_OPTION.match(arg):
            out.append(arg)
            hide_next = True
            continue
        assignment = ASSIGNMENT.match(arg)
        if assignment and SECRET_NAME.search(assignment.group(1)):
            out.append(f"{assignment.group(1)}={MASK}")
            continue
        out.append(mask_text(arg))
    return out


def filter_environ(pairs: dict[str, str]) -> dict[str, str]:
    """Keep allowlisted names only; mask secret-looking names among them."""
    kept: dict[str, str] = {}
    for name, value in pairs.items():
        if not ENV_ALLOW.match(name):
            continue
        kept[name] = MASK if SECRET_NAME.search(name) else mask_text(value)
    return kept


def parse_environ(raw: bytes) -> dict[str, str]:
    """Parse NUL-separated ``NAME=value`` records (``/proc/<pid>/environ``)."""
    env: dict[str, str] = {}
    for record in raw.split(b"\0"):
        name, sep, value = record.decode("utf-8", "replace").partition("=")
        if sep and name:
            env[name] = value
    return env


def sanitize_environ(raw: bytes) -> bytes:
    """An environ file reduced to allowlisted, masked entries (same NUL-separated format)."""
    env = filter_environ(parse_environ(raw))
    return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())


def sanitize_cmdline(raw: bytes) -> bytes:
    """A NUL-separated cmdline with secrets masked (same format)."""
    if not raw:
        return raw
    trailing = raw.endswith(b"\0")
    parts = raw.rstrip(b"\0").decode("utf-8", "replace").split("\0")
    out = b"\0".join(p.encode() for p in mask_argv(parts))
    return out + (b"\0" if trailing else b"")


STATUS_KEEP = ("Name:", "State:", "Tgid:", "Pid:", "PPid:", "Uid:", "Gid:", "Threads:",
               "Cpus_allowed:", "Cpus_allowed_list:", "Mems_allowed:", "Mems_allowed_list:", "NSpid:")


def sanitize_status(raw: bytes) -> bytes:
    """``/proc/<pid>/status`` keeping only identity and affinity lines."""
    lines = raw.decode("utf-8", "replace").splitlines()
    return "".join(line + "\n" for line in lines if line.startswith(STATUS_KEEP)).encode()


def sanitize_cpuinfo(raw: bytes) -> bytes:
    """The first processor block of ``/proc/cpuinfo``."""
    text = raw.decode("utf-8", "replace")
    return (text.split("\n\n", 1)[0] + "\n").encode()


def sanitize_deploy(raw: bytes) -> bytes:
    """Unit, compose and manifest files with secret assignments and tokens masked."""
    text = raw.decode("utf-8", "replace")
    lines = []
    for line in text.splitlines(keepends=True):
        line = re.sub(
            r"(?i)\b([A-Z0-9_]*(TOKEN|API_KEY|SECRET|PASSWORD|ACCESS_KEY)[A-Z0-9_]*)(\s*[=:]\s*)(\"?)([^\s\"']+)",
            lambda m: f"{m.group(1)}{m.group(3)}{m.group(4)}{MASK}",
            line,
        )
        line = re.sub(
            r"(?i)(--[a-z0-9-]*(api-key|token|secret|password)[a-z0-9-]*)([ =]+)(\"?)([^\s\"']+)",
            lambda m: f"{m.group(1)}{m.group(3)}{m.group(4)}{MASK}",
            line,
        )
        lines.append(mask_text(line))
    return "".join(lines).encode()


def sanitize_mounts(raw: bytes) -> bytes:
    """``/proc/<pid>/mounts`` keeping only the ``/dev/shm`` line (the rest is large and says nothing we use)."""
    lines = raw.decode("utf-8", "replace").splitlines()
    return "".join(line + "\n" for line in lines if line.split()[1:2] == ["/dev/shm"]).encode()


def sanitize(path: str, raw: bytes, sanitizer: str | None) -> bytes:
    """Apply the named sanitiser of a spec to the file at ``path``."""
    if sanitizer == "proc":
        if path.endswith("/environ"):
            return sanitize_environ(raw)
        if path.endswith("/cmdline"):
            return sanitize_cmdline(raw)
        if path.endswith("/status"):
            return sanitize_status(raw)
    if sanitizer == "cpuinfo":
        return sanitize_cpuinfo(raw)
    if sanitizer == "deploy":
        return sanitize_deploy(raw)
    if sanitizer == "mounts":
        return sanitize_mounts(raw)
    return raw
