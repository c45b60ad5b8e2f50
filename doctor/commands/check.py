"""``gnd check``: run the checks and print ranked findings (text, JSON or Prometheus)."""

from __future__ import annotations

import argparse
import json
import sys

from doctor.commands.common import add_check_arguments
from doctor.findings import FAIL_LEVELS, at_least
from doctor.output import EXIT_FINDINGS, EXIT_OK, write_text

HELP = "run the checks and print ranked findings"
DESCRIPTION = "Run the checks on SOURCE and print ranked findings with fix commands."
EPILOG = """\
exit status: 0 no finding at or above --fail-on; 1 some finding at or above it;
2 the doctor could not run (bad source or option).
examples:
  gnd check                         check this host
  gnd check snapshot.tar.gz         check a snapshot collected earlier
  gnd check sosreport-node1.tar.xz  check a sosreport
  gnd check --format json --only pcie,numa.kernel_policy
  gnd collect -o node7.tar.gz       snapshot this host for offline analysis"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_check_arguments(p)
    p.add_argument("--format", choices=("text", "json", "prometheus"), default="text", help="output format")
    p.add_argument("--fail-on", choices=FAIL_LEVELS, default="high", metavar="LEVEL",
                   help="exit 1 if a finding is at or above LEVEL (critical, high, medium, low, info; default high)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="show every evidence line and info finding")
    p.add_argument("--redact", action="store_true",
                   help="replace hostnames, addresses, MACs, serials and UUIDs with placeholders")
    p.add_argument("--redact-map", metavar="FILE", help="where --redact writes its private map")
    p.add_argument("--baseline", metavar="TOML", help="also report deviations from a known-good baseline file")


def run(args: argparse.Namespace) -> int:
    from doctor.pipeline import analyse
    from doctor.safe_open import check_output

    check_output(args.output, [args.source, getattr(args, "baseline", None), args.redact_map, *args.deploy])
    result = analyse(args.source, only=args.only, deploy=args.deploy, baseline=getattr(args, "baseline", None))
    data = result.to_dict()
    if args.redact:
        from doctor.redact import redact_result

        data = redact_result(data, args.redact_map)
    if args.format == "json":
        write_text(json.dumps(data, indent=2) + "\n", args.output)
    elif args.format == "prometheus":
        from reports.prometheus import render_prometheus

        write_text(render_prometheus(data), args.output)
    else:
        from doctor.runner import Result
        from reports.text import render_text

        shown = Result.from_dict(data) if args.redact else result
        if args.output:
            import io

            buf = io.StringIO()
            render_text(shown, buf, verbose=args.verbose, colour=False)
            write_text(buf.getvalue(), args.output)
        else:
            render_text(shown, sys.stdout, verbose=args.verbose)
    worst = any(at_least(f.severity, args.fail_on) for f in result.findings)
    return EXIT_FINDINGS if worst else EXIT_OK
