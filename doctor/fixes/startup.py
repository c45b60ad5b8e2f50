"""For checks: the fix that removes (or changes) a setting where the server is started.

The owner decides the builder: a systemd unit gets a drop-in (``unit_env``, ``unit_exec``) or, when
its command line holds a masked secret, a ``sed`` edit with a backup (``unit_flag``); a compose file,
manifest or config file gets a patch (``file_patch``); a process nothing on the host starts gets
manual steps (``process_restart``). What cannot be edited exactly keeps the advice in ``notes``.
"""

from __future__ import annotations

import re

from doctor.derived.procs import EnvSetting, program_of
from doctor.facts import DeployFile, Facts
from doctor.findings import Fix
from doctor.fixes.base import absolute, dropin_slug, exec_starts, make, unit_of
from doctor.fixes.deploy import FLAG
from doctor.secrets import MASK


def _deploy_file(facts: Facts, path: str) -> DeployFile | None:
    return next((df for df in facts.deploy_files if df.path == path), None)


def file_kind(text: str) -> str:
    """``manifest``, ``compose`` or ``other``: what applies a patched deployment file (by its text)."""
    if re.search(r"^apiVersion:", text, re.MULTILINE) and re.search(r"^kind:", text, re.MULTILINE):
        return "manifest"
    if re.search(r"^services:", text, re.MULTILINE):
        return "compose"
    return "other"


def _patch(df: DeployFile, first: int, count: int, drop: str, notes: str,
           wanted: dict[str, str] | None = None) -> Fix | None:
    old = df.text.splitlines()[first:first + count]
    if any(MASK in line for line in old):
        return None
    extra = {"set": wanted} if wanted else {}
    return make("file_patch", notes, path=absolute(df.path), kind=file_kind(df.text), start=first + 1, old=old,
                drop=drop, **extra)


def _env_lines(text: str, name: str) -> tuple[int, int] | None:
    """(index, count) of the lines setting ``name`` in a compose file or manifest."""
    lines = text.splitlines()
    n = re.escape(name)
    for i, line in enumerate(lines):
        if re.match(rf"""^\s*-\s*["']?{n}=""", line) or re.match(rf"^\s+{n}:\s", line):
            return i, 1
        if re.match(rf"""^\s*-?\s*name:\s*["']?{n}["']?\s*$""", line) and i + 1 < len(lines) \
                and re.match(r"^\s*value:", lines[i + 1]):
            return i, 2
    return None


def _process(facts: Facts, pids: tuple[int, ...], change: str, notes: str) -> Fix:
    proc = next((p for p in facts.processes if pids and p.pid == pids[0]), None)
    if proc is None:
        return Fix(notes=notes)
    return make("process_restart", notes, pid=proc.pid, program=program_of(proc), change=change)


def env_fix(facts: Facts, s: EnvSetting, notes: str, replacement: str | None = None) -> Fix:
    """Unset ``s`` (or set it to ``replacement``) where the server is started."""
    units = [u for f in s.files if (u := unit_of(f))]
    if units:
        slug = dropin_slug(s.name)
        unset = [] if replacement is not None else [s.name]
        wanted = {s.name: replacement} if replacement is not None else {}
        return make("unit_env", notes, unit=units[0], what=slug, unset=unset, set=wanted)
    for path in s.files:
        df = _deploy_file(facts, path)
        found = _env_lines(df.text, s.name) if df is not None else None
        if df is not None and found is not None:
            fix = _patch(df, found[0], found[1], "", notes,
                         {s.name: replacement} if replacement is not None else None)
            if fix is not None:
                return fix
    if s.pids and not s.files:
        return _process(facts, s.pids, f"{s.name}={s.value}" if replacement is None else s.name, notes)
    return Fix(notes=notes)


def _has_word(line: str, flag: str) -> bool:
    return re.search(rf"""(^|[\s"'\[,]){re.escape(flag)}(?=$|[\s"',\]])""", line) is not None


def flag_fix(facts: Facts, files: list[str], pid: int | None, flag: str, notes: str) -> Fix:
    """Remove the command-line word ``flag`` where the server is started."""
    if not FLAG.fullmatch(flag):
        return Fix(notes=notes)
    for path in files:
        df = _deploy_file(facts, path)
        if df is None:
            continue
        name = unit_of(path)
        if name is not None:
            for i, value in exec_starts(df.text.splitlines()):
                if not _has_word(value, flag):
                    continue
                if MASK not in value:
                    return make("unit_exec", notes, unit=name, exec_start=value, flag=flag)
                if not df.text.splitlines()[i].endswith("\\"):
                    return make("unit_flag", notes, unit=name, path=absolute(path), flag=flag)
            continue
        lines = df.text.splitlines()
        for i, line in enumerate(lines):
            if line.lstrip().startswith("#") or not _has_word(line, flag):
                continue
            alone = re.fullmatch(rf"""\s*-\s*["']?{re.escape(flag)}["']?\s*""", line)
            fix = _patch(df, i, 1, "" if alone else flag, notes)
            if fix is not None:
                return fix
    if pid is not None and not files:
        return _process(facts, (pid,), flag, notes)
    return Fix(notes=notes)
