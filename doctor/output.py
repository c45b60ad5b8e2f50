"""Writing what a command produced: to stdout or a file, plainly or atomically; exit codes from findings."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, TextIO

from doctor.errors import DoctorError

if TYPE_CHECKING:
    from doctor.runner import Result

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def write_text(text: str, output: str | None) -> None:
    """``text`` to the file ``output``, or to stdout when ``output`` is empty. A regular file (or a new one)
    is replaced whole, through a temporary file beside it: a reader (node_exporter's textfile collector,
    a fleet job) never sees half a result."""
    if output:
        if not os.path.exists(output) or os.path.isfile(output):
            mode = os.stat(output).st_mode & 0o777 if os.path.exists(output) else 0o666 & ~_umask()
            write_atomic(output, text.encode("utf-8", "replace"), mode)
            return
        try:
            with open(output, "w", encoding="utf-8", errors="replace") as fh:
                fh.write(text)
        except OSError as exc:
            raise DoctorError(f"cannot write {output}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str, body: bytes, mode: int = 0o644) -> None:
    """Write ``body`` to ``path`` through a temporary file in the same directory."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise DoctorError(f"{path} is a directory; give a file name")
    if not os.path.isdir(directory):
        raise DoctorError(f"cannot write {path}: {directory} does not exist")
    import tempfile  # not on the stdout path

    try:
        fd, tmp = tempfile.mkstemp(prefix=".gnd-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise DoctorError(f"cannot write {path}: {exc.strerror}") from None


def exit_code(result: Result, fail_on: str) -> int:
    """0, or 1 when a finding of ``result`` is at or above ``fail_on`` (as ``gnd check``)."""
    from doctor.findings import at_least  # not at import: ``gnd`` loads this module early

    return EXIT_FINDINGS if any(at_least(f.severity, fail_on) for f in result.findings) else EXIT_OK


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set."""
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
