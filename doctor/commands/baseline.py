"""``gnd baseline SOURCE -o expected.toml``: record a known-good node for ``gnd check --baseline``."""

from __future__ import annotations

import argparse
import sys

HELP = "write a known-good baseline (TOML) of a node for `gnd check --baseline`"
DESCRIPTION = """\
Write what a known-good node looks like as plain, commented TOML you can edit: GPU and NIC count
and models, per slot (PCI address) the link generation and width, NUMA node and driver binding,
chosen sysctls and kernel command-line parameters. Then run
`gnd check --baseline expected.toml [SOURCE]` on any node to report every deviation as check
baseline.deviation (with evidence and the baseline line it broke).

exit status: 0 written; 2 could not read SOURCE or write the file."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", metavar="SOURCE",
                   help="live host (default), snapshot dir/tarball or sosreport of a known-good node")
    p.add_argument("-o", "--output", metavar="FILE", help="write the baseline to FILE (default stdout)")


def run(args: argparse.Namespace) -> int:
    from doctor.commands.common import inputs_of
    from doctor.fleet.baseline import write_baseline
    from doctor.output import check_outputs, write_output
    from doctor.pipeline import open_facts

    check_outputs([args.output], inputs_of(args))
    facts = open_facts(args.source)
    text = write_baseline(facts, facts.source.location)
    write_output(args.output, text)
    if args.output:
        print(f"wrote {args.output}; check a node against it with: gnd check --baseline {args.output} [SOURCE]",
              file=sys.stderr)
    return 0
