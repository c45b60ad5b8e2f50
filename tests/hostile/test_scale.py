"""Cost linear in the input: a node with 20,000 PCI functions, a 16 MiB kernel log and 10,000
processes (inside every read cap) takes each command within 10 s of CPU and 1 GiB.

Each command runs in its own interpreter; its CPU time (user + system) and peak memory come from
``resource.getrusage(RUSAGE_CHILDREN)`` measured there, so that other load on the machine (wall
time) does not decide the verdict. The tree is generated once per session (tests/hostile/scale_tree.py).
A check that compares every device with every other (``pcie.acs_redirect`` was 53 s at 8,000
devices; the nearest NIC of every GPU 50 s here) fails this at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import SICK
from tests.hostile.scale_tree import build

#: the budget of each command on an idle machine; CPU time itself grows when other processes share
#: the cores (caches, page-cache misses: 13 s idle-ish, 19 s at a load of 5 per core here), so the
#: budget follows the load, at most four-fold: a quadratic check (127 s before) fails either way
CPU_S = 10.0 * min(4.0, max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1)))
MEMORY_BYTES = 1 << 30
_MEASURE = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stdout.write("%d %f %d\\n" % (p.returncode, r.ru_utime + r.ru_stime, r.ru_maxrss * 1024))
sys.stderr.write(p.stderr.decode("utf-8", "replace")[-2000:])
"""
#: about 3 minutes on an idle 2-core machine (the tree alone is 200,000 files): run with GND_SCALE=1
pytestmark = [pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated"),
              pytest.mark.skipif(os.environ.get("GND_SCALE") != "1", reason="large-node cost test: set GND_SCALE=1")]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("scale")
    yield build(root / "node", SICK)


def gnd(*args: str) -> tuple[int, float, int]:
    """Exit status, CPU seconds and peak resident bytes of ``gnd ARGS`` in a fresh interpreter."""
    cmd = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "doctor", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    code, cpu, rss = p.stdout.split()
    assert "Traceback" not in p.stderr, p.stderr
    return int(code), float(cpu), int(rss)


def within(args: tuple[str, ...], codes: tuple[int, ...] = (0, 1)) -> None:
    code, cpu, rss = gnd(*args)
    print(f"gnd {' '.join(a.rsplit('/', 1)[-1] for a in args)}: {cpu:.1f} s CPU, {rss >> 20} MiB")
    assert code in codes, (args, code)
    assert cpu <= CPU_S, f"gnd {args[0]} took {cpu:.1f} s of CPU on the large node"
    assert rss <= MEMORY_BYTES, f"gnd {args[0]} used {rss >> 20} MiB on the large node"


@pytest.fixture(scope="module")
def result(big: Path) -> Path:
    out = big.parent / "result.json"
    within(("check", str(big), "--format", "json", "-o", str(out)))
    return out


def test_check_json_is_linear_and_groups_findings(result: Path) -> None:
    data = json.loads(result.read_text())
    assert len(data["findings"]) < 2000  # one per cause, not one per line or per device
    xid = [f for f in data["findings"] if f["check"] == "gpu.xid_errors"]
    assert 0 < len(xid) <= 16, len(xid)


def test_check_text(big: Path) -> None:
    within(("check", str(big), "-o", str(big.parent / "result.txt")))


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_from_the_result(result: Path, fmt: str) -> None:
    within(("report", "--from-json", str(result), "--format", fmt, "-o", str(result.with_suffix("." + fmt))), (0,))


def test_diff_of_two_results(result: Path) -> None:
    other = result.with_name("result2.json")
    other.write_bytes(result.read_bytes())
    within(("diff", str(result), str(other), "--format", "json", "-o", str(result.with_name("diff.json"))))


def test_fleet_of_two_copies(result: Path) -> None:
    folder = result.parent / "fleet"
    folder.mkdir()
    for name in ("a.json", "b.json"):
        (folder / name).write_bytes(result.read_bytes())
    within(("fleet", str(folder), "-j", "1", "--format", "json", "-o", str(result.parent / "fleet.json")))


@pytest.mark.xfail(reason="collect walks each path's folders per file: linear, but ~2.5 ms a file here "
                          "(about 50 s of CPU for this tree); not yet within budget", strict=False)
def test_collect_of_the_tree(big: Path) -> None:
    within(("collect", "--root", str(big), "-o", str(big.parent / "snap.tar.gz")), (0,))

