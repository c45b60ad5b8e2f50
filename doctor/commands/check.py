"""``gnd check``: run the checks and print ranked findings (text, JSON or Prometheus)."""

from __future__ import annotations

import argparse
import sys

from doctor.commands.common import add_check_arguments, add_fail_on, add_format_argument, inputs_of, redacted
from doctor.deadline import parse_seconds
from doctor.output import exit_code, use_colour, write_output

HELP = "run the checks and print ranked findings"
DESCRIPTION = "Run the checks on SOURCE and print ranked findings with fix commands."
EPILOG = """\
exit status: 0 no finding at or above --fail-on; 1 some finding at or above it;
2 the doctor could not run (bad source or option). With --deadline, what did not finish
in time is reported unknown, and the exit status speaks for what did.
examples:
  gnd check                         check this host
  gnd check snapshot.tar.gz         check a snapshot collected earlier
  gnd check sosreport-node1.tar.xz  check a sosreport
  gnd check --format json --only pcie,numa.kernel_policy
  gnd check --deadline 45           finish within 45 s (a Slurm health check has 60)
  gnd collect -o node7.tar.gz       snapshot this host for offline analysis"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_check_arguments(p)
    add_format_argument(p, "check", default="text")
    add_fail_on(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="show every evidence line and info finding")
    p.add_argument("--redact", action="store_true",
                   help="replace hostnames, addresses, MACs, serials and UUIDs with placeholders")
    p.add_argument("--redact-map", metavar="FILE", help="where --redact writes its private map")
    p.add_argument("--baseline", metavar="TOML", help="also report deviations from a known-good baseline file")
    p.add_argument("--deadline", type=parse_seconds, metavar="SECONDS",
                   help="finish within SECONDS, commands and checks together; what did not finish is "
                        "reported unknown, naming it (default: no limit)")


def run(args: argparse.Namespace) -> int:
    from doctor.deadline import Deadline
    from doctor.output import check_outputs
    from doctor.pipeline import analyse
    from reports.formats import FORMATS

    deadline = Deadline.after(args.deadline) if getattr(args, "deadline", None) else None
    check_outputs([args.output, args.redact_map], inputs_of(args))
    result = analyse(args.source, only=args.only, deploy=args.deploy, baseline=getattr(args, "baseline", None),
                     deadline=deadline)
    shown = redacted(result, args.redact_map) if args.redact else result
    colour = args.format == "text" and not args.output and use_colour(sys.stdout)
    write_output(args.output, str(FORMATS[args.format].render(shown, verbose=args.verbose, colour=colour)))
    return exit_code(result, args.fail_on)
