#!/usr/bin/env python3
"""Fleet benchmark: seconds and peak memory of `gnd fleet` over N generated nodes.

Wall and CPU seconds (parent and workers, imports excluded; the parent's share apart) per node. Three fleets: saved JSON
results (``gnd check --format json`` output; what a DaemonSet or Slurm job would ship); snapshot
tarballs whose nodes differ only in identity (hostname, machine-id, collection time), the best case
for what a worker shares between alike nodes; and "volatile" snapshot tarballs whose nodes also
differ in counters and readings (interrupt counts, free memory, GPU temperatures and power) and run
their processes under other pids, as snapshots of a real fleet do. Checks run on every snapshot. Each measurement runs in a fresh
process; peak memory is the aggregating parent's max RSS and the largest worker's
(``resource.getrusage(RUSAGE_CHILDREN)``). Three nodes are planted outliers; the run checks that
exactly they are reported.

    python bench/fleet_bench.py                         # JSON 1000 and 10000, snapshots 100 and 300, volatile 300
    python bench/fleet_bench.py --json --snapshots 300 10000 --volatile 300 --jobs 2
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


def make_snapshot_fleet(dest: Path, count: int, volatile: bool = False) -> None:
    """``volatile``: nodes also differ in counters and readings (interrupts, free memory, GPU temperatures
    and power) and in process ids, as on a real fleet, so no two archives are laid out alike; else only
    in identity."""
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
            w.write(dest / f"{name}.tar.gz", name, 1000 + i, files=volatile_files(w.files, 1000 + i) if volatile else None,
                    renumber=volatile)


def measure(folder: str, jobs: int) -> dict[str, float]:
    """Run one fleet analysis in this (fresh) process and report time, memory and outliers."""
    from doctor.fleet.fleet import analyse_fleet, expand_paths

    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime  # imports; workers are forked after this
    start = time.monotonic()
    report = analyse_fleet(expand_paths([folder]), jobs)
    seconds = time.monotonic() - start
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    parent = own.ru_utime + own.ru_stime - cpu0
    cpu = parent + kids.ru_utime + kids.ru_stime
    return {"seconds": round(seconds, 2), "cpu_s": round(cpu, 2), "parent_cpu_s": round(parent, 3),
            "nodes": len(report.ok), "outliers": len(report.outlier_nodes),
            "groups": len(report.groups),
            "parent_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "worker_peak_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)}


def run(kind: str, count: int, jobs: int, work: Path) -> dict[str, object]:
    folder = work / f"{kind}-{count}"
    folder.mkdir()
    t0 = time.monotonic()
    if kind == "json":
        make_json_fleet(folder, count)
    else:
        make_snapshot_fleet(folder, count, volatile=kind == "volatile")
    generated = time.monotonic() - t0
    proc = subprocess.run([sys.executable, __file__, "--_measure", str(folder), "--jobs", str(jobs)],
                          capture_output=True, text=True, check=True, cwd=ROOT)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    shutil.rmtree(folder)
    row = {"path": kind, "count": count, "jobs": jobs, "generate_s": round(generated, 1), **result}
    row["ms_per_node"] = round(1000 * float(result["seconds"]) / max(1, count), 2)
    row["cpu_ms_per_node"] = round(1000 * float(result["cpu_s"]) / max(1, count), 2)
    row["parent_cpu_ms_per_node"] = round(1000 * float(result["parent_cpu_s"]) / max(1, count), 3)
    print(json.dumps(row), flush=True)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=int, nargs="*", default=[1000, 10000], help="fleet sizes for saved results")
    ap.add_argument("--snapshots", type=int, nargs="*", default=[100, 300], help="fleet sizes for snapshot tarballs")
    ap.add_argument("--volatile", type=int, nargs="*", default=[300], help="fleet sizes for snapshot tarballs "
                    "whose nodes also differ in counters and readings (no two alike byte for byte)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--_measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._measure:
        print(json.dumps(measure(args._measure, args.jobs)))
        return 0
    work = Path(tempfile.mkdtemp(prefix="gnd-fleet-bench-"))
    try:
        rows = [run("json", n, args.jobs, work) for n in args.json]
        rows += [run("snapshot", n, args.jobs, work) for n in args.snapshots]
        rows += [run("volatile", n, args.jobs, work) for n in args.volatile]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{'path':<9} {'nodes':>6} {'jobs':>4} {'seconds':>8} {'ms/node':>8} {'CPU ms/node':>11} "
          f"{'of it parent':>12} {'parent MiB':>10} {'worker MiB':>10} {'outliers':>8}")
    for r in rows:
        print(f"{r['path']:<9} {r['count']:>6} {r['jobs']:>4} {r['seconds']:>8} {r['ms_per_node']:>8} "
              f"{r['cpu_ms_per_node']:>11} {r['parent_cpu_ms_per_node']:>12} {r['parent_peak_mib']:>10} "
              f"{r['worker_peak_mib']:>10} {r['outliers']:>8}")
    print(f"(machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
