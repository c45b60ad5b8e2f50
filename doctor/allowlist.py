"""Keep only the values a check reads: command lines, environments, kernel parameters, deployment files.

Every option value, environment value, kernel parameter value and config value is replaced by
:data:`MASK` unless a check (``@check(reads=...)``) or a derived fact (``READS`` in its module) declares
that it reads it (:func:`allowed`). The name stays, so the structure reads as before
(``--api-keys=<redacted>``, ``FOO_PW=<redacted>``, ``root=<redacted>``). The token patterns of
:mod:`doctor.secrets` still run over what is kept, as a second net.

Applied when a snapshot is collected and when facts are built (so a live run, an old snapshot, a
sosreport and a saved result give the same masked facts to every output: reports, baseline, diff,
fleet and the digest).
"""

from __future__ import annotations

import functools
import importlib
import re
import shlex
from collections.abc import Iterable
from typing import Any

from doctor.lazyre import lazy
from doctor.reads import Reads
from doctor.record import record
from doctor.secrets import MASK, mask_text, secret_name

#: Modules outside the checks whose code reads values (each holds a ``READS``).
CORE_MODULES = ("doctor.derived.procs", "doctor.derived.net", "doctor.derived.rdma", "doctor.facts.serve_config")


def _norm_flag(name: str) -> str:
    return name.lower().replace("_", "-")


def _norm_key(name: str) -> str:
    return name.strip("\"'").lower().replace("-", "_")


@record
class Allow:
    """The union of every declared :class:`~doctor.reads.Reads`, normalised for lookups."""

    flags: frozenset[str]
    flag_prefixes: tuple[str, ...]
    env: frozenset[str]
    params: frozenset[str]
    param_prefixes: tuple[str, ...]
    keys: frozenset[str]
    #: a deployment-file line holding one of these options is one a fix rewrites: kept whole
    rewrites: re.Pattern[str] | None = None

    def rewritten(self, line: str) -> bool:
        """Whether a fix may rewrite ``line`` (it holds a declared ``rewrites`` option)."""
        return self.rewrites is not None and "-" in line and self.rewrites.search(line) is not None

    def flag(self, name: str) -> bool:
        """Whether the value of option ``name`` (``--x``, ``--x.sub``, ``-O``) is read."""
        n = _norm_flag(name)
        return n in self.flags or n.split(".", 1)[0] in self.flags or n.startswith(self.flag_prefixes)

    def param(self, name: str) -> bool:
        n = name.replace("-", "_")
        return n in self.params or n.startswith(self.param_prefixes)

    def key(self, name: str) -> bool:
        return _norm_key(name) in self.keys


def build_allow(declared: Iterable[Reads]) -> Allow:
    flags: set[str] = set()
    env: set[str] = set()
    params: set[str] = set()
    keys: set[str] = set()
    rewrites: set[str] = set()
    for r in declared:
        rewrites.update(_norm_flag(f) for f in r.rewrites)
        flags.update(_norm_flag(f) for f in r.flags)
        env.update(r.env)
        params.update(p.replace("-", "_") for p in r.params)
        keys.update(_norm_key(k) for k in r.keys)
    return Allow(frozenset(f for f in flags if not f.endswith("*")), tuple(sorted(f[:-1] for f in flags if f.endswith("*"))),
                 frozenset(env), frozenset(p for p in params if not p.endswith("*")),
                 tuple(sorted(p[:-1] for p in params if p.endswith("*"))), frozenset(keys),
                 re.compile("(?<![\\w-])(?:" + "|".join(re.escape(f).replace("\\-", "[-_]") for f in sorted(rewrites))
                            + ")(?![\\w-])", re.IGNORECASE) if rewrites else None)


@functools.cache
def allowed() -> Allow:
    """What the loaded checks and the core modules read (computed once per process)."""
    from doctor.registry import load_checks

    declared = [getattr(importlib.import_module(m), "READS", Reads()) for m in CORE_MODULES]
    checks, _errors = load_checks()
    return build_allow(declared + [c.reads for c in checks])


# --- command lines -------------------------------------------------------------------------------

