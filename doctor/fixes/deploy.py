"""Builders that change how a server is started: systemd drop-ins, unit edits, deployment-file patches.

Every change runs unattended and is undone exactly:

* ``unit_env``: a drop-in ``/etc/systemd/system/<unit>.d/90-gnd-<what>.conf`` with ``UnsetEnvironment=``
  and/or ``Environment=``; rollback removes it (an empty ``<unit>.d`` folder may stay; it is inert). Writing the drop-in changes nothing until the unit is
  reloaded and restarted, which interrupts serving, so ``systemctl daemon-reload`` and the restart are
  steps for a human (in both directions).
* ``unit_exec``: a drop-in resetting ``ExecStart=`` to the unit's current command line minus one flag
  (the words are the unit's own text; the write is for a human to review, since it carries a command).
* ``unit_flag``: the flag deleted from the unit file's ``ExecStart=`` line by ``sed`` with a backup
  (used when the command line holds a secret gnd never copies); rollback moves the backup back.
* ``file_patch``: a unified diff that removes lines or one flag from a compose file, Kubernetes
  manifest or server config, applied with ``patch`` and reversed with ``patch -R``; then
  ``docker compose up -d`` / ``kubectl apply -f`` for a human.
* ``process_restart``: a process no unit, compose file or manifest starts: manual steps only.

The builders compute every new text themselves (a flag or an assignment removed), so a crafted
result cannot make them write arbitrary content.
"""

from __future__ import annotations

import re

from doctor.findings import FixStep
from doctor.fixes.base import Fact, FixRejected, Param, Params, builder, unit
from doctor.i18n import N_
from doctor.lazyre import lazy

R, B = "runtime", "rollback"
UNIT_DIR = "/etc/systemd/system"
#: environment variables a fix may unset or set (the ones checks flag)
ENV_NAME = lazy(r"(NCCL|CUDA|PYTORCH|TORCH|TORCHDYNAMO|VLLM|SGLANG|TRTLLM|UCX|NVSHMEM)_[A-Z0-9_]{1,64}")
ENV_VALUE = lazy(r"[A-Za-z0-9_.,:=^/@+-]{0,256}")
#: a command-line flag a fix may remove (one word)
FLAG = lazy(r"-{1,2}[A-Za-z0-9][A-Za-z0-9_.=-]{0,80}")
WHAT = lazy(r"[a-z0-9][a-z0-9-]{0,40}")
#: deployment files a patch may touch: absolute, no ``..``, a YAML/JSON/TOML/env file
PATCH_PATH = lazy(r"/[A-Za-z0-9_@+][A-Za-z0-9_./@+-]{0,1022}\.(ya?ml|json|toml|env)")
UNIT_PATH = lazy(r"/(etc|usr/lib|lib|run)/systemd/system/[A-Za-z0-9@_.:-]{1,200}\.service")
PROGRAM = lazy(r"[A-Za-z0-9_.+:-]{1,64}( [A-Za-z0-9_.+:-]{1,64})?")
KINDS = ("compose", "manifest", "other")


def _run(phase: str, *argv: str, unattended: bool = False, key: str = "") -> FixStep:
    return FixStep(phase, argv=tuple(argv), unattended=unattended, key=key)


def _line(value: object, what: str = "line") -> str:
    if not isinstance(value, str) or len(value) > 4096 or any(not ch.isprintable() and ch != "\t" for ch in value):
        raise FixRejected(f"not a valid {what}")
    return value


def _reload(phase: str, name: str) -> list[FixStep]:
    return [_run(phase, "systemctl", "daemon-reload", key=f"restart:{name}"),
            _run(phase, "systemctl", "restart", name, key=f"restart:{name}")]


def _dropin(name: str, what: str, body: str, unattended: bool) -> list[FixStep]:
    folder = f"{UNIT_DIR}/{name}.d"
    path = f"{folder}/90-gnd-{what}.conf"
    content = f"# Written by gpu-node-doctor; delete this file to undo.\n[Service]\n{body}"
    key = f"file:{path}"
    return [_run(R, "mkdir", "-p", folder, unattended=True, key=key),
            FixStep(R, heredoc=(path, content), unattended=unattended, key=key),
            *_reload(R, name),
            _run(B, "rm", "-f", path, unattended=True, key=key),
            *_reload(B, name)]


def _env_value(value: object) -> str:
    if not isinstance(value, str) or not ENV_VALUE.fullmatch(value):
        raise FixRejected("set: not a plain environment value")
    return value


def _env_name(value: object) -> str:
    if not isinstance(value, str) or not ENV_NAME.fullmatch(value):
        raise FixRejected("not an environment variable a check changes")
    return value


