"""``gnd fix-script``: a bash script of the runtime fixes that are safe to apply from the OS.

A command is emitted as a command only when its text is one of the known-safe kinds (sysctl
-w, an ``echo``/``printf`` into ``/proc/irq/*/smp_affinity*``, modprobe, systemctl
enable/start, ethtool, ip link set) AND it has no unquoted shell syntax beyond that one
redirection (no ``;``, ``|``, ``&``, ``$``, backticks, subshells): values were shell-quoted by
the checks, and this is verified rather than trusted. Everything else (BIOS, firmware, grub,
reboots, kubelet, persistent config) appears as a comment for a human. The script backs up
sysctls, IRQ affinities and the module list first, prints instead of running unless given
``--apply``, and comes with a rollback script built from the findings' rollback commands.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from doctor.findings import CRITICAL, HIGH, LOW, MEDIUM, Finding
from reports.view import View, build_view

PROBLEMS = (CRITICAL, HIGH, MEDIUM, LOW)
#: Words that make a command a by-hand step whatever else it looks like
NEVER = re.compile(r"(reboot|shutdown|poweroff|kexec|grub|grubby|bootctl|kernelstub|efibootmgr|bios|firmware|"
                   r"fwupd|mlxconfig|mstflint|flint|nvflash|nvidia-smi\s+-r|kubectl|kubelet|drain|cordon|"
                   r"update-initramfs|dracut|mkinitcpio)", re.IGNORECASE)
IRQ_TARGET = re.compile(r"^/proc/irq/\d+/smp_affinity(_list)?$")
#: Commands of the backup kind that the script replaces with its own backup step
BACKUP_PREFIXES = ("sysctl -a",)
#: Extra commands allowed in the rollback script (undoing persistent files the user may have written)
ROLLBACK_RM_DIRS = ("/etc/sysctl.d/", "/etc/modules-load.d/", "/etc/modprobe.d/", "/etc/udev/rules.d/")


#: ``for irq in 1 2 3; do echo 0-47 > /proc/irq/$irq/smp_affinity_list; done`` (expanded, never run as is)
IRQ_LOOP = re.compile(r"^for (\w+) in ([\d ]+); do (?:echo|printf %s) '?([0-9a-fA-F,\-]+)'? > "
                      r"/proc/irq/\$\{?\1\}?/(smp_affinity(?:_list)?); done$")


def expand(command: str) -> list[str]:
    """A recognised IRQ loop as one ``echo`` per IRQ; any other command unchanged."""
    m = IRQ_LOOP.match(command.strip())
    if not m:
        return [command]
    return [f"echo {m.group(3)} > /proc/irq/{irq}/{m.group(4)}" for irq in m.group(2).split()]


def _unquoted_syntax(command: str) -> set[str]:
    """Shell metacharacters outside single quotes (``$`` and backticks inside double quotes count)."""
    found: set[str] = set()
    quote = ""
    i = 0
    while i < len(command):
        ch = command[i]
        if quote == "'":
            if ch == "'":
                quote = ""
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = ""
            elif ch in "$`":
                found.add(ch)
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        elif ch in ";&|<>()$`\n{}*?[]~#!":
            found.add(ch)
        i += 1
    if quote:
        found.add("unbalanced quote")
    return found


def _words(command: str) -> list[str] | None:
    try:
        return shlex.split(command)
    except ValueError:
        return None


def classify(command: str, rollback: bool = False) -> str:
    """``run`` (safe from the OS), ``skip`` (a backup the script does itself) or ``comment``."""
    stripped = command.strip()
    if not stripped or NEVER.search(stripped):
        return "comment"
    if stripped.startswith(BACKUP_PREFIXES):
        return "skip"
    syntax = _unquoted_syntax(stripped)
    if syntax - {">"}:
        return "comment"
    if ">" in syntax:
        return "run" if _irq_write(stripped) else "comment"
    words = _words(stripped)
    if not words:
        return "comment"
    head = words[0]
    if head == "sysctl" and len(words) >= 3 and words[1] == "-w" and all("=" in w for w in words[2:]):
        return "run"
    if head == "sysctl" and words[1:] == ["--system"] and rollback:
        return "run"
    if head == "modprobe" and len(words) >= 2 and not any(w in ("-r", "--remove") for w in words[1:]):
        return "run"
    if head == "systemctl" and len(words) >= 3:
        allowed = {"enable", "start"} | ({"disable", "stop"} if rollback else set())
        if words[1] in allowed:
            return "run"
    if head == "ethtool" and len(words) >= 3:
        return "run"
    if head == "ip" and words[1:3] == ["link", "set"]:
        return "run"
    if rollback and head == "rm" and len(words) == 3 and words[1] == "-f" and words[2].startswith(ROLLBACK_RM_DIRS) \
            and ".." not in words[2]:
        return "run"
    if rollback and head == "modprobe" and len(words) == 3 and words[1] == "-r":
        return "run"
    return "comment"


def _irq_write(command: str) -> bool:
    """``echo VALUE > /proc/irq/N/smp_affinity[_list]`` (or printf), nothing else around it."""
    left, sep, right = command.partition(">")
    if not sep or ">" in right:
        return False
    target = _words(right)
    words = _words(left)
    if not target or len(target) != 1 or not IRQ_TARGET.match(target[0]) or not words:
        return False
    values = [w for w in words[1:] if not (words[0] == "printf" and w in ("%s", "%s\\n"))]
    return words[0] in ("echo", "printf") and bool(values) and all(re.fullmatch(r"[0-9a-fA-F,\-]+", w) for w in values)


def comment(text: str) -> str:
    """One comment line; control characters (newlines) cannot end the comment."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _comment_block(prefix: str, command: str) -> list[str]:
    return [f"#   {comment(line)}" if i else f"# {prefix}{comment(line)}"
            for i, line in enumerate(command.splitlines() or [""])]