#: options whose value is a ``NAME=value`` environment setting (docker/podman ``-e``)
ENV_OPTIONS = frozenset({"-e", "--env"})
#: options whose value is a shell script (``bash -c``, ``sh -c``)
SCRIPT_OPTIONS = frozenset({"-c"})
#: words that end one command and start the next in a shell line
SHELL_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "then", "do", "exec", "sudo", "env", "nohup"})
_ASSIGN = lazy(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_NUMBER = lazy(r"^-[0-9.]+$")
#: a sub-command or module name (``serve``, ``vllm.entrypoints``): kept only in the sub-command slot, the
#: first word after the program (``vllm serve``); anywhere else a plain word is a value (a password
#: given as an argument, ``redis-cli auth WORD``) and masked
_NAME_WORD = lazy(r"^[a-z][a-z_.-]{0,63}$")
#: a path (``/usr/bin/x``, ``./run.py``): kept wherever it stands
_PATH_WORD = lazy(r"^\.{0,2}/[A-Za-z0-9_./+@-]{0,1023}$")
_WORDS_IN = lazy(r"[ \t\r\n]+")
#: a piece of a path (between ``/ . - _ + @``) as people name files: a word with at most four digits after
#: it (``Llama``, ``cuda12``, ``Instruct``), a number with at most two letters after it (``70B``, ``535``),
#: or at most four characters of anything (``8x7B``); a random string (a token that starts with ``/``)
#: is none of these
_PATH_PIECE = lazy(r"[A-Za-z]{1,64}[0-9]{0,4}|[0-9]{1,20}[A-Za-z]{0,2}|[A-Za-z0-9]{0,4}")
_PATH_SPLIT = lazy(r"[/._+@-]")
#: letters cased as words are: lower, upper, Capitalised or CamelCase words (``MyServer``), capitals before or after
#: them (``GeForce``, ``TensorRT``, ``AWQ``); random letters flip case every other letter or so
_WORD_CASE = lazy(r"(?:[A-Z][a-z])?(?:[A-Z]{0,8}[a-z]{2,})*[A-Z]{0,8}")


#: what a name (an option's, a variable's, a key's) is made of: words, each letters with at most a few digits
#: after them (``tp8``, ``V1``) or digits alone, joined by ``-``, ``_``, ``.``, ``/`` or ``:``
#: (``--tensor-parallel-size``, ``NCCL_IB_HCA``, ``nvidia.com/gpu``). A random string in a name's place
#: (``--aB3xY9...``, a token used as a key) is no name: it is masked like a value.
_NAME = lazy(r"(?:[A-Za-z]{1,64}[0-9]{0,4}|[0-9]{1,12})(?:[-_.:/]{1,2}(?:[A-Za-z]{1,64}[0-9]{0,4}|[0-9]{1,12}))*[-_]{0,2}")


def keep_name(name: str) -> str:
    """``name`` as shown: kept when it is name-shaped and no token (:func:`~doctor.secrets.mask_text`),
    else :data:`MASK`. Leading dashes (an option's) and quotes stay."""
    body = name.lstrip("-")
    if not body or len(body) > 128:
        return name[:len(name) - len(body)] + MASK if body else name
    if not _NAME.fullmatch(body):
        return name[:len(name) - len(body)] + MASK
    return mask_text(name)


def _is_option(word: str) -> bool:
    return len(word) > 1 and word.startswith("-") and _NUMBER.match(word) is None


def env_value(name: str, value: str, allow: Allow | None = None) -> str:
    """The value of environment variable ``name``: kept when a check judges it, else :data:`MASK`."""
    a = allow or allowed()
    return mask_text(value) if name in a.env else MASK


def _assignment(word: str, a: Allow) -> str | None:
    m = _ASSIGN.match(word)
    return f"{keep_name(m.group(1))}={env_value(m.group(1), m.group(2), a)}" if m else None


def _option_value(flag: str, value: str, a: Allow) -> str:
    if flag in ENV_OPTIONS:
        return _assignment(value, a) or MASK
    if flag in SCRIPT_OPTIONS:
        return keep_shell(value)
    if a.flag(flag):
        return mask_text(value)
    return MASK


def is_path(word: str) -> bool:
    """``word`` is a path as people name files (``/usr/bin/vllm``, ``./run.py``,
    ``/models/Llama-3.1-70B-Instruct``): path-shaped and every piece of it a word or number
    (:data:`_PATH_PIECE`) whose letters are cased as words are (:data:`_WORD_CASE`). A token that starts
    with ``/`` (an AWS secret key or a base64 value does one time in 64) is no path."""
    if _PATH_WORD.match(word) is None:
        return False
    for piece in _PATH_SPLIT.split(word):
        if not _PATH_PIECE.fullmatch(piece):
            return False
        letters = piece.rstrip("0123456789")
        if len(letters) >= 5 and not _WORD_CASE.fullmatch(letters):
            return False
    return True


def _positional(word: str, slot: bool) -> str:
    """A word that is neither an option nor its value: a shell line, a path, the sub-command (``slot``)."""
    if any(ch.isspace() for ch in word):
        return keep_shell(word)
    return mask_text(word) if is_path(word) or (slot and _NAME_WORD.match(word)) else MASK


def keep_argv(words: list[str], program: bool = True) -> list[str]:
    """``words`` (an argv) with every value a check does not read replaced by :data:`MASK`.

    Kept: the program (``words[0]`` when ``program``), option names, the values of declared options,
    ``NAME=value`` words of judged variables, the sub-command (the word right after the program and
    the script it runs, ``python3 /usr/bin/vllm serve``), paths. An option's value may be the next word (``--api-key`` ``VALUE``); a short option may carry
    it (``-pVALUE``).
    """
    a = allowed()
    out: list[str] = []
    expect: str | None = None
    first = program
    slot = False  # the next word is in the sub-command slot (right after the program)
    for word in words:
        after_program, slot = slot, False
        if expect is not None:
            flag, expect = expect, None
            if not _is_option(word):
                out.append(_option_value(flag, word, a))
                continue
        if first and not _is_option(word):
            kept = _assignment(word, a)  # FOO=1 vllm serve: the program comes after the assignments
            if kept is None:
                first = False
                slot = True
                kept = mask_text(word) if not any(ch.isspace() for ch in word) else keep_shell(word)
            out.append(kept)
            continue
        first = False
        if word in SHELL_SEPARATORS:
            out.append(word)
            first = True
            continue
        if _is_option(word):
            name, eq, value = word.partition("=")
            if eq:
                out.append(f"{keep_name(name)}={_option_value(name, value, a)}")
            elif word.startswith("--") or len(name) == 2:
                out.append(keep_name(name))  # a name is kept, but never a token or random string
                expect = name
            elif a.flag(name) or a.flag(name[:2]):
                out.append(mask_text(name))  # -O0, -tp (declared), -cc.mode
                expect = name
            else:
                out.append(name[:2] + MASK)  # -pVALUE: a short option with its value attached
            continue
        kept = _assignment(word, a)
        out.append(kept if kept is not None else _positional(word, after_program))
        slot = after_program and kept is None and is_path(word)  # python3 /usr/bin/vllm serve
    return out


def keep_shell(text: str, program: bool = True) -> str:
    """A shell command line with :func:`keep_argv` applied to its words; unchanged when nothing is masked.
    A trailing backslash (the line continues) stays; ``program=False`` for a continuation line."""
    body = text.rstrip()
    cont = body.endswith("\\")
    if cont:
        body = body[:-1].rstrip()
    if not body.strip():
        return text
    try:
        words = shlex.split(body, comments=False)
    except ValueError:
        words = [w for w in _WORDS_IN.split(body) if w]
    kept = keep_argv(words, program)
    if kept == words:
        return text
    return join(kept) + (" \\" if cont else "")


_STAND_IN = "REDACTED0VALUE"


def join(words: list[str]) -> str:
    """``shlex.join`` that leaves :data:`MASK` and shell separators unquoted (``--api-key <redacted> && x``)."""
    return " ".join(w if w in SHELL_SEPARATORS else shlex.quote(w.replace(MASK, _STAND_IN)).replace(_STAND_IN, MASK)
                    for w in words)


def keep_environ(pairs: dict[str, str]) -> dict[str, str]:
    """An environment: names of :data:`doctor.secrets.ENV_ALLOW` kept, values only of judged variables."""
    from doctor.secrets import env_allowed

    a = allowed()
    return {name: env_value(name, value, a) for name, value in pairs.items() if env_allowed(name)}


# --- kernel command line -------------------------------------------------------------------------

#: bare kernel parameters (no value: their presence is the setting) kept besides the ones a check judges;
#: any other bare word is a value (a passphrase typed onto the line) and masked
BOOT_FLAGS = frozenset({"ro", "rw", "quiet", "splash", "nosplash", "rhgb", "nomodeset", "single", "debug",
                        "nokaslr", "noapic", "nolapic", "earlyprintk", "ignore_loglevel", "noresume", "nosmp",
                        "nowatchdog", "nohz", "noefi", "nopti", "nospectre_v2", "nofb", "text", "emergency",
                        "rescue", "fips", "audit", "selinux", "enforcing", "rootwait", "init", "recovery"})


def keep_param(name: str, value: str, allow: Allow | None = None) -> str:
    """The value of kernel parameter ``name``: kept when a check judges it, else :data:`MASK`."""
    if not value:
        return value  # a bare flag (``ro``, ``quiet``): its presence is the setting
    a = allow or allowed()
    return mask_text(value) if a.param(name) else MASK


def keep_cmdline(raw: str) -> str:
    """A kernel command line with the values of parameters no check judges replaced by :data:`MASK`."""
    a = allowed()
    try:
        words = shlex.split(raw)
    except ValueError:
        words = raw.split()
    out = []
    for word in words:
        name, eq, value = word.partition("=")
        if eq:
            kept = keep_param(name, value, a)
            out.append(f"{mask_text(name)}={kept if kept == MASK or not any(c.isspace() for c in kept) else shlex.quote(kept)}")
        else:
            out.append(word if word in BOOT_FLAGS or a.param(word) else MASK)
    return " ".join(out)


#: lines of kernel logs and command outputs that quote the kernel command line
_CMDLINE_LINE = lazy(r"^(.*?(?:Kernel command line|Command line): )(.*)$")


def keep_cmdline_lines(text: str) -> str:
    """``text`` with every ``Kernel command line: ...`` line (dmesg, journal) masked by :func:`keep_cmdline`."""
    if "ommand line: " not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "ommand line: " in line and (m := _CMDLINE_LINE.match(line)):
            lines[i] = m.group(1) + keep_cmdline(m.group(2))
    return "\n".join(lines)


# --- deployment and config files -----------------------------------------------------------------

#: unit file keys whose values are structure, not secrets (``Environment=`` and ``Exec*=`` are parsed)
UNIT_KEYS = frozenset({
    "Description", "Documentation", "After", "Before", "Requires", "Wants", "BindsTo", "PartOf", "Conflicts",
    "WantedBy", "RequiredBy", "Alias", "Also", "Type", "Restart", "RestartSec", "TimeoutStartSec",
    "TimeoutStopSec", "User", "Group", "WorkingDirectory", "EnvironmentFile", "KillMode", "KillSignal",
    "LimitMEMLOCK", "LimitNOFILE", "LimitSTACK", "LimitCORE", "CPUAffinity", "NUMAPolicy", "NUMAMask",
    "Nice", "Slice", "Delegate", "StandardOutput", "StandardError", "SyslogIdentifier", "RemainAfterExit",
    "DeviceAllow", "AllowedCPUs", "IOSchedulingClass", "CPUSchedulingPolicy", "PrivateTmp", "OOMScoreAdjust",
})
#: YAML/JSON keys whose values are structure (names, kinds, images, sizes), not secrets
STRUCTURE_KEYS = frozenset({
    "apiversion", "kind", "name", "namespace", "image", "imagepullpolicy", "replicas", "restart", "restartpolicy",
    "runtime", "runtimeclassname", "ipc", "network_mode", "hostnetwork", "hostipc", "hostpid", "privileged",
    "shm_size", "medium", "sizelimit", "containerport", "protocol", "mountpath", "driver", "count",
    "capabilities", "nvidia.com/gpu", "memory", "cpu", "version", "services", "containers", "spec", "metadata",
    "resources", "limits", "requests", "env", "environment", "volumes", "volumemounts", "ports", "deploy",
    "devices", "reservations", "template", "selector", "matchlabels", "labels", "hostname", "path", "type",
    "emptydir", "hostpath", "ulimits", "memlock", "soft", "hard", "stdin_open", "tty", "cpuset", "cpus",
})
#: keys whose value (a string, a list, a block) is a command line
COMMAND_KEYS = frozenset({"command", "args", "entrypoint", "cmd", "exec", "script", "run"})
ENV_KEYS = frozenset({"env", "environment"})
_UNIT_LINE = lazy(r"^(\s*)([A-Za-z][A-Za-z0-9]*)(\s*=\s*)(.*?)(\s*)$")
_SECTION = lazy(r"^\s*\[[A-Za-z][A-Za-z0-9 ._-]*\]\s*$")
_YAML_KEY = lazy(r"""^(\s*)((?:-\s+)?)(["']?)([A-Za-z0-9_./-]{1,128})\3(\s*:)(?:(\s+)(.*?))?(\s*)$""")
_YAML_ITEM = lazy(r"^(\s*)(-)(\s+)(.*?)(\s*)$")
_BLOCK = lazy(r"^[|>][0-9+-]{0,3}(\s+#.*)?$")
_FLOW_ITEMS = lazy(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^,\]]*)\s*(?:,|$)""")
_CONTINUED = lazy(r"\\\s*$")
CONTINUATION = " \\"


def _kind(path: str, lines: list[str]) -> str:
    lower = path.lower()
    if lower.endswith((".yaml", ".yml", ".json")):
        return "yaml"
    if lower.endswith((".service", ".conf", ".socket", ".timer", ".target", ".mount")) or any(
            _SECTION.match(line) for line in lines[:200]):
        return "unit"
    if sum(1 for line in lines[:200] if _YAML_KEY.match(line)) >= 2 and not lower.endswith((".sh", ".env")):
        return "yaml"
    return "shell"


def _unquote(value: str) -> tuple[str, str, str]:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[0], value[1:-1], value[0]
    return "", value, ""


def _flow_list(value: str, command: bool) -> str:
    """``["vllm", "--api-key", "x"]``: the items as an argv (command keys) or each masked."""
    inner = value.strip()[1:-1]
    items = [m.group(1) for m in _FLOW_ITEMS.finditer(inner) if m.group(1) is not None][:4096]
    items = [i for i in items if i != ""]
    bare = [_unquote(i)[1] for i in items]
    kept = keep_argv(bare) if command else [MASK] * len(bare)
    if kept == bare:
        return value
    return "[" + ", ".join(f'"{k}"' if k != MASK else MASK for k in kept) + "]"


_FLOW_KEY = lazy(r"""^\s*("[^"]*"|'[^']*'|[^:"'{}\[\],]+?)\s*:(?:\s+|$)(.*)$""", re.DOTALL)


