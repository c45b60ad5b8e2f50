"""``gnd fix-script``: write the safe runtime fixes as a dry-run-by-default bash script plus its rollback."""

from __future__ import annotations

import argparse
import sys

from doctor.errors import DoctorError
from doctor.i18n import _

HELP = "write a bash script of the safe runtime fixes (dry run by default) and its rollback script"
DESCRIPTION = """\
Run the checks on SOURCE (default: this host) and write a bash script of the runtime fixes that are
safe to apply unattended (sysctls, IRQ affinity, module loads, link settings, systemd drop-ins and
deployment-file patches that take a variable or flag out of a server's start-up), grouped by
finding, with a backup step first. Each fix is rebuilt from its check's own fix builder, never from
command text, and every parameter must come from the fact it declares in the host's own facts (an
interface or device the host has, a deployment file the checks read and its lines, a variable or
flag the check judges, an MTU in the physical range, what a rollback restores as the host has it now),
and every value a fix sets is the one the check itself recommends on the host's facts (it runs again on
them); a fix that fails becomes a comment saying why.
The script only prints its commands unless run with --apply, which it refuses on any host but the
one the checks ran on (hostname and machine-id); firmware, BIOS, boot-loader, service-restart and
persistent steps are comments, and the dry run ends with the list of what is left to do by hand.
A failed diagnostic does not stop it. A rollback script (FILE.rollback.sh) that undoes exactly what
the fix script runs is written next to it.

Unattended steps come only from the host's own facts, read on it: made from a copy of a host (SOURCE
a snapshot, sosreport or nvidia-bug-report log) or a saved result (--from-json), which anyone may have
edited, the script is for review only: every step is a comment, a note says what it was made from, and
the script refuses --apply (exit 2); run gnd fix-script on the host itself for one that applies.
Exit status 0 once both scripts are written (unless --fail-on is given).

examples:
  gnd fix-script -o fix.sh && less fix.sh && sudo ./fix.sh --apply
  gnd fix-script --from-json result.json -o review.sh
  gnd fix-script node-13.tar.gz -o review.sh         # a snapshot: for review only"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from doctor.commands.common import add_input_arguments

    add_input_arguments(p, fail_on=None)
    p.add_argument("-o", "--output", metavar="FILE", default="gnd-fix.sh", help="script to write (default gnd-fix.sh)")
    p.add_argument("--rollback", metavar="FILE", help="rollback script to write (default FILE.rollback.sh)")


def run(args: argparse.Namespace) -> int:
    from doctor.commands.common import inputs_of, load_with_facts
    from doctor.output import check_outputs, exit_code, write_output
    from reports.fixscript import fix_scripts, rollback_path

    back = args.rollback or rollback_path(args.output)
    check_outputs([args.output, back], inputs_of(args))
    result, facts = load_with_facts(args)
    scripts = fix_scripts(result, facts)
    if back == args.output:
        raise DoctorError("--rollback must differ from the fix script")
    write_output(args.output, scripts.fix.encode(), 0o755)
    write_output(back, scripts.rollback.encode(), 0o755)
    how = (_("for review only: not made on the host itself (a saved result, snapshot, sosreport or bug report), it "
             "runs nothing and refuses --apply; run gnd fix-script on that host for one that applies") if scripts.review
           else _("{n} commands; dry run unless run with --apply").format(n=scripts.fix_commands))
    print(_("wrote {script} ({how}) and {rollback} ({n} commands); review both before running").format(
        script=args.output, how=how, rollback=back, n=scripts.rollback_commands), file=sys.stderr)
    return exit_code(result, args.fail_on)
