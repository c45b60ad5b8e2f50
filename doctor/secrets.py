"""Keep secrets on the host: environment allowlist, masking of tokens in argv and files.

Applied when a snapshot is collected (so the tarball never holds a secret) and again when facts
are built from any source (so a live run or an old snapshot cannot leak one either).
"""

from __future__ import annotations

import functools
import re
import shlex
from typing import Any

from doctor.lazyre import lazy

#: what replaces a value that is not kept (the name before it stays: ``--api-key <redacted>``)
MASK = "<redacted>"

#: Environment names kept from /proc/<pid>/environ; everything else is dropped at collection.
ENV_ALLOW = lazy(
    r"^(NCCL_|CUDA_|TORCH_|PYTORCH_|VLLM_|SGLANG_|TRTLLM_|TLLM_|UCX_|NVIDIA_|OMP_|NVSHMEM_|GLOO_|MKL_|"
    r"CUBLAS_|CUDNN_|TORCHINDUCTOR_|HF_HUB_OFFLINE$|LOCAL_RANK$|RANK$|WORLD_SIZE$|MASTER_PORT$)"
)


def env_allowed(name: str) -> bool:
    """Whether :data:`ENV_ALLOW` keeps the environment variable ``name``."""
    return ENV_ALLOW.match(name) is not None


#: Names whose value is masked even when allowlisted.
SECRET_NAME = lazy(r"(TOKEN|KEY|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|SESSION)", re.IGNORECASE)
#: A secret word inside an option, key or variable name, at a name boundary ("tokens", "tokenizer" and
#: "mytoken" are not secrets; "pass", "pwd" and "auth" count only after a separator: DB_PASS, --auth).
#: Every pattern below is anchored on such a word or a fixed prefix and has bounded repeats, so masking
#: stays linear in the text (a hostile megabyte argv cannot stall it).
_KW = (r"(?:(?<![a-z0-9])(?:api[-_]?key|access[-_]?key|secret[-_]?key|private[-_]?key|token|secret|password"
       r"|passwd|credentials?|authorization)|(?<=[-_.])(?:pass|pwd|auth))(?![a-z])")
_TAIL = r"[a-z0-9_.-]{0,64}"
_KW_RE = lazy(_KW, re.IGNORECASE)
#: Options whose next argument (or ``=value``) is a secret.
SECRET_OPTION = lazy(rf"^--?[a-z0-9_.-]{{0,64}}?{_KW}{_TAIL}$", re.IGNORECASE)

def _has_keyword(text: str) -> bool:
    """Whether ``text`` holds a secret word at a name boundary (``_KW``)."""
    return _KW_RE.search(text) is not None


def _secret_option(text: str) -> bool:
    """An option whose value is a secret (``--api-key``, ``--db-password``)."""
    return SECRET_OPTION.match(text) is not None


#: Well-known token shapes, masked wherever they appear.
SECRET_VALUE = lazy(
    r"(hf_[A-Za-z0-9]{16,}|sk-[A-Za-z0-9_-]{12,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,}|"
    r"xox[abpsr]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}|"
    r"glpat-[A-Za-z0-9_-]{16,}|nvapi-[A-Za-z0-9_-]{16,}|github_pat_[A-Za-z0-9_]{20,}|api_org_[A-Za-z0-9]{16,}|"
    r"AIza[A-Za-z0-9_-]{30,}|ya29\.[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|"
    r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_-]{40,}|"
    r"AccountKey=[A-Za-z0-9+/=]{20,}|SharedAccessSignature=[^;\s]{8,}|(?<![A-Za-z0-9_])sig=[A-Za-z0-9%+/=]{16,}|"
    r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{10,}|"
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[\s\S]{0,8192}?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|$))"
)
#: ``scheme://user:password@host`` and ``scheme://:password@host`` (the password may hold ``/``).
URL_CREDENTIALS = lazy(r"(://[^/\s:@'\"]{0,256}:)[^@\s'\"]{1,512}@")
#: Text that may hold a named secret (the costlier patterns below run only then).
_HINT = lazy(r"token|secret|pass|pwd|auth|key|credential|bearer|basic|digest", re.IGNORECASE)
#: ``?token=...``, ``&password=...`` in URLs and query strings.
QUERY_SECRET = lazy(rf"([?&;][a-z0-9_.-]{{0,64}}?{_KW}{_TAIL}=)[^&\s#'\"]+", re.IGNORECASE)
#: ``Authorization: Bearer ...`` / ``Basic ...`` / ``Token ...`` headers, and a bearer token anywhere
#: (a lone "token" or "basic" in prose, as in "per-token latency", is left alone).
AUTH_HEADER = lazy(r"(\b(?:proxy-)?authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?"
                   r"(?:Bearer|Basic|Token|Digest|Negotiate)[ \t]{1,8})[^\s\"',}]+", re.IGNORECASE)