@dataclass(frozen=True)
class Scripts:
    """The fix script, its rollback script and how many commands each runs."""

    fix: str
    rollback: str
    fix_commands: int
    rollback_commands: int


HEADER = """#!/usr/bin/env bash
# {title} for {host}
# Generated by gpu-node-doctor {version} from the result of {generated}.
# Review every line before running it. Without arguments (or with --dry-run) it only prints
# the commands; run it as root with --apply to execute them.
# Firmware, BIOS, boot-loader, reboot and cluster steps are comments only: do them by hand.
set -euo pipefail

APPLY=0
case "${{1:-}}" in
  --apply) APPLY=1 ;;
  --dry-run|"") ;;
  -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--dry-run|--apply]" >&2; exit 2 ;;
esac

say() {{ printf '\n== %s\n' "$1"; }}

run() {{
  if [ "$APPLY" = 1 ]; then
    printf '+ %s\\n' "$1"
    eval "$1"
  else
    printf '[dry-run] %s\\n' "$1"
  fi
}}

if [ "$APPLY" = 1 ] && [ "$(id -u)" != 0 ]; then
  echo "$0: run as root to apply (or without --apply for a dry run)" >&2
  exit 1
fi
"""

BACKUP = """
# ---- backup first -------------------------------------------------------------------------
BACKUP_DIR="${GND_BACKUP_DIR:-/var/tmp/gnd-backup-$(date +%Y%m%dT%H%M%S)}"
if [ "$APPLY" = 1 ]; then
  mkdir -p "$BACKUP_DIR"
  sysctl -a > "$BACKUP_DIR/sysctl.conf" 2>/dev/null || true
  for f in /proc/irq/*/smp_affinity_list; do
    printf '%s %s\\n' "$f" "$(cat "$f" 2>/dev/null || true)"
  done > "$BACKUP_DIR/irq-affinity.txt"
  lsmod > "$BACKUP_DIR/lsmod.txt" 2>/dev/null || true
  echo "backup of sysctls, IRQ affinities and modules written to $BACKUP_DIR"
else
  echo "[dry-run] would back up sysctls, IRQ affinities and modules to $BACKUP_DIR"
fi
"""


