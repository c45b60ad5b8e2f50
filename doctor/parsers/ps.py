"""Parser for ``ps auxwwwm`` (sosreport ``sos_commands/process/ps_auxwwwm``) and ``ps auxww``.

Sample (``m`` adds thread lines with ``-`` in the PID column after each process)::

    USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
    root           1  0.0  0.1 167744 11904 ?        -    Nov29   0:03 /sbin/init
    root           -  0.0    -      -     - -        Ss   Nov29   0:03 -
    vllm        4242 98.5  3.2 9876543 2100000 ?     -    10:01 120:00 python3 -m vllm.entrypoints.openai.api_server --model x
    vllm           -  0.1    -      -     - -        Sl   10:01   0:01 -

Columns are located from the header (``USER``/``PID``/``COMMAND``); the command is
everything after the 10th field, so arguments with spaces survive.
"""

from __future__ import annotations

from doctor.lazyre import lazy
from doctor.record import record

__all__ = ["PsProcess", "parse_ps"]


@record
class PsProcess:
    """One process row (threads are skipped)."""

    user: str
    pid: int
    command: str


_WS_RE = lazy(r"\s+")


def parse_ps(text: str) -> tuple[PsProcess, ...]:
    """Parse BSD-style ``ps aux`` output; thread lines (PID ``-``) and junk are skipped. Never raises."""
    if not isinstance(text, str):
        return ()
    lines = text.splitlines()
    cols = ["USER", "PID", "%CPU", "%MEM", "VSZ", "RSS", "TTY", "STAT", "START", "TIME", "COMMAND"]
    start = 0
    for i, line in enumerate(lines[:20]):
        fields = line.split()
        if "PID" in fields and ("COMMAND" in fields or "CMD" in fields):
            cols = fields
            start = i + 1
            break
    try:
        i_user = cols.index("USER")
        i_pid = cols.index("PID")
        i_cmd = cols.index("COMMAND") if "COMMAND" in cols else cols.index("CMD")
    except ValueError:
        return ()
    out: list[PsProcess] = []
    for line in lines[start:]:
        stripped = line.strip()
        if not stripped:
            continue
        parts = _WS_RE.split(stripped, maxsplit=i_cmd)
        if len(parts) <= max(i_user, i_pid):
            continue
        pid_text = parts[i_pid]
        if not (pid_text.isascii() and pid_text.isdigit()):
            continue  # thread line ("-") or garbage
        command = parts[i_cmd] if len(parts) > i_cmd else ""
        out.append(PsProcess(user=parts[i_user], pid=int(pid_text), command=command))
    return tuple(out)
