"""Processes: argv and allowlisted environment (values no check reads masked), allowed CPUs, parent."""

from __future__ import annotations

import shlex
from dataclasses import field

from doctor.facts.util import parse_cpulist, parse_int
from doctor.parsers.ps import parse_ps
from doctor.record import record
from doctor.secrets import mask_argv, parse_environ
from doctor.sources import Source

MAX_PROCESSES = 20000


@record
class Process:
    pid: int
    ppid: int | None
    name: str | None
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    env_known: bool = False  # False when the environment could not be read (not "empty")
    cpus_allowed: frozenset[int] | None = None
    cpus_allowed_list: str | None = None
    origin: str = ""


def _status(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _keep(argv: list[str]) -> list[str]:
    """An argv with the values no check reads masked (:mod:`doctor.allowlist`), the token patterns after."""
    from doctor.allowlist import keep_argv

    return mask_argv(keep_argv(argv))


def keep_environ(pairs: dict[str, str]) -> dict[str, str]:
    from doctor.allowlist import keep_environ as keep

    return keep(pairs)


def build_processes(src: Source) -> tuple[Process, ...]:
    """From ``/proc/<pid>`` when present, else from a sosreport's ``ps auxwwwm`` (no environment)."""
    pids = src.capped(sorted(int(p) for p in src.listdir("proc") if p.isdigit()), MAX_PROCESSES, "proc", "processes")
    procs = []
    for pid in pids:
        base = f"proc/{pid}"
        raw = src.read_bytes(f"{base}/cmdline", cap=1 << 20)
        status = _status(src.read_text(f"{base}/status", cap=1 << 16) or "")
        if raw is None and not status:
            continue
        argv = tuple(_keep([a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0")])) if raw else ()
        env_raw = src.read_bytes(f"{base}/environ", cap=1 << 20)
        cpus_list = status.get("Cpus_allowed_list")
        procs.append(Process(
            pid=pid, ppid=parse_int(status.get("PPid")), name=status.get("Name"), argv=argv,
            env=keep_environ(parse_environ(env_raw)) if env_raw else {}, env_known=env_raw is not None,
            cpus_allowed=parse_cpulist(cpus_list), cpus_allowed_list=cpus_list, origin=base,
        ))
    if procs:
        return tuple(procs)
    out = src.command("ps")
    if not out.text:
        return ()
    result = []
    for p in parse_ps(out.text):
        try:
            words = shlex.split(p.command)
        except ValueError:
            words = p.command.split()
        result.append(Process(pid=p.pid, ppid=None, name=words[0].rsplit("/", 1)[-1] if words else None,
                              argv=tuple(_keep(words)), origin=out.where))
    return tuple(result)
