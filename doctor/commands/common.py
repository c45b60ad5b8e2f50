"""Arguments and input shared by the subcommands that run the checks (check, report, fix-script, tui).

Imports only the standard library and ``doctor`` at module level (it is loaded on every ``gnd``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from doctor.errors import DoctorError
from doctor.findings import FAIL_LEVELS

if TYPE_CHECKING:
    from doctor.facts import Facts
    from doctor.runner import Result


#: the arguments, on any command, that name a file or folder gnd writes (checked by check_outputs)
OUTPUT_ARGUMENTS = ("output", "rollback", "redact_map", "save_json", "save_html")
#: the arguments, on any command, that name a file or folder gnd reads: no output may name one or lie
#: inside one (tests/hostile/test_output_writer.py holds every path argument of every command to one
#: of these two lists)
INPUT_ARGUMENTS = ("source", "from_json", "baseline", "deploy", "before", "after", "paths", "root", "cache",
                   "result")


def inputs_of(args: argparse.Namespace) -> list[str]:
    """Every file or folder that ``args`` names as an input (:data:`INPUT_ARGUMENTS`)."""
    found: list[str] = []
    for name in INPUT_ARGUMENTS:
        value = getattr(args, name, None)
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            found.extend(v for v in value if isinstance(v, str))
    return found


def id_list(text: str) -> list[str]:
    """``a, b,,c`` -> ``['a', 'b', 'c']`` (the ``--only`` value)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by ``check`` and commands that run checks (report, tui, fix-script)."""
    p.add_argument("source", nargs="?", metavar="SOURCE",
                   help="live host (default, or /), snapshot dir/tarball, or sosreport dir/tarball")
    p.add_argument("--only", action="extend", metavar="ID[,ID...]", type=id_list,
                   help="run only these checks: ids or prefixes like 'pcie', comma-separated; repeatable; "
                        "an id that matches no check is an error")
    p.add_argument("--deploy", action="append", default=[], metavar="PATH",
                   help="extra deployment file (systemd unit, compose file, manifest) to inspect; repeatable")
    add_lang_argument(p)


def add_lang_argument(p: argparse.ArgumentParser) -> None:
    """``--lang``: the language of headings and labels (check ids, commands, evidence, JSON stay as they are)."""
    from doctor.i18n import LANGUAGES, lang_argument

    p.add_argument("--lang", type=lang_argument, metavar="LANG",
                   help=f"output language: {' or '.join(LANGUAGES)} (default: from LANGUAGE, LC_ALL, "
                        "LC_MESSAGES, LANG; else en)")


def add_input_arguments(p: argparse.ArgumentParser, fail_on: str | None = "high") -> None:
    """SOURCE/--only/--deploy (as ``gnd check``), ``--from-json`` and ``--fail-on`` (default ``fail_on``)."""
    add_check_arguments(p)
    p.add_argument("--from-json", metavar="RESULT", help="render a saved `gnd check --format json` result "
                   "instead of running the checks (no host needed)")
    add_fail_on(p, fail_on)


def add_fail_on(p: argparse.ArgumentParser, default: str | None = "high", help: str = "") -> None:
    """``--fail-on LEVEL`` (default ``default``; ``help`` replaces the usual text)."""
    p.add_argument("--fail-on", choices=FAIL_LEVELS, default=default, metavar="LEVEL",
                   help=help or "exit 1 if a finding is at or above LEVEL (critical, high, medium, low, info; "
                        + (f"default {default})" if default else "default: exit 0 once the output is written)"))


def load_with_facts(args: argparse.Namespace) -> tuple[Result, Facts | None]:
    """The result and the facts it was computed from (``None`` for a saved result, ``--from-json``)."""
    if getattr(args, "from_json", None):
        if args.source or args.only or args.deploy:
            raise DoctorError("--from-json renders a saved result; SOURCE, --only and --deploy do not apply")
        from doctor.result_io import load_result

        return load_result(args.from_json), None
    from doctor.pipeline import analyse_facts

    return analyse_facts(args.source, only=args.only, deploy=args.deploy or ())


def redacted(result: Result, map_path: str | None) -> Result:
    """``result`` with identities replaced (``--redact``); the map is written to ``map_path``."""
    from doctor.redact import redact_result
    from doctor.runner import Result

    return Result.from_dict(redact_result(result.to_dict(), map_path))


def add_format_argument(p: argparse.ArgumentParser, command: str, **kwargs: Any) -> None:
    """``--format`` with the choices :mod:`reports.formats` lists for ``command``."""
    from reports.formats import OFFERED

    p.add_argument("--format", choices=OFFERED[command], **{"help": "output format", **kwargs})
