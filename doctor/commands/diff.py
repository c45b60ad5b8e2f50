"""``gnd diff BEFORE AFTER``: prove that a change fixed what it was meant to, and broke nothing."""

from __future__ import annotations

import argparse

from doctor.commands.common import add_fail_on, add_format_argument, add_lang_argument, inputs_of
from doctor.errors import DoctorError

HELP = "compare two snapshots or saved results of one node (findings fixed/new/changed, fact changes)"
DESCRIPTION = """\
Compare BEFORE and AFTER (each a snapshot dir/tarball, a sosreport, or a saved
`gnd check --format json` result) of the same node: findings fixed, new, unchanged or changed in
severity, keyed by (check, subject), and the facts that changed (PCIe link speed and width per
device, driver bindings, sysctls, GID tables, inference process flags, kernel command line).

Refuses (exit 2) when the two come from different hosts (machine-id, hostname or board serial)
unless --cross-host is given.

exit status: 0 no new or worsened finding at or above --fail-on; 1 some; 2 could not run."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("before", metavar="BEFORE", help="snapshot, sosreport or JSON result taken before the change")
    p.add_argument("after", metavar="AFTER", help="snapshot, sosreport or JSON result taken after the change")
    add_format_argument(p, "diff", default="text")
    p.add_argument("--cross-host", action="store_true", help="compare even when BEFORE and AFTER are different hosts")
    add_fail_on(p, help="exit 1 if a new or worsened finding is at or above LEVEL (default high)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="also list unchanged findings one by one")
    add_lang_argument(p)


def run(args: argparse.Namespace) -> int:
    from doctor.diff import diff_nodes
    from doctor.fleet.load import load_node
    from doctor.output import check_outputs, write_output
    from doctor.registry import load_checks
    from reports.formats import FORMATS

    check_outputs([args.output], inputs_of(args))
    checks, _ = load_checks()
    before = load_node(args.before, checks)
    after = load_node(args.after, checks)
    d = diff_nodes(before, after)
    if d.identity_mismatch and not args.cross_host:
        raise DoctorError(f"BEFORE and AFTER come from different hosts ({'; '.join(d.identity_mismatch)}); "
                          "pass --cross-host to compare them anyway")
    write_output(args.output, str(FORMATS[args.format].render(d, verbose=args.verbose)))
    return 1 if d.regressions(args.fail_on) else 0
