"""``gnd fleet PATH...``: which nodes of a fleet differ from the rest, and why."""

from __future__ import annotations

import argparse
import os
import sys

from doctor.commands.common import add_fail_on, add_format_argument, add_lang_argument, inputs_of
from doctor.errors import DoctorError

HELP = "analyse many snapshots or saved results: outlier nodes, fleet-wide findings, configuration groups"
DESCRIPTION = """\
Analyse every PATH (a snapshot dir/tarball, a sosreport, a saved `gnd check --format json`
result, a folder holding such sources, or a glob; or the same in object storage or on a web server:
s3://, gs://, http(s)://, file:// URLs, read through fsspec with the bounds of local files) in
parallel, on this machine or on a Dask cluster (--dask), and show, on one screen: groups of
nodes with identical configuration, a check-by-group matrix, the outlier nodes and why,
configuration drift, and the findings common to every node (fleet-wide settings). Unreadable
sources are listed with their reason; the run goes on.

outlier nodes: every node holding a finding at or above --fail-on that most nodes lack, i.e. a
finding (check, subject, severity) held by fewer than half of the analysed nodes (2 of 10 nodes
sharing a fault are both listed; a finding below --fail-on lists no node); at least 3 nodes vote.
configuration drift: a fact where more than half of the nodes agree and at most 5 % differ (one
GPU at x8 where the others run x16), shown whether or not a check fired; it lists the nodes but
does not by itself make one an outlier.

exit status: 0 every source read and no finding at or above --fail-on (so no outlier node);
1 otherwise; 2 bad option or no source could be analysed."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="sources, folders of sources, or globs (quote them)")
    p.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                   help="worker processes (default: all cores; not with --dask)")
    p.add_argument("--dask", metavar="SPEC",
                   help="run the nodes on a Dask cluster: a scheduler address (tcp://HOST:8786) or local:N "
                        "(N worker processes here); needs the 'distributed' extra")
    add_format_argument(p, "fleet", default="text")
    add_fail_on(p, help="exit 1 if any node has a finding at or above LEVEL (default high); outlier nodes "
                        "are the nodes with such a finding that fewer than half of the nodes have")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE instead of stdout")
    p.add_argument("--save-json", metavar="FILE", help="also write the JSON report to FILE (one analysis, two outputs)")
    p.add_argument("--save-html", metavar="FILE", help="also write the HTML report to FILE")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    add_lang_argument(p)
    p.add_argument("--cache", metavar="DIR",
                   help="keep each snapshot tarball's result in DIR (keyed by its sha256, the tool version and "
                        "the checks loaded) and reuse it next time (with --dask: a folder on the workers)")


def _progress(done: int, total: int, summary: dict[str, object]) -> None:
    """A bar on stderr (a terminal only: the caller decides), redrawn every 2 % and at the end."""
    step = max(1, total // 50)
    if done == total or done % step == 0:
        filled = 30 * done // max(1, total)
        print(f"\r  [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} analysed", end="\n" if done == total else "",
              file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from doctor.fleet.fleet import analyse_fleet, expand_paths
    from doctor.output import check_outputs, write_output
    from reports.formats import FORMATS

    if args.jobs < 0:
        raise DoctorError("--jobs must be 0 (all cores) or more")
    jobs = args.jobs or os.cpu_count() or 1
    paths = expand_paths(args.paths)
    if args.cache:  # a cache folder kept among the snapshots is not a node
        cache = os.path.realpath(args.cache)
        paths = [p for p in paths if os.path.realpath(p) != cache]
    check_outputs([args.output, args.save_json, args.save_html], [*paths, *inputs_of(args)])
    if not paths:
        raise DoctorError("no snapshot, sosreport or JSON result found in " + " ".join(args.paths))
    show = not args.quiet and sys.stderr.isatty()
    progress = _progress if show else None
    if args.dask:
        if args.jobs:
            raise DoctorError("--jobs does not apply with --dask: the cluster's workers run the nodes")
        from doctor.fleet.dask_engine import DaskEngine, connect

        with connect(args.dask) as client:
            engine = DaskEngine(client)
            report = analyse_fleet(paths, engine.jobs, progress, cache_dir=args.cache, engine=engine,
                                   fail_on=args.fail_on)
    else:
        report = analyse_fleet(paths, min(jobs, len(paths)), progress, cache_dir=args.cache, fail_on=args.fail_on)
    write_output(args.output, str(FORMATS[args.format].render(report)))
    for fmt, output in (("json", args.save_json), ("html", args.save_html)):
        if output:
            write_output(output, str(FORMATS[fmt].render(report)))
    if not report.ok:
        print("gnd: error: no source could be analysed", file=sys.stderr)
        return 2
    if report.unreadable or report.outlier_nodes or report.failing(args.fail_on):
        return 1
    return 0
