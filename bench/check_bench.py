"""Benchmark `gnd check` and `gnd collect`.

Measures `gnd check` of this host (the 0.15 s target, at the median and in the slowest run) and of
the largest fixture: wall time including interpreter start and CPU time (user + system) of the
child (medians of several runs; best and slowest wall time of the host check),
peak memory (max RSS of the child), which top-level modules the check path imports, and the
import profile of the host check (``-X importtime``: the sum of the modules' own times, minimum
per module over the runs, the module count and the costliest modules; plus the time to load the
check modules, which ``-X importtime`` does not see as they are imported with ``importlib``);
then `gnd collect` time and tarball size on this host. Targets: host check in 0.15 s, no Textual,
WeasyPrint, Jinja2 or Rich on the check path, snapshot under 1 MB.

    python bench/check_bench.py [--runs N] [--fixture DIR] [--top N]
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
#: an installed package has its bytecode: use it even where PYTHONDONTWRITEBYTECODE is set
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}


def largest_fixture() -> Path:
    trees = [p for p in (ROOT / "fixtures").iterdir() if p.is_dir() and (p / "sys").is_dir()]
    return max(trees, key=lambda p: sum(1 for _ in p.rglob("*")))


def time_check(source: Path | None, runs: int) -> tuple[float, float, float, int, float]:
    """(median wall s, best wall s, median CPU s, peak RSS KiB, slowest wall s) of ``gnd check [source]``."""
    times, cpus = [], []
    peak = 0
    argv = [sys.executable, "-m", "doctor", "check", *([str(source)] if source else []), "--format", "json"]
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False, env=ENV)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode not in (0, 1):
            raise SystemExit(proc.stderr.decode())
        peak = max(peak, after.ru_maxrss)
    return statistics.median(times), min(times), statistics.median(cpus), peak, max(times)


def _sink() -> str:
    """A file to write a run's output to (-o refuses a device such as /dev/null)."""
    return os.path.join(tempfile.mkdtemp(prefix="gnd-bench-"), "out")


def import_profile(runs: int, top: int) -> dict[str, object]:
    """``-X importtime`` of the host check: own time per module (minimum over runs), summed."""
    own: dict[str, int] = {}
    for _ in range(runs):
        err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "check", "-o", _sink()],
                             capture_output=True, text=True, check=False, env=ENV).stderr
        for line in err.splitlines():
            fields = line.removeprefix("import time:").split("|")
            if line.startswith("import time:") and len(fields) == 3 and fields[0].strip().isdigit():
                name = fields[2].strip()
                own[name] = min(own.get(name, 1 << 62), int(fields[0]))
    code = ("import time, doctor.runner; from doctor.registry import load_checks; t = time.perf_counter(); "
            "load_checks(); print(time.perf_counter() - t)")
    loads = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                  env=ENV).stdout) for _ in range(runs)]
    costliest = sorted(own.items(), key=lambda kv: -kv[1])[:top]
    return {"own_ms_sum": round(sum(own.values()) / 1000, 1), "modules": len(own),
            "top_own_ms": {name: round(us / 1000, 2) for name, us in costliest},
            "load_checks_ms": round(min(loads) * 1000, 1)}


def imported_modules(fixture: Path) -> list[str]:
    code = (f"import sys; from doctor.cli import main; main(['check', {str(fixture)!r}, '--format', 'json', "
            f"'-o', {_sink()!r}]); print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))")
    out = subprocess.run([sys.executable, "-c", "import os, json; " + code], capture_output=True, text=True,
                         check=True, env=ENV)
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
    parser.add_argument("--top", type=int, default=15, help="costliest modules listed (default 15)")
    args = parser.parse_args()
    fixture = args.fixture or largest_fixture()
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "doctor"), str(ROOT / "checks"),
                    str(ROOT / "reports")], check=True, env=ENV)
    host_median, host_best, host_cpu, host_peak, host_worst = time_check(None, args.runs)
    median, best, cpu, peak_kib, _worst = time_check(fixture, args.runs)
    modules = imported_modules(fixture)
    heavy = [m for m in modules if m in FORBIDDEN]
    imports = import_profile(args.runs, args.top)
    collect_s, size = time_collect()
    report = {
        "host_check_wall_s_median": round(host_median, 3), "host_check_wall_s_best": round(host_best, 3),
        "host_check_wall_s_slowest": round(host_worst, 3),
        "host_check_cpu_s_median": round(host_cpu, 3), "host_check_peak_rss_mib": round(host_peak / 1024, 1),
        "host_check_imports": imports,
        "fixture": str(fixture.relative_to(ROOT)) if fixture.is_relative_to(ROOT) else str(fixture),
        "check_wall_s_median": round(median, 3), "check_wall_s_best": round(best, 3),
        "check_cpu_s_median": round(cpu, 3), "check_peak_rss_mib": round(peak_kib / 1024, 1),
        "check_imports_count": len(modules), "check_imports_heavy": heavy,
        "collect_wall_s": round(collect_s, 2), "collect_tarball_kib": round(size / 1024, 1),
        "targets": {"host_check_under_0.15s": host_median < 0.15, "host_check_slowest_under_0.15s": host_worst < 0.15,
                    "no_textual_weasyprint_jinja2_rich": not heavy,
                    "snapshot_under_1MB": size < 1024 * 1024},
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
