"""Kernel facts: command line, sysctls, modules, versions."""

from __future__ import annotations

import shlex

from doctor import specs
from doctor.parsers.sysctl import parse_sysctl_a, parse_sysctl_conf
from doctor.record import record
from doctor.sources import Source


@record
class Cmdline:
    raw: str | None
    origin: str = "proc/cmdline"

    @property
    def params(self) -> dict[str, str]:
        """``key=value`` parameters (a bare flag maps to ``""``); the last one wins, as in the kernel."""
        out: dict[str, str] = {}
        try:
            words = shlex.split(self.raw or "")
        except ValueError:
            words = (self.raw or "").split()
        for word in words:
            key, _, value = word.partition("=")
            out[key] = value
        return out


@record
class Sysctls:
    values: dict[str, str]
    origins: dict[str, str]
    persistent: dict[str, tuple[str, str]]  # key -> (value, file) from /etc/sysctl.d and /etc/sysctl.conf
    #: every persistent file in the order ``sysctl --system`` applies it (later wins): (path, {key: value})
    files: tuple[tuple[str, dict[str, str]], ...] = ()

    def get(self, key: str) -> str | None:
        return self.values.get(key)

    def get_int(self, key: str) -> int | None:
        value = self.values.get(key)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def get_ints(self, key: str) -> tuple[int, ...] | None:
        value = self.values.get(key)
        try:
            return tuple(int(v) for v in value.split()) if value else None
        except ValueError:
            return None


def build_cmdline(src: Source) -> Cmdline:
    """``/proc/cmdline`` with the values of parameters no check judges masked (:func:`doctor.allowlist.keep_cmdline`)."""
    from doctor.allowlist import keep_cmdline

    text = src.read_text("proc/cmdline", cap=1 << 16)
    return Cmdline(keep_cmdline(text.replace("\0", " ").strip()) if text is not None else None)


def build_sysctls(src: Source) -> Sysctls:
    values: dict[str, str] = {}
    origins: dict[str, str] = {}
    for pattern in specs.get("sysctl").paths:
        for path in src.glob(pattern):
            text = src.read_text(path, cap=1 << 16)
            if text is not None:
                key = path.removeprefix("proc/sys/").replace("/", ".")
                values[key] = " ".join(text.split())
                origins[key] = path
    out = src.command("sysctl_a")
    if out.text:
        for key, value in parse_sysctl_a(out.text).items():
            if key not in values:
                values[key] = value
                origins[key] = out.where
    persistent: dict[str, tuple[str, str]] = {}
    files: list[tuple[str, dict[str, str]]] = []
    for path in src.spec_paths(specs.get("sysctl.files")):
        parsed = parse_sysctl_conf(src.read_text(path, cap=1 << 20) or "")
        files.append((path, parsed))
        for key, value in parsed.items():
            persistent[key] = (value, path)
    return Sysctls(values, origins, persistent, tuple(sorted(files, key=lambda f: _apply_order(f[0]))))


def _apply_order(path: str) -> tuple[int, str]:
    """``sysctl --system`` (procps) reads sysctl.d files by file name and ``/etc/sysctl.conf`` last."""
    return (1, "") if path.endswith("etc/sysctl.conf") else (0, path.rsplit("/", 1)[-1])


def build_modules(src: Source) -> frozenset[str] | None:
    text = src.read_text("proc/modules", cap=1 << 20)
    if text is None:
        text = src.read_text("sos_commands/kernel/lsmod", cap=1 << 20)
        if text is None:
            return None
        return frozenset(line.split()[0] for line in text.splitlines()[1:] if line.split())
    return frozenset(line.split()[0] for line in text.splitlines() if line.split())
