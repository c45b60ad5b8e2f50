"""The one output writer (every command's ``-o``, the TUI's export, collected snapshots) and exit codes.

A destination is written through a temporary file in its own directory and renamed into place, so
a link at the destination is never followed, a device, FIFO, socket or directory is refused with
one line (exit 2), and no temporary file is left behind on any failure. :func:`check_outputs`
refuses two outputs naming one file and an output naming an input, before anything runs.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, BinaryIO, TextIO

from doctor.errors import DoctorError

if TYPE_CHECKING:
    from doctor.runner import Result

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _describe(mode: int) -> str:
    from doctor.safe_open import describe_mode

    return describe_mode(mode)


def _refuse_existing(path: str) -> os.stat_result | None:
    """The ``lstat`` of an existing destination that is a regular file (None: it does not exist);
    DoctorError for a link (never followed), a device, FIFO, socket or directory."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DoctorError(f"cannot write {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise DoctorError(f"{path} is a symbolic link; gnd never writes through one: name the file itself")
    if not stat.S_ISREG(st.st_mode):
        raise DoctorError(f"{path} is {_describe(st.st_mode)}, not a regular file; give a file name for the output")
    return st


def _identity(path: str) -> tuple[object, ...]:
    """What makes two names the same file: device and inode when it exists, else its resolved path."""
    try:
        st = os.stat(path)
        return ("inode", st.st_dev, st.st_ino)
    except (OSError, ValueError):
        return ("path", os.path.realpath(os.path.abspath(path)))


def check_outputs(outputs: Iterable[str | None], inputs: Iterable[str | None] = ()) -> None:
    """Refuse, before anything runs, destinations that are not regular files or links, two outputs
    naming one file, an output naming an input (same inode or resolved path) and an output inside an
    input folder (a snapshot directory, a folder of fleet results, ``collect --root``; the live root
    ``/`` excepted); "-" and None are stdout. Commands pass :func:`doctor.commands.common.inputs_of`."""
    named = [o for o in outputs if o and o != "-"]
    sources = [i for i in inputs if i and i != "-"]
    seen: dict[tuple[object, ...], str] = {}
    for out in named:
        _refuse_existing(out)
        ident = _identity(out)
        if ident in seen:
            raise DoctorError(f"{out} and {seen[ident]} name the same file; give each output its own file")
        seen[ident] = out
        real = os.path.realpath(os.path.abspath(out))
        for inp in sources:
            inp_real = os.path.realpath(os.path.abspath(inp))
            if _identity(inp) == ident or inp_real == real:
                raise DoctorError(f"{out}: the output would overwrite the input {inp}; choose another file name")
            if inp_real != os.sep and os.path.isdir(inp_real) and real.startswith(inp_real.rstrip(os.sep) + os.sep):
                raise DoctorError(f"{out}: the output would be written inside the input folder {inp} (a file "
                                  "the checks read, or one the next run would read); choose a file outside it")


def _temporary_beside(path: str) -> tuple[int, str]:
    """A new temporary file (descriptor, name) in ``path``'s directory, to be renamed or linked to ``path``."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise DoctorError(f"cannot write {path}: {directory} does not exist")
    import tempfile  # not on the stdout path

    try:
        return tempfile.mkstemp(prefix=".gnd-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise DoctorError(f"cannot write {path}: {exc.strerror}") from None


@contextmanager
def atomic_file(path: str, mode: int = 0o644) -> Iterator[BinaryIO]:
    """A binary handle on a temporary file beside ``path`` that replaces ``path`` when the block ends.

    ``path`` must be missing or a regular file (checked with ``lstat`` before and just before the
    rename, which replaces the name and never follows a link). On any failure, KeyboardInterrupt and
    a full disk included, the temporary file is removed and ``path`` is left as it was.
    """
    _refuse_existing(path)
    fd, tmp = _temporary_beside(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
        os.chmod(tmp, mode)
        _refuse_existing(path)
        os.replace(tmp, path)
    except OSError as exc:
        _remove(tmp)
        raise DoctorError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        _remove(tmp)
        raise


@contextmanager
def new_file(candidates: Iterable[str], mode: int = 0o644) -> Iterator[tuple[BinaryIO, list[str]]]:
    """A binary handle on a temporary file that is published, when the block ends, under the first of
    ``candidates`` (names in one directory) that does not exist; the name taken is appended to the list
    yielded beside the handle. Publishing is ``os.link``, which never replaces a name, so two writers
    finishing in the same instant take two names and an existing file is never overwritten; a
    file system without hard links falls back to claiming the name with ``O_CREAT | O_EXCL``."""
    names = iter(candidates)
    first = next(names)
    fd, tmp = _temporary_beside(first)
    taken: list[str] = []
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh, taken
            fh.flush()
        os.chmod(tmp, mode)
        for name in (first, *names):
            if _publish_new(tmp, name):
                taken.append(name)
                break
        else:
            raise DoctorError(f"cannot write {first}: it and every numbered alternative exist; "
                              "give a file name with -o")
    except OSError as exc:
        raise DoctorError(f"cannot write {first}: {exc.strerror or exc}") from None
    finally:
        _remove(tmp)


def _publish_new(tmp: str, path: str) -> bool:
    """``tmp`` linked at ``path`` unless ``path`` exists (False then)."""
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links here (vfat, some FUSE file systems): claim the name, then replace it
        pass
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except FileExistsError:
        return False
    os.replace(tmp, path)
    return True


def _remove(tmp: str) -> None:
    with suppress(OSError):
        os.unlink(tmp)


def write_output(path: str | None, body: str | bytes, mode: int = 0o644) -> None:
    """The one writer of every command's output: ``body`` to stdout when ``path`` is empty or "-",
    else atomically to the regular file ``path`` (:func:`atomic_file`)."""
    if not path or path == "-":
        _to_stdout(body)
        return
    data = body.encode("utf-8", "replace") if isinstance(body, str) else body
    with atomic_file(path, mode) as fh:
        fh.write(data)


def _to_stdout(body: str | bytes) -> None:
    """``body`` on stdout, flushed: a full disk or a failing device behind a redirection is one line
    (exit 2) here, not a traceback or a silent loss at exit; a reader that went away (EPIPE) and a
    stdout closed at start keep their own handling in :mod:`doctor.cli`."""
    try:
        if isinstance(body, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(body)
        else:
            sys.stdout.write(body)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        if exc.errno is None:  # the stand-in for a stdout closed at start says so itself
            raise
        raise DoctorError(f"cannot write the output: {exc.strerror or exc}") from None


def exit_code(result: Result, fail_on: str) -> int:
    """0, or 1 when a finding of ``result`` is at or above ``fail_on`` (as ``gnd check``)."""
    from doctor.findings import at_least  # not at import: ``gnd`` loads this module early

    return EXIT_FINDINGS if any(at_least(f.severity, fail_on) for f in result.findings) else EXIT_OK


def use_colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set."""
    return stream.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
