"""``gnd collect``: write a snapshot tarball of this host for offline analysis."""

from __future__ import annotations

import argparse
import os
import sys

from doctor.errors import DoctorError
from doctor.output import EXIT_OK

HELP = "write a snapshot tarball of this host for offline analysis"
DESCRIPTION = ("Collect the files and command outputs the checks need into one tarball. "
               "Process environments keep only allowlisted names; secrets are masked.")
#: the description is one paragraph: let argparse wrap it
FORMATTER = argparse.HelpFormatter


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE", help="tarball to write, replaced whole if it exists (default gnd-HOST-YYYYMMDDTHHMMSSZ.tar.gz "
                        "in the current directory, UTC; never replacing a file: -2, -3 ... added instead)")
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read the host's files under DIR instead of / (e.g. /host in a container that mounts "
                        "the host's /sys, /proc and /etc there); commands are then read from DIR/commands "
                        "unless --run-commands is given")
    p.add_argument("--run-commands", action="store_true",
                   help="with --root, still run nvidia-smi and lspci on this machine (a container that sees "
                        "the host's GPUs and PCI devices)")
    p.add_argument("--redact", action="store_true",
                   help="replace hostnames, addresses, MACs, serials and UUIDs in the snapshot")
    p.add_argument("--redact-map", metavar="FILE", help="where --redact writes its private map")
    p.add_argument("--watch", type=float, metavar="SECONDS",
                   help="first sample links, counters, clocks and the kernel log for SECONDS (as `gnd watch`, "
                        "every --watch-interval seconds) and store the summaries in the snapshot")
    p.add_argument("--watch-interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between samples with --watch (default 1)")


def run(args: argparse.Namespace) -> int:
    from doctor.collect import collect, default_output, snapshot_hostname
    from doctor.commands.common import inputs_of
    from doctor.sources import LiveSource

    if not os.path.isdir(args.root):
        raise DoctorError(f"{args.root}: not a directory")
    source = LiveSource(args.root, run_commands=True if args.run_commands else None)
    out = args.output or default_output(snapshot_hostname(source))
    from doctor.output import check_outputs

    check_outputs([out, args.redact_map if args.redact else None], inputs_of(args))  # before the map is written
    transform = None
    if args.redact:
        from doctor.redact import snapshot_transform

        transform = snapshot_transform(source, args.redact_map)
    record = None
    if args.watch is not None:
        from doctor.watch import check_bounds, run_watch

        check_bounds(args.watch, args.watch_interval)
        record = run_watch(args.root if args.root != "/" else None, args.watch, args.watch_interval)
    manifest = collect(source, out, transform, watch=record, numbered=not args.output)
    out = manifest["written"]
    specs_status = manifest["specs"]
    bad = {k: v for k, v in specs_status.items() if v.get("status") not in ("ok",)}
    size = os.path.getsize(out)
    print(f"wrote {out}: {manifest['files']} files, {manifest['links']} links, {size / 1024:.0f} KiB "
          f"in {manifest['duration_s']:.1f} s", file=sys.stderr)
    for name, entry in sorted(bad.items()):
        print(f"  {name}: {entry.get('status')} {entry.get('detail', '')}".rstrip(), file=sys.stderr)
    if os.geteuid() != 0:
        print("  (not root: config space past 64 bytes, other users' process data and some files were skipped)",
              file=sys.stderr)
    return EXIT_OK
