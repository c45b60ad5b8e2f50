"""``gnd watch`` over a directory source whose files the test rewrites between samples.

Each scenario starts from the healthy HGX H100 fixture (8 idle GPUs whose links rest at 2.5 GT/s,
as an idle H100's do) and changes what a real node would change over time: a link that retrains
to x8 and back, a link that drops to 2.5 GT/s while its GPU is busy, the idle/busy power
management of a healthy GPU, counters that grow, a burst of Xid lines.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from doctor.facts.watch import PATH, RECENT, from_dict
from doctor.pipeline import analyse
from doctor.runner import Result
from doctor.watch import run_watch

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "hgx-h100-healthy"
GPU = "0000:18:00.0"  # GPU 0 of the fixture
SMI = "commands/nvidia-smi_-q_-x"
IB = "sys/class/infiniband/mlx5_0/ports/1"


class Node:
    """The fixture copied to a folder, with setters for what changes between samples."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def link(self, address: str, speed: float, width: int) -> None:
        base = f"sys/bus/pci/devices/{address}"
        self.write(f"{base}/current_link_speed", f"{speed:.1f} GT/s PCIe\n")
        self.write(f"{base}/current_link_width", f"{width}\n")

    def _gpu_block(self, address: str, edit: Callable[[str], str]) -> None:
        path = self.root / SMI
        text = path.read_text()
        bus = "0000" + address.upper()
        start = text.index(f"<pci_bus_id>{bus}</pci_bus_id>")
        start = text.rindex("<gpu id=", 0, start)
        end = text.index("</gpu>", start)
        path.write_text(text[:start] + edit(text[start:end]) + text[end:])

    def busy(self, address: str, busy: bool, reasons: tuple[str, ...] = ()) -> None:
        def edit(block: str) -> str:
            block = re.sub(r"<gpu_util>[^<]*</gpu_util>", f"<gpu_util>{95 if busy else 0} %</gpu_util>", block)
            active = set(reasons) | ({"gpu_idle"} if not busy else set())
            return re.sub(r"<clocks_event_reason_(\w+)>[^<]*</clocks_event_reason_\1>",
                          lambda m: f"<clocks_event_reason_{m.group(1)}>{'Active' if m.group(1) in active else 'Not Active'}"
                                    f"</clocks_event_reason_{m.group(1)}>", block)
        self._gpu_block(address, edit)

    def replays(self, address: str, n: int) -> None:
        self._gpu_block(address, lambda b: re.sub(r"<replay_counter>[^<]*</replay_counter>",
                                                  f"<replay_counter>{n}</replay_counter>", b))

    def dmesg(self, lines: list[str]) -> None:
        path = self.root / "commands" / "dmesg"
        old = path.read_text() if path.exists() else ""
        path.write_text(old + "".join(line + "\n" for line in lines))


@pytest.fixture
def node(tmp_path: Path) -> Node:
    shutil.copytree(FIXTURE, tmp_path / "node", symlinks=True)
    n = Node(tmp_path / "node")
    n.dmesg(["[    1.000000] Linux version 6.8.0-45-generic"])
    return n


