"""Open the files a user names on the command line without hanging, overreading or clobbering.

Inputs (sources, ``--deploy``, ``--baseline``, ``--redact-map``, ``--from-json``, diff and fleet
paths) are opened with ``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor, so a FIFO,
socket or device is refused with one line instead of blocking forever, and the file checked is the
file read. Reads are capped. Outputs are refused when they name one of the inputs. Every problem
is a :class:`~doctor.errors.DoctorError` (exit status 2, one line).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import BinaryIO

from doctor.errors import DoctorError

#: Default cap for a small user-given file (deploy file, baseline, redaction map, JSON result).
MAX_INPUT_BYTES = 64 * 1024 * 1024

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def describe_mode(mode: int) -> str:
    """``a FIFO``, ``a socket``, ``a device``... for a file type that is not a regular file."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a regular file"


def path_kind(path: str) -> str | None:
    """``file``, ``dir``, ``other`` or ``None`` (missing) for ``path``, links followed, never opening it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    return "other"


def open_regular(path: str, what: str = "file") -> BinaryIO:
    """A binary handle on the regular file ``path`` (opened without blocking); DoctorError for anything else."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise DoctorError(f"{path}: no such file or directory") from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise DoctorError(f"{path}: cannot read the {what}: {reason}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DoctorError(f"{path}: {describe_mode(mode)}, not a regular file; give the {what} as a file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str, what: str = "file", cap: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the regular file ``path``; one-line DoctorError if it is anything else or over ``cap``."""
    with open_regular(path, what) as fh:
        try:
            data = fh.read(cap + 1)
        except OSError as exc:
            raise DoctorError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if len(data) > cap:
        raise DoctorError(f"{path}: the {what} is larger than the {_size(cap)} limit")
    return data


def read_text(path: str, what: str = "file", cap: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_regular` decoded as UTF-8 (undecodable bytes replaced)."""
    return read_regular(path, what, cap).decode("utf-8", "replace")


def check_output(output: str | None, inputs: Iterable[str | None]) -> None:
    """Refuse an output that is not a regular file or names one of ``inputs`` (:func:`doctor.output.check_outputs`)."""
    from doctor.output import check_outputs

    check_outputs([output], inputs)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
