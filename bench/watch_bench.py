#!/usr/bin/env python3
"""Watch benchmark: CPU per sample of ``gnd watch`` on an 8-GPU fixture, as a share of one core.

Samples the fixture folder (every GPU and NIC link and the hops above them, AER and port counters,
the recorded nvidia-smi output, the kernel log) ``--samples`` times back to back, with no sleeping,
and reports CPU milliseconds per sample and what that is at a 1 s interval (the target: at most
2 % of one core), plus the peak memory after 100 and after ``--samples`` samples (flat: summaries,
not samples, are kept).

    python bench/watch_bench.py [--fixture fixtures/hgx-h100-sick] [--samples 300]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure(fixture: str, samples: int) -> dict[str, float]:
    from doctor.watch import run_watch

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    run_watch(fixture, duration=2, interval=1, clock=lambda: now[0], sleep=sleep)  # imports, caches
    cpu = time.process_time()
    run_watch(fixture, duration=samples - 1, interval=1, clock=lambda: now[0], sleep=sleep)
    cpu = time.process_time() - cpu
    tracemalloc.start()  # memory on a second run: tracing would slow the timed one several times
    run_watch(fixture, duration=samples - 1, interval=1, clock=lambda: now[0], sleep=sleep)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per_sample = cpu / samples * 1000
    return {"samples": samples, "cpu_ms_per_sample": round(per_sample, 2),
            "core_share_at_1s_pct": round(per_sample / 10, 2), "traced_peak_mib": round(peak / 2**20, 2),
            "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixture", default=str(ROOT / "fixtures" / "hgx-h100-sick"))
    parser.add_argument("--samples", type=int, default=300)
    args = parser.parse_args()
    short = measure(args.fixture, 100)
    long = measure(args.fixture, args.samples)
    print(json.dumps({"100": short, str(args.samples): long}))
    print(f"{long['cpu_ms_per_sample']} ms CPU per sample = {long['core_share_at_1s_pct']} % of one core at a 1 s "
          f"interval; traced peak {short['traced_peak_mib']} MiB at 100 samples, {long['traced_peak_mib']} MiB at "
          f"{args.samples}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