def _say(f: Finding) -> str:
    return comment(f"#{f.rank} {f.severity.upper()} {f.check}: {f.title}")


def _section(f: Finding) -> list[str]:
    return ["", f"# ---- #{f.rank} {f.severity.upper()} {comment(f.check)}: {comment(f.title)}",
            f"# subject: {comment(f.subject)}"]


def build_scripts(view: View) -> Scripts:
    """Fix and rollback scripts for the problems in ``view`` that carry commands."""
    stamp = view.generated_at or view.collected_at or "an unknown time"
    fix = [HEADER.format(title="gpu-node-doctor remediation script", host=comment(view.host),
                         version=comment(view.tool_version), generated=comment(stamp)), BACKUP]
    back = [HEADER.format(title="gpu-node-doctor rollback script", host=comment(view.host),
                          version=comment(view.tool_version), generated=comment(stamp)),
            "\n# Undoes the runtime fixes of the matching fix script (newest first). The fix script's backup"
            "\n# (sysctl -a, IRQ affinities, lsmod) under /var/tmp/gnd-backup-* holds every earlier value.\n"]
    n_fix = n_back = 0
    findings = [f for f in view.problems if f.severity in PROBLEMS and not f.fix.empty]
    done: set[str] = set()
    for f in findings:
        lines = _section(f)
        before = n_fix
        for c in [x for cmd in f.fix.runtime for x in expand(cmd)]:
            kind = classify(c)
            if kind == "run" and c in done:
                lines += _comment_block("already run above: ", c)
            elif kind == "run":
                lines.append(f"run {shlex.quote(c)}")
                done.add(c)
                n_fix += 1
            elif kind == "comment":
                lines += _comment_block("by hand, not run by this script: ", c)
        for c in f.fix.persistent:
            lines += _comment_block("to make it persistent (not run by this script): ", c)
        if n_fix > before:
            lines.insert(3, f"say {shlex.quote(_say(f))}")
        if f.fix.notes:
            lines.append(f"# note: {comment(f.fix.notes)}")
        if not any(classify(x) == "run" for c in f.fix.runtime for x in expand(c)):
            lines.append("# (nothing here is safe to apply from the OS; see the comments above)")
        fix += lines
    done = set()
    for f in reversed(findings):
        if not f.fix.rollback:
            continue
        lines = _section(f)
        before = n_back
        for c in [x for cmd in f.fix.rollback for x in expand(cmd)]:
            if classify(c, rollback=True) == "run" and c in done:
                lines += _comment_block("already run above: ", c)
            elif classify(c, rollback=True) == "run":
                done.add(c)
                lines.append(f"run {shlex.quote(c)}")
                n_back += 1
            else:
                lines += _comment_block("by hand, not run by this script: ", c)
        if n_back > before:
            lines.insert(3, f"say {shlex.quote(_say(f))}")
        back += lines
    if not findings:
        fix.append("\n# No finding carries a fix: nothing to do.")
    fix.append("\necho \"done: $([ \"$APPLY\" = 1 ] && echo applied || echo dry run, nothing changed)\"")
    back.append("\necho \"done: $([ \"$APPLY\" = 1 ] && echo rolled back || echo dry run, nothing changed)\"")
    return Scripts("\n".join(fix) + "\n", "\n".join(back) + "\n", n_fix, n_back)


def fix_scripts(data: dict[str, Any]) -> Scripts:
    """Fix and rollback scripts for a result dict."""
    return build_scripts(build_view(data))


def rollback_path(path: str) -> str:
    """``fix.sh`` -> ``fix.rollback.sh``."""
    if path.endswith(".sh"):
        return path[:-3] + ".rollback.sh"
    return path + ".rollback.sh"
