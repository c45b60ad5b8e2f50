"""``gnd watch``: sample links, counters, clocks and the kernel log over time, then run the checks."""

from __future__ import annotations

import argparse
import sys

from doctor.commands.common import add_check_arguments, add_fail_on, add_format_argument, inputs_of

HELP = "sample links, counters, clocks and new kernel-log lines over time, then check"
DESCRIPTION = """\
Sample SOURCE every --interval seconds for --duration seconds: the speed and width of every GPU
and NIC link and of every hop above them, GPU activity and clock-event reasons (NVML on this host,
the recorded nvidia-smi output of a snapshot folder), PCIe AER and replay counters,
InfiniBand/RoCE port counters, carrier changes and the kernel-log lines that appear meanwhile.
Then report what one snapshot cannot show (links that change width or slow down under load,
counters that grow, with their rate, throttling while busy, new Xid lines) together with the
ordinary checks, run once on the last sample. A snapshot folder is read afresh at each sample.
Memory stays constant whatever the duration (summaries, not every sample).

exit status: 0 no finding at or above --fail-on; 1 some finding at or above it;
2 the doctor could not run (bad source or option).
examples:
  gnd watch --duration 120 --interval 1        watch this host for two minutes
  gnd watch --duration 600 --format json -o watch.json
  gnd collect --watch 120 -o node7.tar.gz      record two minutes of samples into a snapshot"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_check_arguments(p)
    p.add_argument("--duration", type=float, default=60.0, metavar="SECONDS",
                   help="how long to watch (default 60, at most 86400)")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between samples (default 1)")
    add_format_argument(p, "watch", default="text")
    add_fail_on(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("-v", "--verbose", action="store_true", help="show every evidence line and info finding")
    p.add_argument("--tui", action="store_true", help="show the samples live in the terminal UI while watching")


def _progress(total: int):  # type: ignore[no-untyped-def]
    """A one-line progress on a terminal's stderr, else nothing."""
    if not sys.stderr.isatty():
        return None

    def show(sample, recorder) -> None:  # type: ignore[no-untyped-def]
        changed = sum(1 for link in recorder.links.values() if link.transitions)
        print(f"\rsample {recorder.samples}/{total}  t={sample.t:.0f}s  links changed: {changed}  "
              f"new kernel lines: {len(sample.lines)}   ", end="", file=sys.stderr, flush=True)
    return show


def run(args: argparse.Namespace) -> int:
    from doctor.output import exit_code, use_colour, write_output
    from doctor.pipeline import analyse
    from doctor.safe_open import check_output
    from doctor.watch import check_bounds, run_watch
    from reports.formats import FORMATS

    check_bounds(args.duration, args.interval)
    check_output(args.output, inputs_of(args))
    if args.tui:
        from doctor.tui.watch_view import watch_live

        record = watch_live(args.source, args.duration, args.interval)
    else:
        show = _progress(int(args.duration / args.interval) + 1)
        record = run_watch(args.source, args.duration, args.interval, on_sample=show)
        if show is not None:
            print(file=sys.stderr)
    result = analyse(args.source, only=args.only, deploy=args.deploy, watch=record)
    fmt = FORMATS[args.format]
    colour = args.format == "text" and not args.output and use_colour(sys.stdout)
    body = fmt.render(result, verbose=args.verbose, colour=colour)
    if isinstance(body, bytes) and not args.output:
        from doctor.errors import DoctorError

        raise DoctorError(f"--format {args.format} writes a file: give -o FILE")
    write_output(args.output, body)
    return exit_code(result, args.fail_on)
