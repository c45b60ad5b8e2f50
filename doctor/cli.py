"""The ``gnd`` command line.

Exit codes: 0 no finding at or above ``--fail-on`` (default ``high``); 1 some; 2 the doctor could
not run (bad source or option: one line on stderr, no traceback).

Subcommands other than ``check``, ``collect`` and ``checks`` live in their own modules (listed in
:data:`EXTERNAL`), each exposing ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``;
those modules import only the standard library and ``doctor`` at import time, so that ``gnd check``
never pays for Textual or WeasyPrint.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from doctor import __version__
from doctor.errors import DoctorError
from doctor.findings import FAIL_LEVELS, at_least

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2

#: subcommand -> module providing HELP, add_arguments(parser) and run(args)
EXTERNAL: dict[str, str] = {
    "report": "reports.cli",
    "fix-script": "reports.fixscript_cli",
    "tui": "doctor.tui.cli",
    "diff": "doctor.fleet.diff_cli",
    "fleet": "doctor.fleet.fleet_cli",
    "baseline": "doctor.fleet.baseline_cli",
}

DESCRIPTION = """\
Find why a GPU inference node is slower than it should be: PCIe links, chipset slots, ACS and
IOMMU, vfio bindings, NUMA placement, IRQs, socket buffers, RoCE GID selection, NCCL transport
and runtime flags that disable CUDA Graphs. SOURCE is the live host (default), a snapshot
directory or tarball written by `gnd collect`, or a sosreport directory or tarball."""

EPILOG = """\
exit status: 0 no finding at or above --fail-on; 1 some finding at or above it;
2 the doctor could not run (bad source or option).
examples:
  gnd check                         check this host
  gnd check snapshot.tar.gz         check a snapshot collected earlier
  gnd check sosreport-node1.tar.xz  check a sosreport
  gnd check --format json --only pcie,numa.kernel_policy
  gnd collect -o node7.tar.gz       snapshot this host for offline analysis"""


def _id_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _add_source(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", metavar="SOURCE",
                   help="live host (default, or /), snapshot dir/tarball, or sosreport dir/tarball")


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """Options shared by ``check`` and commands that run checks (report, tui, fix-script)."""
    _add_source(p)
    p.add_argument("--only", action="extend", metavar="ID[,ID...]", type=_id_list,
                   help="run only these checks: ids or prefixes like 'pcie', comma-separated; repeatable")
    p.add_argument("--deploy", action="append", default=[], metavar="PATH",
                   help="extra deployment file (systemd unit, compose file, manifest) to inspect; repeatable")


def _load_external(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(EXTERNAL[name])
    except ModuleNotFoundError as exc:
        if exc.name and EXTERNAL[name].startswith(exc.name):
            return None  # that part of the tool is not built yet
        raise


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, ModuleType]]:
    parser = argparse.ArgumentParser(prog="gnd", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"gpu-node-doctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("check", help="run the checks and print ranked findings",
                       description="Run the checks on SOURCE and print ranked findings with fix commands.",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
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

    p = sub.add_parser("collect", help="write a snapshot tarball of this host for offline analysis",
                       description="Collect the files and command outputs the checks need into one tarball. "
                       "Process environments keep only allowlisted names; secrets are masked.")
    p.add_argument("-o", "--output", metavar="FILE", help="tarball to write (default gnd-snapshot-HOST-TIME.tar.gz)")
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

    p = sub.add_parser("checks", help="list the available checks", description="List the available checks.")
    p.add_argument("--format", choices=("text", "json"), default="text")

    externals: dict[str, ModuleType] = {}
    for name in EXTERNAL:
        module = _load_external(name)
        if module is None:
            continue
        externals[name] = module
        ep = sub.add_parser(name, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(ep)
    return parser, externals


def _write(text: str, output: str | None) -> None:
    if output:
        try:
            with open(output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise DoctorError(f"cannot write {output}: {exc.strerror}") from None
    else:
        sys.stdout.write(text)


def run_check(args: argparse.Namespace) -> int:
    from doctor.facts import Facts
    from doctor.runner import run_checks
    from doctor.secrets import mask_data
    from doctor.sources import open_source

    source = open_source(args.source)
    facts = Facts(source, deploy_paths=tuple(args.deploy))
    result = run_checks(facts, only=args.only)
    if getattr(args, "baseline", None):
        from doctor.fleet.baseline import apply_baseline  # type: ignore[import-not-found,unused-ignore]

        result = apply_baseline(result, facts, args.baseline)
    data = mask_data(result.to_dict())  # secrets never leave the host, whatever the format
    if args.redact:
        from reports.redact import redact_result  # type: ignore[import-not-found,unused-ignore]

        data = redact_result(data, args.redact_map)
    if args.format == "json":
        _write(json.dumps(data, indent=2) + "\n", args.output)
    elif args.format == "prometheus":
        from reports.prometheus import render_prometheus  # type: ignore[import-not-found,unused-ignore]

        _write(render_prometheus(data), args.output)
    else:
        from doctor.runner import Result
        from reports.text import render_text

        shown = Result.from_dict(data)
        if args.output:
            import io

            buf = io.StringIO()
            render_text(shown, buf, verbose=args.verbose, colour=False)
            _write(buf.getvalue(), args.output)
        else:
            render_text(shown, sys.stdout, verbose=args.verbose)
    worst = any(at_least(f.severity, args.fail_on) for f in result.findings)
    return EXIT_FINDINGS if worst else EXIT_OK


def run_collect(args: argparse.Namespace) -> int:
    from doctor.collect import collect, default_output
    from doctor.sources import LiveSource

    if not os.path.isdir(args.root):
        raise DoctorError(f"{args.root}: not a directory")
    source = LiveSource(args.root, run_commands=True if args.run_commands else None)
    transform = None
    if args.redact:
        from reports.redact import snapshot_transform  # type: ignore[import-not-found,unused-ignore]

        transform = snapshot_transform(source, args.redact_map)
    out = args.output or default_output(source.read_line("proc/sys/kernel/hostname") if args.root != "/" else None)
    manifest = collect(source, out, transform)
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


def run_list(args: argparse.Namespace) -> int:
    from doctor.registry import load_checks

    checks, errors = load_checks()
    if args.format == "json":
        print(json.dumps([{"id": c.id, "title": c.title, "category": c.category, "plugin": c.plugin,
                           "description": c.description} for c in checks], indent=2))
    else:
        width = max((len(c.id) for c in checks), default=10)
        for c in checks:
            print(f"{c.id:<{width}}  {c.category:<8}  {c.title}")
        for e in errors:
            print(f"plugin {e.plugin} failed to load: {e.error}", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        parser, externals = build_parser()
        if not args_list:
            if "tui" in externals and sys.stdin.isatty() and sys.stdout.isatty():
                args_list = ["tui"]
            else:
                args_list = ["check"]
        elif args_list[0] not in {"check", "collect", "checks", *externals} and \
                args_list[0] not in ("-h", "--help", "--version"):
            args_list = ["check", *args_list]  # `gnd SOURCE` and `gnd --format json` mean `gnd check ...`
        args = parser.parse_args(args_list)
        if args.command == "check":
            return run_check(args)
        if args.command == "collect":
            return run_collect(args)
        if args.command == "checks":
            return run_list(args)
        if args.command in externals:
            return int(externals[args.command].run(args))
        parser.print_help()
        return EXIT_ERROR
    except DoctorError as exc:
        from doctor.textsafe import clean

        print(f"gnd: error: {clean(str(exc))}", file=sys.stderr)  # a hostile file name cannot drive the terminal
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("gnd: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
