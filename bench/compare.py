#!/usr/bin/env python3
"""Speed figures of this tree beside a reference commit's, measured in one run.

Checks out the reference (``--against REF``; default: the newest tag, else the last commit of
``main`` before this branch, else ``HEAD~1``) into a temporary ``git worktree`` and measures both
trees with the same interpreter, interleaving the runs so that machine load hits both alike. For
each figure it prints the target, the reference ("previous"), this tree ("now") and now/previous:
a regression shows as a ratio above 1 whatever the machine's speed.

Figures (whole processes, bytecode compiled first as an installed package has it; wall times are
medians): ``gnd check`` of this host (wall, import time from ``-X importtime``, peak RSS),
``gnd check`` of the sick fixture, ``gnd report`` of the sick fixture to PDF (wall, peak RSS), and
``gnd fleet`` over generated saved-JSON results and snapshot tarballs (ms per node).

    python bench/compare.py                       # about two minutes on two idle cores
    python bench/compare.py --against v0.1.0 --runs 9 --fleet-json 1000 --fleet-snapshots 100
    python bench/compare.py --skip pdf,fleet      # start-up figures only
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SICK = "fixtures/hgx-h100-sick"
LAST_CPU = [0.0]  # user + system seconds of the last child timed()

#: figure -> (target, unit, lower is better); None: no target, tracked for regressions only
TARGETS: dict[str, tuple[float | None, str]] = {
    "check host wall": (0.15, "s"),
    "check host CPU": (None, "s"),
    "check host imports": (None, "ms"),
    "check host peak RSS": (None, "MiB"),
    "check sick wall": (None, "s"),
    "pdf sick wall": (2.0, "s"),  # issue #22: stock WeasyPrint, English and zh-CN
    "pdf sick CPU": (None, "s"),
    "pdf sick peak RSS": (100.0, "MiB"),
    "fleet json per node": (None, "ms"),
    "fleet snapshot per node": (6.0, "ms"),
    "fleet snapshot CPU/node": (6.0, "ms"),
    "fleet volatile per node": (6.0, "ms"),
    "fleet volatile CPU/node": (6.0, "ms"),
}


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def default_reference() -> str:
    """The newest tag; else where this branch left main; else the parent commit."""
    tags = git("tag", "--sort=-creatordate").splitlines()
    if tags:
        return tags[0]
    head = git("rev-parse", "HEAD")
    try:
        base = git("merge-base", "HEAD", "main")
    except subprocess.CalledProcessError:
        base = head
    return base if base != head else "HEAD~1"


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MiB), exit status and stderr of one child process (CPU seconds in ``LAST_CPU``)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        LAST_CPU[0] = usage.ru_utime + usage.ru_stime
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return wall, usage.ru_maxrss / 1024, proc.returncode, err.read().decode(errors="replace")


def import_ms(stderr: str) -> float:
    """Total import time of a ``-X importtime`` run: the sum over top-level imports (site included)."""
    total = 0
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            fields = line[len("import time:"):].split("|")
            if fields[1].strip().isdigit() and not fields[2].startswith("  "):
                total += int(fields[1])
    return total / 1000


class Tree:
    """One checkout under test: its root and the environment that makes ``-m doctor`` import from it."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.root = name, root
        self.env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": ""}
        subprocess.run([sys.executable, "-m", "compileall", "-q", "doctor", "checks", "reports"], cwd=root,
                       env=self.env, capture_output=True, check=False)

    def gnd(self, *args: str, importtime: bool = False) -> tuple[float, float, int, str]:
        flags = ["-X", "importtime"] if importtime else []
        return timed([sys.executable, *flags, "-m", "doctor", *args], self.root, self.env)


def interleaved(trees: list[Tree], runs: int, measure: Callable[[Tree], float | None]) -> dict[str, float | None]:
    """Median of ``runs`` measurements per tree, the trees taking turns (one warm-up each first)."""
    values: dict[str, list[float]] = {t.name: [] for t in trees}
    failed: set[str] = set()
    for t in trees:
        if measure(t) is None:
            failed.add(t.name)
    for _ in range(runs):
        for t in trees:
            if t.name in failed:
                continue
            value = measure(t)
            if value is None:
                failed.add(t.name)
            else:
                values[t.name].append(value)
    return {name: (statistics.median(v) if v and name not in failed else None) for name, v in values.items()}


def startup_figures(trees: list[Tree], runs: int) -> dict[str, dict[str, float | None]]:
    figures: dict[str, dict[str, float | None]] = {}
    rss: dict[str, list[float]] = {t.name: [] for t in trees}
    cpu: dict[str, list[float]] = {t.name: [] for t in trees}

    def host(t: Tree) -> float | None:
        wall, peak, rc, _ = t.gnd("check")
        rss[t.name].append(peak)
        cpu[t.name].append(LAST_CPU[0])
        return wall if rc in (0, 1) else None

    figures["check host wall"] = interleaved(trees, runs, host)
    figures["check host CPU"] = {n: statistics.median(v) if v else None for n, v in cpu.items()}
    figures["check host peak RSS"] = {n: max(v) if v else None for n, v in rss.items()}

    def imports(t: Tree) -> float | None:
        _, _, rc, err = t.gnd("check", importtime=True)
        return import_ms(err) if rc in (0, 1) else None

    figures["check host imports"] = interleaved(trees, runs, imports)

    def sick(t: Tree) -> float | None:
        wall, _, rc, _ = t.gnd("check", SICK)
        return wall if rc in (0, 1) else None

    figures["check sick wall"] = interleaved(trees, runs, sick)
    return figures


