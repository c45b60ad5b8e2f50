"""``gnd tui``: open the interactive triage screen (Textual is imported only inside :func:`run`)."""

from __future__ import annotations

import argparse
import sys

from doctor.errors import DoctorError

HELP = "interactive triage: ranked findings, evidence, fix commands, PCIe topology"
DESCRIPTION = """\
Open an interactive screen over SOURCE (the live host by default, a snapshot or a sosreport):
findings ranked worst first with their evidence and fix commands, a PCIe/NUMA topology tree,
re-run with a diff against the previous run, and export. Press ? inside for the keys."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from doctor.commands.common import add_check_arguments

    add_check_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Validate the source (so a bad one prints one line and exits 2), then run the app."""
    from doctor.pipeline import open_facts

    open_facts(args.source, deploy=args.deploy)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise DoctorError("gnd tui needs an interactive terminal; use `gnd check` for text or JSON output")
    from doctor.tui.app import DoctorApp
    from doctor.tui.loader import make_loader
    from reports import formats

    app = DoctorApp(make_loader(args.source, args.only, tuple(args.deploy)),
                    live=args.source in (None, "", "/"), exporter=formats)
    app.run()
    return 0