BEARER = lazy(r"(\b[Bb]earer[ \t]{1,8})[A-Za-z0-9._~+/=:-]{8,}")
AUTH_VALUE = lazy(r"(\b(?:proxy-)?authorization[\"']?[ \t]{0,8}[:=][ \t]{0,8}[\"']?)"
                  r"(?!(?:Bearer|Basic|Token|Digest|Negotiate)\s)[^\s\"',}]+", re.IGNORECASE)
_VALUE = r"(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s\"',;}\]&]+)"
#: ``"password": "x"``, ``api_key='x'``, ``HF_TOKEN=x``, ``secret: x`` in JSON, YAML, shell and unit text.
KEY_VALUE = lazy(rf"({_KW}{_TAIL}[\"']?[ \t]{{0,8}}[:=][ \t]{{0,8}})(?!(?:Bearer|Basic|Token|Digest)\s)"
                 + _VALUE, re.IGNORECASE)
ASSIGNMENT = lazy(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def _mask_quoted(m: re.Match[str]) -> str:
    value = m.group(2)
    if value.startswith(("'", '"')) and len(value) >= 2 and value[-1] == value[0]:
        return f"{m.group(1)}{value[0]}{MASK}{value[0]}"
    return m.group(1) + MASK


#: Lower-case words that every pattern matching a secret name needs (``_KW``, ``SECRET_NAME``, ``_HINT``).
_NAME_WORDS = ("token", "secret", "pass", "pwd", "auth", "key", "credential", "bearer", "basic", "digest",
               "cookie", "session")
#: Literal pieces that every other pattern needs: SECRET_VALUE's token prefixes (case-sensitive) and ``://``.
_VALUE_PIECES = ("hf_", "sk-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "eyJ", "glpat-",
                 "nvapi-", "github_pat_", "api_org_", "AIza", "ya29.", "k_live_", "k_test_", "SG.", "npm_", "pypi-",
                 "AccountKey=", "SharedAccessSignature=", "sig=", "hooks.slack.com/", "PRIVATE KEY-----",
                 "://")
#: Twilio's documented API key and account SIDs (``SK``/``AC`` and 32 hex digits): tried only where the
#: two letters are (they are too common to be a piece of the quick test above on their own)
TWILIO = lazy(r"(?<![A-Za-z0-9])(?:AC|SK)[0-9a-f]{32}(?![A-Za-z0-9])")


def _nothing_to_mask(text: str) -> bool:
    """True when no masking pattern can match ``text``, nor any word a shell split of it gives (at any depth).

    Every pattern needs a literal piece (:data:`_VALUE_PIECES`) or, case-insensitively, a word of
    :data:`_NAME_WORDS`; none holds a quote or backslash, so any such piece in a word of a shell
    split is also in the text with every quote and backslash removed. Case-insensitive matching of
    non-ASCII text (``ſ`` matches ``s``) is left to the patterns: such text is never declared clean.
    """
    bare = text.replace('"', "").replace("'", "").replace("\\", "")
    if not bare.isascii() or _ANY_PIECE.search(bare) is not None:
        return False
    if ("AC" in bare or "SK" in bare) and TWILIO.search(bare):
        return False
    return _ANY_WORD.search(bare.lower()) is None


#: one scan for all the pieces, and one for all the words in the lower-cased text (each the same test as a
#: loop of ``in`` over the literals, at about a third of its cost on a result's hundred thousand strings)
_ANY_PIECE = lazy("|".join(re.escape(piece) for piece in _VALUE_PIECES))
_ANY_WORD = lazy("|".join(re.escape(word) for word in _NAME_WORDS))


def mask_text(text: str) -> str:
    """Mask token shapes, URL credentials, secret query values, auth headers and ``key: value`` secrets."""
    if not text or _nothing_to_mask(text):
        return text
    if any(piece in text for piece in _VALUE_PIECES[:-1]):  # each token shape starts with one of them
        text = SECRET_VALUE.sub(MASK, text)
    if "AC" in text or "SK" in text:
        text = TWILIO.sub(MASK, text)
    if "://" in text:
        text = URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + "@", text)
    if _HINT.search(text) is None:  # every pattern below needs one of these words
        return text
    text = QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = AUTH_VALUE.sub(lambda m: m.group(1) + MASK, text)
    text = KEY_VALUE.sub(_mask_quoted, text)
    return OPTION_VALUE.sub(_mask_quoted, text)


#: ``--api-key sk``, ``"--api-key", "sk"`` (YAML/JSON flow lists), ``--api-key=sk`` inside free text; a
#: vertical tab or form feed between them counts as a space (shells do not split there, but a reader sees one).
OPTION_VALUE = lazy(
    rf"((?<![\w-])[\"']?--?[a-z0-9_.-]{{0,64}}?{_KW}{_TAIL}[\"']?(?:[ \t\v\f]{{0,8}}[,=][ \t\v\f]{{0,8}}|[ \t\v\f]{{1,8}}))"
    r"(\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|(?!-)[^\s\"',\]]+)",
    re.IGNORECASE,
)