def watch(node: Node, steps: int, step: Callable[[int], None], interval: float = 1.0) -> Result:
    """Sample ``steps + 1`` times, calling ``step(i)`` to rewrite the files before sample ``i`` (1..steps)."""
    now = [0.0]
    done = [0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        done[0] += 1
        step(done[0])

    record = run_watch(str(node.root), duration=steps * interval, interval=interval, clock=lambda: now[0], sleep=sleep)
    assert record.samples == steps + 1
    return analyse(str(node.root), only=["watch"], watch=record)


def of(result: Result, check: str) -> list[tuple[str, str, str]]:
    return [(f.severity, f.subject, f.title) for f in result.findings if f.check == check]


def test_flapping_width_is_a_high_finding_with_its_rate(node: Node) -> None:
    def step(i: int) -> None:
        node.link(GPU, 2.5, 8 if i % 2 else 16)

    found = of(watch(node, 10, step), "watch.link_changes")
    assert [(s, subj) for s, subj, _ in found] == [("high", f"GPU 0 ({GPU})")]
    assert "width changed 10 times" in found[0][2] and "60.0 transitions/min" in found[0][2]


def test_speed_drop_while_busy_is_high(node: Node) -> None:
    node.busy(GPU, True)
    node.link(GPU, 32.0, 16)

    def step(i: int) -> None:
        node.link(GPU, 2.5 if 3 <= i <= 6 else 32.0, 16)

    result = watch(node, 10, step)
    found = of(result, "watch.link_changes")
    assert [s for s, _, _ in found] == ["high"], found
    assert "ran below 32 GT/s while busy for 4 s" in found[0][2]
    finding = next(f for f in result.findings if f.check == "watch.link_changes")
    assert any("2.5 GT/s x16 busy" in e.value for e in finding.evidence)  # the series is the evidence


def test_idle_power_management_is_at_most_info(node: Node) -> None:
    def step(i: int) -> None:  # busy at full speed, idle at 2.5 GT/s, back and forth
        busy = i % 4 < 2
        node.busy(GPU, busy)
        node.link(GPU, 32.0 if busy else 2.5, 16)

    result = watch(node, 12, step)
    found = of(result, "watch.link_changes")
    assert {s for s, _, _ in found} == {"info", "pass"}, found  # nothing above info
    assert [t for s, _, t in found if s == "info"] == [
        "link speed follows the GPU's idle and busy periods (7 changes, full speed while busy)"]


def test_steady_links_pass(node: Node) -> None:
    result = watch(node, 3, lambda i: None)
    assert [s for s, _, _ in of(result, "watch.link_changes")] == ["pass"]


def test_growing_replay_and_port_counters_are_reported_with_their_rate(node: Node) -> None:
    node.write(f"{IB}/counters/symbol_error", "0\n")
    node.write(f"{IB}/counters/link_downed", "3\n")  # a total from before the watch: not growth

    def step(i: int) -> None:
        node.replays(GPU, 50 * i)
        node.write(f"{IB}/counters/symbol_error", f"{7 * i}\n")

    found = of(watch(node, 6, step), "watch.counter_growth")
    titles = {subj: (s, t) for s, subj, t in found}
    assert titles[f"GPU 0 ({GPU})"] == ("medium", "replay grew by 300 in 6 s (3000.0/min)")
    assert titles["mlx5_0 port 1"] == ("medium", "symbol_error grew by 42 in 6 s (420.0/min)")
    assert not any("link_downed" in t for _, _, t in found)


def test_counters_that_hold_pass(node: Node) -> None:
    node.write(f"{IB}/counters/symbol_error", "12\n")
    assert [s for s, _, _ in of(watch(node, 3, lambda i: None), "watch.counter_growth")] == ["pass"]


def test_a_burst_of_xid_lines_is_one_finding_per_gpu_and_code(node: Node) -> None:
    node.dmesg([f"[  100.{k:06d}] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus." for k in range(3)])

    def step(i: int) -> None:
        if i in (2, 3):
            node.dmesg([f"[  20{i}.{k:06d}] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus."
                        for k in range(50)])

    found = of(watch(node, 5, step), "watch.kernel_events")
    assert [(s, subj) for s, subj, _ in found] == [("high", f"GPU 0 ({GPU})")]
    assert found[0][2].startswith("100 new Xid lines during the watch")  # the 3 lines from before are not new


def test_throttling_under_load_but_not_at_idle(node: Node) -> None:
    def step(i: int) -> None:
        busy = i >= 3
        node.busy(GPU, busy, ("hw_thermal_slowdown",) if busy else ("sw_thermal_slowdown",))

    result = watch(node, 6, step)
    found = of(result, "watch.throttle_under_load")
    assert [(s, subj) for s, subj, _ in found] == [("high", f"GPU 0 ({GPU})")]
    assert "hw_thermal_slowdown in 4 of 4 busy samples" in found[0][2]
    finding = next(f for f in result.findings if f.check == "watch.throttle_under_load")
    temp = re.search(r"<gpu_temp>(\d+) C</gpu_temp>", (node.root / SMI).read_text()).group(1)  # type: ignore[union-attr]
    assert f"Hottest reading: {temp} C." in finding.detail  # the temperature is sampled with the clocks


def test_idle_gpus_leave_throttling_unknown_not_pass(node: Node) -> None:
    assert [s for s, _, _ in of(watch(node, 2, lambda i: None), "watch.throttle_under_load")] == ["unknown"]


def test_memory_stays_constant_in_the_duration(node: Node) -> None:
    def step(i: int) -> None:
        node.link(GPU, 2.5, 8 if i % 2 else 16)

    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds
        step(int(now[0]))

    record = run_watch(str(node.root), duration=60, interval=1, clock=lambda: now[0], sleep=sleep)
    link = next(s for s in record.links if s.address == GPU)
    assert link.samples == 61 and link.width_changes == 60
    assert all(len(s.recent) <= RECENT for s in (*record.links, *record.counters, *record.clocks))
    assert len(json.dumps(record.to_dict())) < 200_000


def test_a_stored_record_reads_back_and_a_corrupt_one_is_unknown(node: Node, tmp_path: Path) -> None:
    def step(i: int) -> None:
        node.link(GPU, 2.5, 8 if i % 2 else 16)

    now = [0.0]
    record = run_watch(str(node.root), duration=4, interval=1, clock=lambda: now[0],
                       sleep=lambda s: (now.__setitem__(0, now[0] + s), step(int(now[0]))))
    back = from_dict(json.loads(json.dumps(record.to_dict())), record.origin)
    assert back == record
    node.write(PATH, json.dumps(record.to_dict()))
    offline = analyse(str(node.root), only=["watch"])  # days later: the snapshot holds the samples
    assert of(offline, "watch.link_changes") == of(analyse(str(node.root), only=["watch"], watch=record),
                                                    "watch.link_changes")
    bad = record.to_dict()
    bad["links"][0]["width_changes"] = -5
    node.write(PATH, json.dumps(bad))
    assert {s for s, _, _ in of(analyse(str(node.root), only=["watch"]), "watch.link_changes")} == {"unknown"}


def test_one_snapshot_runs_no_watch_check(node: Node) -> None:
    assert not [f for f in analyse(str(node.root)).findings if f.check.startswith("watch.")]


def gnd(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, timeout=120)


def test_live_host_without_gpus_runs_and_says_what_it_could_not_sample() -> None:
    done = gnd("watch", "--duration", "0.2", "--interval", "0.1", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    result = json.loads(done.stdout)
    watched = {c["id"] for c in result["checks"]}
    assert {"watch.link_changes", "watch.counter_growth", "watch.kernel_events"} <= watched
    text = gnd("watch", "--duration", "0.2", "--interval", "0.1").stdout
    assert "watch." in text


@pytest.mark.parametrize("args", [("--duration", "90000"), ("--interval", "0"), ("--duration", "-1")])
def test_bounds_are_refused_in_one_line(args: tuple[str, str]) -> None:
    done = gnd("watch", str(FIXTURE), *args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_collect_watch_stores_the_samples_that_check_judges_offline(tmp_path: Path) -> None:
    out = tmp_path / "node.tar.gz"
    done = gnd("collect", "--watch", "0.3", "--watch-interval", "0.1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    offline = json.loads(gnd("check", str(out), "--format", "json").stdout)
    assert {"watch.link_changes", "watch.counter_growth", "watch.kernel_events"} <= {c["id"] for c in offline["checks"]}
    live = json.loads(gnd("check", "--format", "json").stdout)
    assert not any(c["id"].startswith("watch.") for c in live["checks"])  # one instant: nothing over time


def test_the_tui_shows_links_and_counters_live_and_q_stops_with_a_record(node: Node) -> None:
    import asyncio

    from doctor.tui.watch_view import WatchApp

    app = WatchApp(str(node.root), duration=30, interval=0.1)

    async def main() -> None:
        async with app.run_test() as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if app.query_one("#links", DataTable).row_count:
                    break
            assert app.query_one("#links", DataTable).row_count >= 8  # 8 GPUs and the hops above them
            await pilot.press("q")
            for _ in range(200):
                await pilot.pause(0.05)
                if app.return_value is not None:
                    break

    asyncio.run(main())
    record = app.return_value
    assert record is not None and 1 <= record.samples < 300  # stopped long before 30 s


def test_the_watch_says_what_it_could_not_sample(node: Node) -> None:
    (node.root / SMI).unlink()  # no nvidia-smi recording: GPU activity cannot be sampled
    shutil.rmtree(node.root / "sys/class/infiniband")
    result = watch(node, 2, lambda i: None)
    coverage = [f for f in result.findings if f.check == "watch.coverage"]
    assert len(coverage) == 1 and coverage[0].severity == "info"
    assert "not sampled: GPU activity, clocks and replays, InfiniBand/RoCE port counters" in coverage[0].title
    assert [s for s, _, _ in of(result, "watch.throttle_under_load")] == ["unknown"]  # GPUs there, not sampled


@pytest.mark.parametrize("fmt", ["text", "json", "prometheus", "html", "md"])
def test_watch_findings_reach_every_renderer(node: Node, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"watch.{fmt}"
    done = gnd("watch", str(node.root), "--duration", "0.2", "--interval", "0.1", "--format", fmt, "-o", str(out))
    assert done.returncode in (0, 1), done.stderr
    assert "watch.coverage" in out.read_text() or "watch_coverage" in out.read_text()