def pdf_figures(trees: list[Tree], runs: int, work: Path) -> dict[str, dict[str, float | None]]:
    rss: dict[str, list[float]] = {t.name: [] for t in trees}
    cpu: dict[str, list[float]] = {t.name: [] for t in trees}

    def pdf(t: Tree) -> float | None:
        out = work / f"{t.name}.pdf"
        wall, peak, rc, _ = t.gnd("report", str(t.root / SICK), "-o", str(out))
        if rc not in (0, 1) or not out.is_file():
            return None  # no WeasyPrint or Pango here
        rss[t.name].append(peak)
        cpu[t.name].append(LAST_CPU[0])
        return wall

    walls = interleaved(trees, runs, pdf)
    return {"pdf sick wall": walls, "pdf sick CPU": {n: statistics.median(v) if v else None for n, v in cpu.items()},
            "pdf sick peak RSS": {n: max(v) if v else None for n, v in rss.items()}}


def fleet_figures(trees: list[Tree], counts: dict[str, int], runs: int,
                  work: Path) -> dict[str, dict[str, float | None]]:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import fleet_bench  # generators of this tree; both trees analyse the same files

    figures: dict[str, dict[str, float | None]] = {}
    for kind, count in counts.items():
        if count <= 0:
            continue
        folder = work / f"fleet-{kind}"
        folder.mkdir()
        if kind == "json":
            fleet_bench.make_json_fleet(folder, count)
        else:
            fleet_bench.make_snapshot_fleet(folder, count, volatile=kind == "volatile")

        label = {"json": "json", "snapshots": "snapshot"}.get(kind, kind)
        cpu: dict[str, list[float]] = {t.name: [] for t in trees}

        def fleet(t: Tree, folder: Path = folder, count: int = count,
                  cpu: dict[str, list[float]] = cpu) -> float | None:
            wall, _, rc, _ = t.gnd("fleet", str(folder), "--format", "json", "-q", "--jobs", "2")
            cpu[t.name].append(1000 * LAST_CPU[0] / count)  # the process and its workers
            return 1000 * wall / count if rc in (0, 1) else None

        figures[f"fleet {label} per node"] = interleaved(trees, runs, fleet)
        if kind != "json":
            figures[f"fleet {label} CPU/node"] = {n: statistics.median(v) if v else None for n, v in cpu.items()}
        shutil.rmtree(folder)
    return figures


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if unit == "s" else f"{value:.1f}"


def table(figures: dict[str, dict[str, float | None]], ref: str) -> list[str]:
    lines = [f"{'figure':<24} {'unit':>4} {'target':>7} {'previous':>9} {'now':>9} {'now/prev':>9}  met"]
    for name, (target, unit) in TARGETS.items():
        if name not in figures:
            continue
        prev, now = figures[name].get("previous"), figures[name].get("now")
        ratio = f"{now / prev:.2f}" if now is not None and prev else "n/a"
        met = "-" if target is None or now is None else ("yes" if now <= target else "NO")
        lines.append(f"{name:<24} {unit:>4} {fmt(target, unit) if target else '-':>7} {fmt(prev, unit):>9} "
                     f"{fmt(now, unit):>9} {ratio:>9}  {met}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", metavar="REF", help="reference commit or tag (default: newest tag, else merge-base "
                    "with main, else HEAD~1)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per figure and tree (default 5)")
    ap.add_argument("--pdf-runs", type=int, default=3, help="measured PDF runs per tree (default 3)")
    ap.add_argument("--fleet-json", type=int, default=300, metavar="N", help="saved results in the fleet (default 300)")
    ap.add_argument("--fleet-snapshots", type=int, default=30, metavar="N", help="snapshot tarballs (default 30)")
    ap.add_argument("--fleet-volatile", type=int, default=30, metavar="N",
                    help="snapshot tarballs whose nodes also differ in counters and readings (default 30)")
    ap.add_argument("--fleet-runs", type=int, default=3, help="measured fleet runs per tree (default 3)")
    ap.add_argument("--skip", default="", help="comma-separated: pdf, fleet")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    ref = args.against or default_reference()
    commit = git("rev-parse", "--short", ref + "^{commit}")
    work = Path(tempfile.mkdtemp(prefix="gnd-bench-"))
    worktree = work / "previous"
    git("worktree", "add", "--detach", str(worktree), commit)
    try:
        trees = [Tree("previous", worktree), Tree("now", ROOT)]
        figures = startup_figures(trees, args.runs)
        if "pdf" not in skip:
            figures.update(pdf_figures(trees, args.pdf_runs, work))
        if "fleet" not in skip:
            figures.update(fleet_figures(trees, {"json": args.fleet_json, "snapshots": args.fleet_snapshots,
                                                       "volatile": args.fleet_volatile},
                                         args.fleet_runs, work))
    finally:
        git("worktree", "remove", "--force", str(worktree))
        shutil.rmtree(work, ignore_errors=True)
    dirty = " (+ uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    label = ref if ref != git("rev-parse", ref) else "main before this branch"
    print(f"previous = {label} ({commit}); now = {git('rev-parse', '--short', 'HEAD')}{dirty}; median of "
          f"{args.runs} runs ({args.pdf_runs} for PDF) after a warm-up; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("\n".join(table(figures, ref)))
    if args.json:
        print(json.dumps({"against": ref, "commit": commit, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
