"""The ``gnd`` command line.

Exit codes: 0 no finding at or above ``--fail-on`` (default ``high``); 1 some; 2 the doctor could
not run (bad source or option: one line on stderr, no traceback).

This module only builds the parser and dispatches. Each subcommand is one module of
``doctor.commands`` (listed in :data:`COMMANDS`) exposing ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int`` (optionally ``DESCRIPTION``, ``EPILOG``, ``FORMATTER``); those modules import
only the standard library and ``doctor`` at import time, so that ``gnd check`` never pays for
Textual or WeasyPrint.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from doctor import PLAIN, __version__
from doctor.errors import DoctorError
from doctor.output import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK

if TYPE_CHECKING:  # argparse and the rest load in main(), after console_main() paused the garbage collector
    import argparse

    from _typeshed import SupportsWrite

__all__ = ["COMMANDS", "EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "build_parser", "console_main", "main"]

#: subcommand -> module providing HELP, add_arguments(parser) and run(args), in --help order
COMMANDS: dict[str, str] = {
    "check": "doctor.commands.check",
    "collect": "doctor.commands.collect",
    "checks": "doctor.commands.checks",
    "report": "doctor.commands.report",
    "fix-script": "doctor.commands.fix_script",
    "tui": "doctor.commands.tui",
    "diff": "doctor.commands.diff",
    "fleet": "doctor.commands.fleet",
    "baseline": "doctor.commands.baseline",
    "watch": "doctor.commands.watch",
    "npd": "doctor.commands.npd",
}

DESCRIPTION = """\
Find why a GPU inference node is slower than it should be: PCIe links, chipset slots, ACS and
IOMMU, vfio bindings, NUMA placement, IRQs, socket buffers, RoCE GID selection, NCCL transport
and runtime flags that disable CUDA Graphs. SOURCE is the live host (default), a snapshot
directory or tarball written by `gnd collect`, or a sosreport directory or tarball."""


def build_parser(only: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    """The ``gnd`` parser and, by subcommand name, the module that runs it.

    With ``only`` naming a subcommand, only that one is loaded and added (``main`` parses one command
    line, whose help and errors are that subcommand's; importing the other eight modules and building
    their parsers would cost start-up time). Otherwise (``gnd --help``) every subcommand is listed,
    without options.
    """
    import argparse

    from doctor.commands.check import EPILOG

    class Parser(argparse.ArgumentParser):
        """argparse, except that a failed write of help, usage or the version (a full disk behind
        stdout) propagates instead of being dropped: :func:`main` says it in one line (subparsers
        inherit the class)."""

        def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
            if message:
                (file or sys.stderr).write(message)

    parser = Parser(prog="gnd", description=DESCRIPTION, epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpu-node-doctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands: dict[str, ModuleType] = {}
    for name in [only] if only in COMMANDS else COMMANDS:
        module = commands[name] = importlib.import_module(COMMANDS[name])
        p = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                           epilog=getattr(module, "EPILOG", None),
                           formatter_class=getattr(module, "FORMATTER", argparse.RawDescriptionHelpFormatter))
        if only is None or only == name:
            module.add_arguments(p)
    return parser, commands


def _run_without_gc(command: ModuleType, args: argparse.Namespace) -> int:
    """Run one ``gnd check`` with the cyclic garbage collector paused (its state restored after).

    Nearly everything a check run allocates is module code and facts that live to the end; the
    collector traversed them about 40 times for some 200 cyclic objects (5-10 ms of a 150 ms run).
    Objects still go when their last reference does; only cycles wait until the end of the run.
    """
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return int(command.run(args))
    finally:
        if was_enabled:
            gc.enable()


def _with_command(argv: Sequence[str]) -> list[str]:
    """``argv`` with its subcommand made explicit: none means ``tui`` on a terminal, else ``check``;
    ``gnd SOURCE`` and ``gnd --format json`` mean ``gnd check ...``."""
    args_list = list(argv)
    if not args_list:
        return ["tui" if sys.stdin.isatty() and sys.stdout.isatty() else "check"]
    first = args_list[0]
    if first == "help":  # ``gnd help`` and ``gnd help check``
        return [*args_list[1:2], "--help"]
    if first not in COMMANDS and first not in ("-h", "--help", "--version"):
        _refuse_a_mistyped_command(first)
        return ["check", *args_list]
    return args_list


def _refuse_a_mistyped_command(word: str) -> None:
    """``gnd chek``: a word close to a command's name that names no file is a typo, not a source."""
    if os.path.lexists(word) or not word.isidentifier() and "-" not in word or "/" in word:
        return
    import difflib

    close = difflib.get_close_matches(word, [*COMMANDS, "help"], n=1, cutoff=0.6)
    if close:
        raise DoctorError(f"{word!r} is not a command or a path; did you mean `gnd {close[0]}`? (`gnd --help` "
                          "lists the commands)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``gnd`` command line (``sys.argv[1:]`` by default); its exit status."""
    try:
        args_list = _with_command(sys.argv[1:] if argv is None else argv)
        parser, commands = build_parser(only=args_list[0])
        try:
            args = parser.parse_args(args_list)
        except SystemExit as done:  # --help, --version: argparse drops a failed write silently
            if done.code == 0 and isinstance(sys.stdout, _ClosedStream):
                raise ClosedStreamError("cannot write the output: standard output is closed") from None
            raise
        from doctor.i18n import set_language

        set_language(getattr(args, "lang", None))
        if args.command == "check" and not PLAIN:
            return _run_without_gc(commands["check"], args)
        if args.command in commands:
            return int(commands[args.command].run(args))
        parser.print_help()
        return EXIT_ERROR
    except DoctorError as exc:
        from doctor.textsafe import clean

        print(f"gnd: error: {clean(str(exc))}", file=sys.stderr)  # a hostile file name cannot drive the terminal
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("gnd: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except ClosedStreamError as exc:
        _say(f"gnd: error: {exc}")
        return EXIT_ERROR
    except OSError as exc:  # a full disk or failing device under a print() to stdout, or any other I/O
        _say(f"gnd: error: {_io_failure(exc)}")
        return EXIT_ERROR


def _io_failure(exc: OSError) -> str:
    """One line for an I/O error no command turned into a DoctorError: the file it names, else the output."""
    from doctor.textsafe import clean

    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return clean(f"{exc.filename}: {reason}")
    return f"cannot write the output: {reason}"


class ClosedStreamError(OSError):
    """A write to a standard stream that was closed when ``gnd`` started (``gnd check >&-``)."""


class _ClosedStream:
    """Stands in for a standard stream that is closed: writing raises :class:`ClosedStreamError`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, _text: str | bytes) -> int:
        raise ClosedStreamError(f"cannot write the output: standard {self.name} is closed (use -o FILE)")

    @property
    def buffer(self) -> _ClosedStream:
        """The binary side (``sys.stdout.buffer``): as closed as the text side."""
        return self

    def __getattr__(self, attr: str) -> object:
        """Any other part of a stream (``encoding``, ``reconfigure``...) of a closed stream: the same one line."""
        raise ClosedStreamError(f"cannot write the output: standard {self.name} is closed (use -o FILE)")

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise ClosedStreamError(f"standard {self.name} is closed")


def _say(line: str) -> None:
    """``line`` on stderr, unless stderr is closed too."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr)


def guard_closed_streams() -> None:
    """Replace a standard output or error that was closed at start: no traceback, one line, exit 2.

    Output nobody could receive is an error (``gnd check >&-`` says so), diagnostics to a closed
    stderr are dropped; a command writing only to ``-o FILE`` runs as usual.
    """
    if sys.stdout is None:
        sys.stdout = _ClosedStream("output")  # type: ignore[assignment]
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process


#: Commands after which the executable leaves at once: they have written and closed every file and
#: reaped their renderer, start no pool or thread, and leave no terminal state to restore.
QUICK_EXIT = frozenset({"check", "report", "checks", "fix-script", "baseline", "diff"})


def console_main() -> None:
    """The ``gnd`` executable: :func:`main`, then, after ``check`` or ``report`` and the like, exit
    without tearing the interpreter down (tens of milliseconds of freeing objects nobody will use)."""
    guard_closed_streams()
    try:
        args_list = _with_command(sys.argv[1:])
    except DoctorError as exc:
        _say(f"gnd: error: {exc}")
        raise SystemExit(EXIT_ERROR) from None
    if PLAIN:
        raise SystemExit(main(args_list))
    if args_list[0] == "check":
        # a check allocates little garbage and leaves at once: no collector from here on, imports included
        # (main() would pause it for the run only; the collector passes over the imported modules cost
        # about 5 ms of a check)
        import gc

        gc.disable()
    code = main(args_list)
    if args_list[0] not in QUICK_EXIT:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (BrokenPipeError, ClosedStreamError):  # the reader went away (``gnd check | head``), or none was
            pass
        except OSError as exc:  # a full disk behind a redirection: the output is incomplete
            if stream is sys.stdout:
                _say(f"gnd: error: cannot write the output: {exc.strerror or exc}")
            code = EXIT_ERROR
    os._exit(code)


if __name__ == "__main__":
    console_main()