def _flow_split(inner: str) -> list[str] | None:
    """The items of a flow collection's inside, split at the commas outside quotes and brackets; None if
    it does not close (then the whole value is masked)."""
    items, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(inner):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth < 0:
                return None
        elif ch == "," and depth == 0:
            items.append(inner[start:i])
            start = i + 1
    if quote or depth:
        return None
    items.append(inner[start:])
    return [item for item in items if item.strip()][:4096]


def _flow_map(value: str, parent: str, a: Allow, depth: int = 0) -> str:
    """``{HF_TOKEN: x, labels: {token: y}}``: every key kept, each value as the same key's value on a
    line of its own would be (an environment map's by the variable, a nested map by its keys)."""
    items = _flow_split(value.strip()[1:-1]) if depth < 16 else None
    if items is None:
        return MASK
    out = []
    for item in items:
        m = _FLOW_KEY.match(item)
        if m is None:
            out.append(MASK)
            continue
        key, val = m.group(1), m.group(2).strip()
        q, name, _ = _unquote(key)
        k = _norm_key(name)
        vq, inner, _ = _unquote(val)
        if val.startswith("{") and val.endswith("}"):
            kept = _flow_map(val, k, a, depth + 1)
        elif val.startswith("[") and val.endswith("]"):
            kept = _flow_list(val, k in COMMAND_KEYS)
        elif not val:
            kept = ""
        elif parent in ENV_KEYS:
            kept = env_value(name, inner, a)
        elif k in COMMAND_KEYS:
            kept = keep_shell(inner)
        elif a.key(k) or (k in STRUCTURE_KEYS and k not in ("name", "hostname")):
            kept = mask_text(inner)
        else:
            kept = MASK
        shown = f"{vq}{kept}{vq}" if kept not in (MASK, "") and not kept.startswith(("{", "[")) else kept
        name = keep_name(name)  # a key is kept, but never a token or random string
        out.append(f"{q}{name}{q}: {shown}" if shown else f"{q}{name}{q}:")
    return "{" + ", ".join(out) + "}"


