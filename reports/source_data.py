"""Shared by ``gnd report`` and ``gnd fix-script``: get the result dict, write the output safely.

Imports only the standard library and ``doctor`` at module level (it is loaded on every ``gnd``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from doctor.errors import DoctorError
from doctor.findings import FAIL_LEVELS, at_least


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """SOURCE/--only/--deploy (as ``gnd check``), ``--from-json`` and ``--fail-on``."""
    from doctor.cli import add_check_arguments

    add_check_arguments(p)
    p.add_argument("--from-json", metavar="RESULT", help="render a saved `gnd check --format json` result "
                   "instead of running the checks (no host needed)")
    p.add_argument("--fail-on", choices=FAIL_LEVELS, default="high", metavar="LEVEL",
                   help="exit 1 if a finding is at or above LEVEL (critical, high, medium, low, info; default high)")


def result_data(args: argparse.Namespace) -> dict[str, Any]:
    """The result dict: loaded from ``--from-json`` or produced by running the checks on SOURCE."""
    if getattr(args, "from_json", None):
        if args.source or args.only or args.deploy:
            raise DoctorError("--from-json renders a saved result; SOURCE, --only and --deploy do not apply")
        from reports.view import load_result

        return load_result(args.from_json)
    from doctor.facts import Facts
    from doctor.runner import run_checks
    from doctor.sources import open_source

    source = open_source(args.source)
    facts = Facts(source, deploy_paths=tuple(args.deploy or ()))
    return run_checks(facts, only=args.only).to_dict()


def exit_code(data: dict[str, Any], fail_on: str) -> int:
    """0, or 1 when a finding is at or above ``fail_on`` (as ``gnd check``)."""
    for f in data.get("findings") or []:
        if isinstance(f, dict) and at_least(str(f.get("severity")), fail_on):
            return 1
    return 0


def write_atomic(path: str, body: bytes, mode: int = 0o644) -> None:
    """Write ``body`` to ``path`` through a temporary file in the same directory."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise DoctorError(f"{path} is a directory; give a file name")
    if not os.path.isdir(directory):
        raise DoctorError(f"cannot write {path}: {directory} does not exist")
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