@builder("unit_env", unit=Param(Fact.UNIT), unset=Param(Fact.JUDGED_ENV, 'items'), set=Param(Fact.JUDGED_ENV, 'keys', own=True),
         what=Param(Fact.DROPIN_NAME))
def unit_env(p: Params) -> list[FixStep]:
    """``unit``; ``what``: drop-in name part; ``unset``: [names]; ``set``: {name: value}."""
    name, what = unit(p.raw("unit")), p.text("what", WHAT, "drop-in name")
    unset = p.items("unset", _env_name, 16)
    wanted = {_env_name(k): _env_value(v) for k, v in p.mapping("set", 16).items()}
    if not (unset or wanted):
        raise FixRejected("nothing to unset or set")
    body = "".join(f"UnsetEnvironment={n}\n" for n in unset)
    body += "".join(f'Environment="{k}={v}"\n' for k, v in wanted.items())
    return _dropin(name, what, body, unattended=True)


def split_words(text: str) -> list[str]:
    """Words of a systemd command line, each kept as written (quotes included)."""
    words: list[str] = []
    current = ""
    quote = ""
    escaped = False
    for ch in text:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            current += ch
            escaped = True
        elif quote:
            current += ch
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            current += ch
            quote = ch
        elif ch in " \t":
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
    if quote or escaped:
        raise FixRejected("unbalanced quotes in the command line")
    if current:
        words.append(current)
    return words


def _flag(p: Params) -> str:
    return p.text("flag", FLAG, "command-line flag")


@builder("unit_exec", unit=Param(Fact.UNIT), exec_start=Param(Fact.EXEC_START), flag=Param(Fact.JUDGED_FLAG))
def unit_exec(p: Params) -> list[FixStep]:
    """``unit``; ``exec_start``: the unit's ExecStart= value now; ``flag``: the word to remove."""
    name, flag = unit(p.raw("unit")), _flag(p)
    command = _line(p.raw("exec_start"), "ExecStart= line")
    words = split_words(command)
    kept = [w for w in words if w != flag]
    if len(kept) == len(words) or not kept:
        raise FixRejected(f"exec_start: {flag} is not one of its words")
    what = "no-" + re.sub(r"[^a-z0-9]+", "-", flag.lower()).strip("-")[:36]
    return _dropin(name, what, f"ExecStart=\nExecStart={' '.join(kept)}\n", unattended=False)


@builder("unit_flag", unit=Param(Fact.UNIT), path=Param(Fact.UNIT_FILE), flag=Param(Fact.JUDGED_FLAG))
def unit_flag(p: Params) -> list[FixStep]:
    """``unit``; ``path``: the unit file; ``flag``: the word to delete from its ExecStart= lines."""
    name, flag = unit(p.raw("unit")), _flag(p)
    path = p.text("path", UNIT_PATH, "unit file path")
    if path.rsplit("/", 1)[-1] != name:
        raise FixRejected("path: not the unit's file")
    word = re.escape(flag).replace("\\-", "-")
    expr = f"s/^(ExecStart=.*)[[:space:]]{word}([[:space:]]|$)/\\1\\2/"
    key = f"file:{path}"
    return [_run(R, "sed", "-i.gnd-bak", "-E", expr, path, unattended=True, key=key), *_reload(R, name),
            _run(B, "mv", "-f", f"{path}.gnd-bak", path, unattended=True, key=key), *_reload(B, name)]


def _lines(p: Params, key: str, limit: int) -> list[str]:
    return p.items(key, _line, limit)


def _drop_word(line: str, flag: str) -> str:
    """``line`` without the word ``flag``: a quoted list item with its comma, or a bare word with the blank
    before it."""
    f = re.escape(flag)
    for pattern in (rf"""(["']){f}\1,[ \t]*""", rf""",[ \t]*(["']){f}\1""", rf"""(["']){f}\1""",
                    rf"(?<=\s){f}(?=\s|$)[ \t]?", rf"^{f}(?=\s|$)[ \t]?"):
        new = re.sub(pattern, "", line, count=1)
        if new != line:
            return new
    raise FixRejected(f"old: {flag} is not a word of the line")


def unified_diff(path: str, start: int, old: list[str], new: list[str]) -> str:
    """A unified diff replacing ``old`` (from line ``start``) by ``new``, with no context lines: the patch
    carries only the lines it changes, never neighbouring lines that hold other values."""
    head = f"@@ -{start},{len(old)} +{start if new else start - 1},{len(new)} @@\n"
    body = "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new)
    return f"--- {path}\n+++ {path}\n{head}{body}"