def _unit_env(value: str, a: Allow) -> str:
    try:
        words = shlex.split(value)
    except ValueError:
        return MASK
    out = []
    for word in words:
        name, eq, val = word.partition("=")
        out.append(f"{keep_name(name)}={env_value(name, val, a)}" if eq and _ASSIGN.match(word) else MASK)
    return value if out == words else join(out)


def _assignment_line(line: str, a: Allow) -> str | None:
    """``NAME=value`` / ``export NAME=value`` (env files, ``/etc/default`` files): a value that is a command
    line is masked as one (``KUBELET_ARGS="--flag=v"``), any other is kept only for a judged variable."""
    body = line.strip()
    prefix = "export " if body.startswith("export ") else ""
    m = _ASSIGN.match(body[len(prefix):])
    if not m:
        return None
    name, value = m.group(1), m.group(2)
    q, inner, _ = _unquote(value)
    if name in a.env:
        kept = mask_text(inner)
    elif inner.lstrip().startswith("-") and not secret_name(name):
        kept = keep_shell(inner, program=False)
    else:
        kept = MASK
    indent = line[:len(line) - len(line.lstrip())]
    return f"{indent}{prefix}{keep_name(name)}={q}{kept}{q}"


class _Yaml:
    """Line-by-line masking of YAML (and JSON) with a stack of open keys for context."""

    def __init__(self, a: Allow) -> None:
        self.a = a
        self.stack: list[tuple[int, str]] = []  # (indent, key) of keys whose value is on the following lines
        self.block: tuple[int, bool] | None = None  # open block scalar: (indent of its key, command?)
        self.inner: _Yaml | None = None  # a block that is not a command is read as a YAML document of its own
        self.env_name: str | None = None  # last "- name: X" in an env list
        self.argv: list[str] = []  # command list items seen so far (flag pairing)
        self.continued = False  # the last block line ended with a backslash

    def context(self, indent: int) -> str:
        while self.stack and self.stack[-1][0] >= indent:
            self.stack.pop()
        return self.stack[-1][1] if self.stack else ""

    def in_command(self, indent: int) -> bool:
        return self.context(indent) in COMMAND_KEYS

    def value(self, key: str, value: str, indent: int, parent: str, item: bool = False) -> str:
        k = _norm_key(key)
        if not value or value.startswith("#"):
            return value
        if _BLOCK.match(value):
            self.block = (indent, k in COMMAND_KEYS or parent in COMMAND_KEYS)
            self.continued = False
            return value
        if value.startswith("[") and value.rstrip().endswith("]"):
            return _flow_list(value, k in COMMAND_KEYS)
        if value.startswith("{"):
            return _flow_map(value, k, self.a) if value.rstrip().endswith("}") else MASK
        if value.startswith(("&", "*")) and " " not in value:
            return value  # an anchor or alias
        q, inner, _ = _unquote(value)
        if k in COMMAND_KEYS:
            return f"{q}{keep_shell(inner)}{q}"
        if parent in ENV_KEYS and not item and k not in ("name", "value") and _ASSIGN.match(f"{key}=x"):  # compose environment map
            kept = env_value(key, inner, self.a)
        elif k == "name":
            self.env_name = inner
            kept = mask_text(inner)
        elif k == "value" and self.env_name is not None:
            kept = env_value(self.env_name, inner, self.a)
        elif self.a.key(k) or k in STRUCTURE_KEYS:
            kept = mask_text(inner)
        else:
            kept = MASK
        return f"{q}{kept}{q}" if kept != MASK else MASK

    def line(self, line: str) -> str:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if self.block is not None:
            if not stripped or indent > self.block[0]:
                if not stripped:
                    return line
                if not self.block[1]:
                    self.inner = self.inner or _Yaml(self.a)
                    return self.inner.line(line)
                kept = keep_shell(stripped, program=not self.continued)
                self.continued = stripped.endswith("\\")
                return line[:indent] + kept
            self.block = self.inner = None
        if not stripped or stripped in ("---", "...", "{", "}", "[", "]", "},", "],"):
            return line
        if stripped.startswith("#"):
            return line[:indent] + "#"
        m = _YAML_KEY.match(line)
        if m:
            key_indent = indent + len(m.group(2))
            parent = self.context(key_indent)
            if m.group(2) and _norm_key(m.group(4)) == "name":
                self.env_name = None
            value = m.group(7) or ""
            json_comma = value.endswith(",")
            if json_comma:
                value = value[:-1]
            if not value or _BLOCK.match(value):
                self.stack.append((key_indent, _norm_key(m.group(4))))
                if _norm_key(m.group(4)) in COMMAND_KEYS:
                    self.argv = []
            kept = self.value(m.group(4), value, key_indent, parent, bool(m.group(2)))
            return (f"{m.group(1)}{m.group(2)}{m.group(3)}{keep_name(m.group(4))}{m.group(3)}{m.group(5)}"
                    f"{m.group(6) or ''}{kept}{',' if json_comma else ''}")
        item = _YAML_ITEM.match(line)
        if item:
            body = item.group(4)
            if _BLOCK.match(body):
                self.block = (indent, self.in_command(indent))
                self.continued = False
                return line
            q, inner, _ = _unquote(body)
            if self.in_command(indent):
                kept = self._command_item(inner)
            elif self.context(indent) in ENV_KEYS and (assigned := _assignment(inner, self.a)) is not None:
                kept = assigned
            elif body.startswith("[") and body.endswith("]"):
                return f"{item.group(1)}-{item.group(3)}{_flow_list(body, False)}"
            else:
                kept = MASK
            return f"{item.group(1)}-{item.group(3)}{q}{kept}{q}" if kept != MASK else f"{item.group(1)}-{item.group(3)}{MASK}"
        if self.in_command(indent):
            return line[:indent] + keep_shell(stripped, program=False)
        return line[:indent] + MASK

    def _command_item(self, word: str) -> str:
        """One item of a ``command:``/``args:`` list, paired with the item before (``- --api-key``, ``- KEY``)."""
        if any(ch.isspace() for ch in word):
            self.argv = []
            return keep_shell(word)
        self.argv.append(word)
        program = not _is_option(self.argv[0]) and len(self.argv) <= 2
        return keep_argv(self.argv[-2:], program=program)[-1]