#: Arguments longer than this are masked as text only (shlex is slow on a hostile megabyte)
SHELL_SPLIT_MAX = 64 * 1024


#: what :func:`shlex.split` separates words at (``shlex.whitespace``)
_SHELL_WHITESPACE = lazy(r"[ \t\r\n]+")


def _mask_shell(arg: str) -> str:
    """A ``bash -c`` script (or any argument holding words): mask each word as an argv."""
    text = mask_text(arg)
    if len(text) > SHELL_SPLIT_MAX:
        return text
    if "'" in text or '"' in text or "\\" in text:
        try:
            words = shlex.split(text)
        except ValueError:
            return text
    else:  # no quoting: shlex.split is a split at its whitespace, 20 times faster done here
        words = [w for w in _SHELL_WHITESPACE.split(text) if w]
    masked = mask_argv(words) if len(words) > 1 else words
    return text if masked == words else shlex.join(masked)



def _secret_assignment(name: str) -> bool:
    """``HF_TOKEN=`` / ``MY_SESSION=`` (environment-style names) or ``db_password=``; not ``bypass=``."""
    return bool(_has_keyword(name) or (name.isupper() and _secret_name(name)))


def mask_argv(argv: list[str]) -> list[str]:
    """Mask values after ``--api-key``-style options, secret ``NAME=value`` words and tokens."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if _nothing_to_mask(arg):  # the common case: no pattern below could change it
            out.append(arg)
            continue
        if arg.startswith("-") and "=" in arg:
            opt, _, _value = arg.partition("=")
            if _secret_option(opt):
                out.append(f"{opt}={MASK}")
                continue
        elif _secret_option(arg):
            out.append(arg)
            hide_next = True
            continue
        assignment = ASSIGNMENT.match(arg)
        if assignment and _secret_assignment(assignment.group(1)):
            out.append(f"{assignment.group(1)}={MASK}")
            continue
        out.append(_mask_shell(arg) if any(ch.isspace() for ch in arg) else mask_text(arg))
    return out


#: :func:`mask_text` of short strings, remembered (results repeat the same keys and titles; fleet
#: workers mask thousands of results); bounded in entries and in each entry's size.
_mask_short = functools.lru_cache(maxsize=1 << 14)(mask_text)


def _mask(text: str) -> str:
    return _mask_short(text) if len(text) <= 256 else mask_text(text)


def mask_data(obj: Any) -> Any:
    """Every string inside a JSON-like value masked with :func:`mask_text` (keys too)."""
    if isinstance(obj, str):
        return _mask(obj)
    if isinstance(obj, (list, tuple)):
        return [mask_data(v) for v in obj]
    if isinstance(obj, dict):
        return {_mask(k) if isinstance(k, str) else k: mask_data(v) for k, v in obj.items()}
    return obj


def _secret_name(name: str) -> bool:
    """Whether an environment-style name holds a secret word (``SECRET_NAME``)."""
    return SECRET_NAME.search(name) is not None


def secret_name(name: str) -> bool:
    """Whether an option, key or variable name says its value is a secret (``--api-key``, ``DB_PASS``)."""
    return _secret_name(name) or _has_keyword(name)


def filter_environ(pairs: dict[str, str]) -> dict[str, str]:
    """Keep allowlisted names only; mask secret-looking names among them."""
    kept: dict[str, str] = {}
    for name, value in pairs.items():
        if not env_allowed(name):
            continue
        kept[name] = MASK if _secret_name(name) else mask_text(value)
    return kept


def parse_environ(raw: bytes) -> dict[str, str]:
    """Parse NUL-separated ``NAME=value`` records (``/proc/<pid>/environ``)."""
    env: dict[str, str] = {}
    for record in raw.split(b"\0"):
        name, sep, value = record.decode("utf-8", "replace").partition("=")
        if sep and name:
            env[name] = value
    return env


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


_ENV_NAME_LINE = lazy(r"^\s*(?:-\s*)?name:\s*[\"']?([A-Za-z_][A-Za-z0-9_.-]*)[\"']?\s*(?:#.*)?$")
_ENV_VALUE_LINE = lazy(r"^(\s*value:\s*)(\S(?:.*\S)?)(\s*)$")
_ENV_FLOW = lazy(r"(name:\s*[\"']?([A-Za-z_][A-Za-z0-9_.-]*)[\"']?\s*,\s*value:\s*)(\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s,}]+)")
_LIST_ITEM = lazy(r"^(\s*-\s+)(\S(?:.*\S)?)(\s*)$")
_UNIT_ENV = lazy(r"^(\s*Environment\s*=\s*)((?:.*\S)?)(\s*)$")


def _secret_env_name(name: str) -> bool:
    return _secret_name(name)


def _unit_environment(m: re.Match[str]) -> str:
    """``Environment='A=1' "HF_TOKEN=x y"``: mask secret assignments, whatever the quoting."""
    try:
        words = shlex.split(m.group(2))
    except ValueError:
        return m.group(1) + mask_text(m.group(2)) + m.group(3)
    masked = []
    for word in words:
        name, sep, _value = word.partition("=")
        masked.append(f"{name}={MASK}" if sep and _secret_env_name(name) else mask_text(word))
    return m.group(1) + " ".join(shlex.quote(w) for w in masked) + m.group(3)


def sanitize_deploy(raw: bytes) -> bytes:
    """Unit, compose and manifest files with secret assignments, options, env pairs and tokens masked.

    Also handled across lines: a Kubernetes ``- name: HF_TOKEN`` followed by ``value: ...``, and a YAML
    list item ``- --api-key`` followed by the item holding the key.
    """
    text = raw.decode("utf-8", "replace")
    lines = []
    hide_value = hide_item = False
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        if hide_value and (m := _ENV_VALUE_LINE.match(body)):
            body = m.group(1) + MASK + m.group(3)
            hide_value = False
        elif hide_item and (m := _LIST_ITEM.match(body)):
            body = m.group(1) + MASK + m.group(3)
            hide_item = False
        else:  # each pattern runs only on lines holding its literal part ("name:", "-", "Environment")
            keyed = "name:" in body
            name = _ENV_NAME_LINE.match(body) if keyed else None
            if name:
                hide_value = _secret_env_name(name.group(1))
            elif body.strip():
                hide_value = hide_value and body.lstrip().startswith(("valueFrom", "#"))
            item = _LIST_ITEM.match(body) if "-" in body else None
            hide_item = bool(item and _secret_option(item.group(2).strip("\"'")))
            if "Environment" in body:
                body = _UNIT_ENV.sub(_unit_environment, body)
            if keyed:
                body = _ENV_FLOW.sub(lambda m: m.group(1) + MASK if _secret_env_name(m.group(2)) else m.group(0),
                                     body)
            body = mask_text(body)
        lines.append(body + end)
    return "".join(lines).encode()


def sanitize_mounts(raw: bytes) -> bytes:
    """``/proc/<pid>/mounts`` keeping only the ``/dev/shm`` line (the rest is large and says nothing we use)."""
    lines = raw.decode("utf-8", "replace").splitlines()
    return "".join(line + "\n" for line in lines if line.split()[1:2] == ["/dev/shm"]).encode()


def sanitize(path: str, raw: bytes, sanitizer: str | None) -> bytes:
    """Apply the named sanitiser of a spec to the file at ``path`` (none named: :func:`sanitize_text`).

    Command lines, environments, deployment files and the kernel command line first keep only the
    values a check reads (:mod:`doctor.allowlist`); the token patterns here run after, as a second net.
    """
    from doctor import allowlist

    if sanitizer == "proc":
        if path.endswith("/environ"):
            env = allowlist.keep_environ(filter_environ(parse_environ(raw)))
            return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())
        if path.endswith("/cmdline"):
            if not raw:
                return raw
            trailing = raw.endswith(b"\0")
            parts = raw.rstrip(b"\0").decode("utf-8", "replace").split("\0")
            return sanitize_cmdline(b"\0".join(p.encode() for p in allowlist.keep_argv(parts)) + (b"\0" if trailing else b""))
        if path.endswith("/status"):
            return sanitize_status(raw)
    if sanitizer == "cpuinfo":
        return sanitize_cpuinfo(raw)
    if sanitizer == "deploy":
        return sanitize_deploy(allowlist.keep_deploy(raw.decode("utf-8", "replace"), path, rewrites=False).encode())
    if sanitizer == "cmdline":
        text = raw.decode("utf-8", "replace").replace("\0", " ").strip()
        return sanitize_text((allowlist.keep_cmdline(text) + "\n").encode())
    if sanitizer == "mounts":
        return sanitize_mounts(raw)
    if b"ommand line: " in raw and b"\0" not in raw:
        raw = allowlist.keep_cmdline_lines(raw.decode("utf-8", "replace")).encode()
    return sanitize_text(raw)


def sanitize_text(raw: bytes) -> bytes:
    """Any other file or command output: secrets masked when it is UTF-8 text (binary passes unchanged).

    A kernel command line may hold a kickstart URL with credentials, a log line a bearer token.
    """
    if b"\0" in raw:
        return raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
    masked = mask_text(text)
    return raw if masked == text else masked.encode("utf-8")