def _set_lines(old: list[str], name: str, value: str) -> list[str]:
    """``old`` with ``name``'s value replaced: ``NAME=v``, ``NAME: v`` or a manifest's ``name:`` / ``value:`` pair."""
    new: list[str] = []
    after_name = False
    for line in old:
        changed = re.sub(rf"(?<![A-Za-z0-9_]){name}=[^\s\"'#]*", f"{name}={value}", line, count=1)
        if changed == line:
            changed = re.sub(rf"^(\s+{name}:\s*).*$", rf'\g<1>"{value}"', line)
        if changed == line and after_name:
            changed = re.sub(r"^(\s*value:\s*).*$", rf'\g<1>"{value}"', line)
        after_name = re.match(rf"""^\s*-?\s*name:\s*["']?{name}["']?\s*$""", line) is not None
        new.append(changed)
    if new == old:
        raise FixRejected(f"old: no setting of {name} to change")
    return new


@builder("file_patch", path=Param(Fact.DEPLOY_FILE), kind=Param(Fact.FILE_KIND),
         old=Param(Fact.CHANGED_LINES), start=Param(Fact.LINE_OF), drop=Param(Fact.JUDGED_FLAG), set=Param(Fact.JUDGED_ENV, 'keys', own=True))
def file_patch(p: Params) -> list[FixStep]:
    """``path``: a deployment file the checks read; ``kind``: compose, manifest or other; ``start``: the
    line number of the first ``old`` line; ``old``: the lines to change (the file's own, holding a
    setting the check judges); ``drop``: the judged flag to remove from the one ``old`` line ("" deletes
    the ``old`` lines); or ``set``: {judged variable: value} to give the variable set in ``old`` a new
    value. The patch holds only the changed lines."""
    path = p.text("path", PATCH_PATH, "deployment file path (YAML, JSON, TOML or env)")
    if "/../" in path or "/./" in path:
        raise FixRejected("path: not a plain path")
    kind = p.choice("kind", KINDS)
    start = p.integer("start", 1, 10**6) or 1
    old = _lines(p, "old", 4)
    drop = p.raw("drop", "")
    wanted = p.mapping("set", 1)
    if not old:
        raise FixRejected("old: no line to change")
    if wanted:
        (name, value), = wanted.items()
        new = _set_lines(old, _env_name(name), _env_value(value))
    elif drop:
        if not isinstance(drop, str) or not FLAG.fullmatch(drop) or len(old) != 1:
            raise FixRejected("drop: not a flag of one line")
        new = [_drop_word(old[0], drop)]
    else:
        if not ENV_NAME.search(" ".join(old)) and not FLAG.search(" ".join(old)):
            raise FixRejected("old: not a setting a check removes")
        new = []
    patch_file = f"{path}.gnd.patch"
    key = f"file:{path}"
    common = ["--forward", "--no-backup-if-mismatch", "--reject-file=-", "-i", patch_file, path]
    steps = [FixStep(R, heredoc=(patch_file, unified_diff(path, start, old, new)),
                     unattended=True, key=key),
             _run(R, "patch", *common, unattended=True, key=key)]
    back = [_run(B, "patch", "--reverse", *common[1:], unattended=True, key=key),
            _run(B, "rm", "-f", patch_file, unattended=True, key=key)]
    apply = {"compose": ("docker", "compose", "-f", path, "up", "-d"), "manifest": ("kubectl", "apply", "-f", path)}
    if kind in apply:
        steps.append(_run(R, *apply[kind], key=f"apply:{path}"))
        back.append(_run(B, *apply[kind], key=f"apply:{path}"))
    else:
        steps.append(FixStep(R, manual=N_('Restart the server that reads {path}.', path=path)))
        back.append(FixStep(B, manual=N_('Restart the server that reads {path}.', path=path)))
    return steps + back


@builder("process_restart", pid=Param(Fact.PID), program=Param(Fact.PROGRAM), change=Param(Fact.JUDGED_CHANGE))
def process_restart(p: Params) -> list[FixStep]:
    """``pid``; ``program``; ``change``: what to leave out. Manual steps: nothing says how it was started."""
    pid = p.integer("pid", 1, 2**22)
    program = p.text("program", PROGRAM, "program name")
    change = p.raw("change")
    if not isinstance(change, str) or not (FLAG.fullmatch(change) or ENV_NAME.fullmatch(change.split("=", 1)[0])):
        raise FixRejected("change: not a flag or variable a check removes")
    return [FixStep(R, manual=N_('Restart {program} (pid {pid}) without {change}; no unit, compose file or manifest on this host starts it, so use whatever script or shell started it.', program=program, pid=pid, change=change)),
            FixStep(B, manual=N_('Restart {program} with {change} again, the way it was started before.', program=program, change=change))]