def _json_value(key: str, value: Any, a: Allow, depth: int = 0) -> Any:
    k = _norm_key(key)
    if depth > 64:
        return MASK
    if isinstance(value, dict):
        return {name: _json_value(str(name), v, a, depth + 1) for name, v in value.items()}
    if isinstance(value, list):
        if k in COMMAND_KEYS and all(isinstance(v, str) for v in value):
            return keep_argv(list(value))
        return [_json_value(key, v, a, depth + 1) for v in value]
    if k in COMMAND_KEYS and isinstance(value, str):
        return keep_shell(value)
    if isinstance(value, bool) or value is None or a.key(k) or k in STRUCTURE_KEYS:
        return mask_text(value) if isinstance(value, str) else value
    return MASK


def _keep_json(text: str, a: Allow) -> str | None:
    """A JSON document with every value masked but those of read and structural keys; None if not JSON."""
    import json

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, (dict, list)):
        return None
    return json.dumps(_json_value("", data, a), indent=2) + "\n"


def keep_deploy(text: str, path: str = "", rewrites: bool = True) -> str:
    """A unit, compose file, manifest, env file or script with every value no check reads masked.

    YAML block scalars (``KEY: >-`` with the value on the lines below) are masked line by line unless
    they hold a command (``command:``/``args:``), which is masked as a command line. With ``rewrites``
    (facts a fix is built from, never a collected snapshot) a line holding an option a fix removes is
    kept whole, the token patterns still masking it; a fix refuses a line holding :data:`MASK`.
    """
    a = allowed()
    if text.lstrip().startswith(("{", "[")) and (kept_json := _keep_json(text, a)) is not None:
        return kept_json
    lines = text.splitlines(keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    kept_lines = _keep_lines(lines, bodies, _kind(path, bodies), a)
    return "".join(mask_text(line) if rewrites and a.rewritten(line) and not line.lstrip().startswith(("#", ";"))
                   else kept for line, kept in zip(lines, kept_lines, strict=True))


def _keep_lines(lines: list[str], bodies: list[str], kind: str, a: Allow) -> list[str]:
    """Each line of a deployment file masked (see :func:`keep_deploy`), one output line per input line."""
    yaml = _Yaml(a)
    out: list[str] = []
    continued: str | None = None  # an ExecStart= or shell line continued with a backslash
    for line, body in zip(lines, bodies, strict=True):
        end = line[len(body):]
        if continued is not None:
            out.append(body[:len(body) - len(body.lstrip())] + keep_shell(body.strip(), program=False) + end)
            continued = continued if _CONTINUED.search(body) else None
            continue
        if kind == "yaml":
            out.append(yaml.line(body) + end)
            continue
        stripped = body.strip()
        if not stripped or _SECTION.match(body):
            out.append(body + end)
            continue
        if stripped.startswith(("#", ";")):
            out.append(body[:len(body) - len(body.lstrip())] + stripped[0] + end)
            continue
        m = _UNIT_LINE.match(body) if kind == "unit" else None
        if m:
            key, value = m.group(2), m.group(4)
            cont = _CONTINUED.search(value) is not None
            inner = value[:-1].rstrip() if cont else value
            if key == "Environment":
                kept = _unit_env(inner, a)
            elif key.startswith("Exec"):
                prefix = len(inner) - len(inner.lstrip("-@:+!"))
                kept = inner[:prefix] + keep_shell(inner[prefix:])
            elif key in UNIT_KEYS:
                kept = mask_text(inner)
            else:
                kept = MASK
            out.append(f"{m.group(1)}{key}{m.group(3)}{kept}{CONTINUATION if cont else ''}{end}")
            continued = key if cont and key.startswith("Exec") else None
            continue
        assigned = _assignment_line(body, a)
        if assigned is not None:
            out.append(assigned + end)
            continue
        out.append(body[:len(body) - len(body.lstrip())] + keep_shell(body.strip()) + end)
        continued = "shell" if _CONTINUED.search(body) else None
    return out


# --- saved results -------------------------------------------------------------------------------


def _evidence_value(source: str, value: str) -> str:
    if source == "proc/cmdline" or source.endswith(("/proc/cmdline", "kernel/cmdline")):
        return keep_cmdline(value)
    if source.endswith("/environ"):
        kept = _assignment(value.strip(), allowed())
        return kept if kept is not None else MASK
    if source.endswith("/cmdline"):
        return keep_shell(value)
    return value


def _digest_value(key: str, value: str) -> str:
    if key.startswith("cmdline."):
        return keep_param(key[len("cmdline."):], value)
    if key.startswith("proc."):
        head, sep, name = key.rpartition(".env.")
        if sep:
            return env_value(name, value)
        if key.endswith(".args"):
            return " | ".join(" ".join(keep_argv(shlex.split(v) if _safe_split(v) else v.split(), program=False))
                              for v in value.split(" | "))
    return value


def _safe_split(text: str) -> bool:
    try:
        shlex.split(text)
    except ValueError:
        return False
    return True


def keep_result(data: Any) -> Any:
    """A saved result (a dict as :mod:`doctor.result_io` validated it) with the host values it quotes
    (evidence of command lines and environments, the kernel command line, the digest) masked as fresh facts are."""
    if not isinstance(data, dict):
        return data
    for finding in data.get("findings") or ():
        if not isinstance(finding, dict):
            continue
        evidence = finding.get("evidence")
        if isinstance(evidence, list):
            for ev in evidence:
                if isinstance(ev, dict) and isinstance(ev.get("source"), str) and isinstance(ev.get("value"), str):
                    ev["value"] = _evidence_value(ev["source"], ev["value"])
    inventory = data.get("inventory")
    if isinstance(inventory, dict):
        if isinstance(inventory.get("cmdline"), str):
            inventory["cmdline"] = keep_cmdline(inventory["cmdline"])
        digest = inventory.get("digest")
        if isinstance(digest, dict):
            inventory["digest"] = {k: _digest_value(str(k), v) if isinstance(v, str) else v for k, v in digest.items()}
    return data
