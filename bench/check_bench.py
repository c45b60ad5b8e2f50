"""Benchmark `gnd check` and `gnd collect`.

Measures, on the largest fixture: `gnd check` wall time including interpreter start (median of
several runs), peak memory (max RSS of the child), and which top-level modules the check path
imports; then `gnd collect` time and tarball size on this host. Targets: check under 0.5 s, no
Textual or WeasyPrint on the check path, snapshot under 1 MB.

    python bench/check_bench.py [--runs N] [--fixture DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = ("textual", "weasyprint", "jinja2", "rich", "pynvml")


def largest_fixture() -> Path:
    trees = [p for p in (ROOT / "fixtures").iterdir() if p.is_dir() and (p / "sys").is_dir()]
    return max(trees, key=lambda p: sum(1 for _ in p.rglob("*")))


def time_check(fixture: Path, runs: int) -> tuple[float, float, int]:
    times = []
    peak = 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "doctor", "check", str(fixture), "--format", "json"],
                              capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(proc.stderr.decode())
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return statistics.median(times), min(times), peak


def imported_modules(fixture: Path) -> list[str]:
    code = (f"import sys; from doctor.cli import main; main(['check', {str(fixture)!r}, '--format', 'json', "
            "'-o', os.devnull]); print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", "import os, json; " + code], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_collect() -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "snap.tar.gz")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "doctor", "collect", "-o", out], capture_output=True, check=True)
        return time.perf_counter() - start, os.path.getsize(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--fixture", type=Path)
    args = parser.parse_args()
    fixture = args.fixture or largest_fixture()
    # an installed package has its bytecode; compile it here even where PYTHONDONTWRITEBYTECODE is set
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "doctor"), str(ROOT / "checks"),
                    str(ROOT / "reports")], check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    median, best, peak_kib = time_check(fixture, args.runs)
    modules = imported_modules(fixture)
    heavy = [m for m in modules if m in FORBIDDEN]
    collect_s, size = time_collect()
    report = {
        "fixture": str(fixture.relative_to(ROOT)) if fixture.is_relative_to(ROOT) else str(fixture),
        "check_wall_s_median": round(median, 3), "check_wall_s_best": round(best, 3),
        "check_peak_rss_mib": round(peak_kib / 1024, 1),
        "check_imports_count": len(modules), "check_imports_heavy": heavy,
        "collect_wall_s": round(collect_s, 2), "collect_tarball_kib": round(size / 1024, 1),
        "targets": {"check_under_0.5s": median < 0.5, "no_textual_weasyprint": not heavy,
                    "snapshot_under_1MB": size < 1024 * 1024},
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
