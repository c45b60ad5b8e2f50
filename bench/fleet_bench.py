#!/usr/bin/env python3
"""Fleet benchmark: CPU seconds and peak memory of `gnd fleet` over N generated volatile nodes.

Each node is a snapshot tarball as `gnd collect` writes it (``tests/fleet/fleetgen.py``); nodes differ
in identity (hostname, machine-id, collection time), in counters and readings (interrupt counts, free
memory, GPU temperatures and power) and in the pids of their processes, as snapshots of a real fleet
do, so no two archives are alike byte for byte. Three nodes are planted outliers; each run checks
that exactly they are reported. Per fleet size, two runs, each in a fresh process:

- ``first``: the first analysis, with ``--cache DIR`` empty (every node is analysed, and its result
  stored: an upper bound for a run without ``--cache``);
- ``cached``: the same fleet again with the cache filled (every node's result read back).

Reported per node: wall and CPU milliseconds (parent and workers, imports excluded; the parent's
share apart), and peak memory: the aggregating parent's max RSS and the largest worker's
(``resource.getrusage(RUSAGE_CHILDREN)``). On a shared machine, read CPU per node, not wall.
``--json N``: also saved JSON results (``gnd check --format json`` output, what a DaemonSet or a
Slurm job would ship).

    python bench/fleet_bench.py                              # volatile 100 and 1000 nodes, 2 jobs
    python bench/fleet_bench.py --volatile 1000 10000 --jobs 2 --json 10000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PLANTED = (7, 500, 9000)


def _planted_specs():  # type: ignore[no-untyped-def]
    from fixtures.tools.make_node import HEALTHY, KERNEL_DEFAULT_SYSCTLS

    buffers = {k: KERNEL_DEFAULT_SYSCTLS[k] for k in ("net.core.rmem_max", "net.core.wmem_max")}
    return [replace(HEALTHY, gpu_links={3: (2.5, 8)}), replace(HEALTHY, sysctl_overrides=buffers),
            replace(HEALTHY, extra_cmdline=("pcie_aspm=force",))]


def _planted(count: int) -> dict[int, int]:
    """node index -> planted spec index (three outliers spread over the fleet)."""
    return {min(p, count - 1 - k): k for k, p in enumerate(PLANTED)}


def make_json_fleet(dest: Path, count: int) -> None:
    from fixtures.tools.make_node import HEALTHY
    from tests.fleet.fleetgen import json_variant, result_dict

    templates = [json.dumps(result_dict(replace(HEALTHY, node_id=900 + b))) for b in range(3)]
    specs = _planted_specs()
    planted = {i: json.dumps(result_dict(replace(specs[k], node_id=800 + k))) for i, k in _planted(count).items()}
    for i in range(count):
        name = f"gpu-node-{i:05d}"
        (dest / f"{name}.json").write_text(json_variant(planted.get(i, templates[i % 3]), name, 1000 + i))


def make_volatile_fleet(dest: Path, count: int) -> None:
    """Snapshot tarballs of three configurations whose nodes differ in identity, counters, readings and pids."""
    from fixtures.tools.make_node import HEALTHY
    from tests.fleet.fleetgen import FleetWriter, spec_tarball, volatile_files

    writers = [FleetWriter(replace(HEALTHY, node_id=900 + b)) for b in range(3)]
    specs = _planted_specs()
    planted = _planted(count)
    for i in range(count):
        name = f"gpu-node-{i:05d}"
        if i in planted:
            spec_tarball(dest / f"{name}.tar.gz", replace(specs[planted[i]], hostname=name, node_id=1000 + i))
        else:
            w = writers[i % 3]
            w.write(dest / f"{name}.tar.gz", name, 1000 + i, files=volatile_files(w.files, 1000 + i), renumber=True)


def measure(folder: str, jobs: int, cache: str | None) -> dict[str, float]:
    """Run one fleet analysis in this (fresh) process and report time, memory and outliers."""
    from doctor.fleet.fleet import analyse_fleet, expand_paths

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime  # imports; workers are forked after this
    start = time.monotonic()
    report = analyse_fleet(expand_paths([folder]), jobs, cache_dir=cache)
    seconds = time.monotonic() - start
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    parent = own.ru_utime + own.ru_stime - cpu0
    cpu = parent + kids.ru_utime + kids.ru_stime
    return {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "parent_cpu_s": round(parent, 3),
            "nodes": len(report.ok), "outliers": len(report.drift_nodes),  # the planted nodes all drift
            "groups": len(report.groups),
            "parent_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "worker_peak_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}


def _measured(kind: str, count: int, jobs: int, folder: Path, cache: Path | None) -> dict[str, object]:
    argv = [sys.executable, __file__, "--_measure", str(folder), "--jobs", str(jobs)]
    proc = subprocess.run(argv + (["--_cache", str(cache)] if cache else []), capture_output=True, text=True,
                          check=True, cwd=ROOT)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    row = {"path": kind, "count": count, "jobs": jobs, **result}
    row["ms_per_node"] = round(1000 * float(result["seconds"]) / max(1, count), 2)
    row["cpu_ms_per_node"] = round(1000 * float(result["cpu_s"]) / max(1, count), 2)
    row["parent_cpu_ms_per_node"] = round(1000 * float(result["parent_cpu_s"]) / max(1, count), 3)
    if result["outliers"] != 3 or result["nodes"] != count:
        print(f"WARNING {kind} {count}: {result['nodes']} nodes analysed, {result['outliers']} outliers (3 planted)",
              file=sys.stderr, flush=True)
    print(json.dumps(row), flush=True)
    return row


def run(kind: str, count: int, jobs: int, work: Path) -> list[dict[str, object]]:
    """The rows of one fleet size: saved JSON results once; volatile snapshots first and cached."""
    folder = work / f"{kind}-{count}"
    folder.mkdir()
    t0 = time.monotonic()
    if kind == "json":
        make_json_fleet(folder, count)
    else:
        make_volatile_fleet(folder, count)
    print(f"{kind} {count}: generated in {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    try:
        if kind == "json":
            return [_measured("json", count, jobs, folder, None)]
        cache = work / f"cache-{count}"
        return [_measured("first", count, jobs, folder, cache), _measured("cached", count, jobs, folder, cache)]
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(work / f"cache-{count}", ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--volatile", type=int, nargs="*", default=[100, 1000], help="fleet sizes of volatile snapshots")
    ap.add_argument("--json", type=int, nargs="*", default=[], help="fleet sizes of saved JSON results")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--_measure", help=argparse.SUPPRESS)
    ap.add_argument("--_cache", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._measure:
        print(json.dumps(measure(args._measure, args.jobs, args._cache)))
        return 0
    work = Path(tempfile.mkdtemp(prefix="gnd-fleet-bench-"))
    rows: list[dict[str, object]] = []
    try:
        for n in args.volatile:
            rows += run("volatile", n, args.jobs, work)
        for n in args.json:
            rows += run("json", n, args.jobs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'run':<7} {'nodes':>6} {'jobs':>4} {'seconds':>8} {'ms/node':>8} {'CPU ms/node':>11} "
          f"{'of it parent':>12} {'parent MiB':>10} {'worker MiB':>10} {'outliers':>8}")
    for r in rows:
        print(f"{r['path']:<7} {r['count']:>6} {r['jobs']:>4} {r['seconds']:>8} {r['ms_per_node']:>8} "
              f"{r['cpu_ms_per_node']:>11} {r['parent_cpu_ms_per_node']:>12} {r['parent_peak_mib']:>10} "
              f"{r['worker_peak_mib']:>10} {r['outliers']:>8}")
    print(f"(machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
