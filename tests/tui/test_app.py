"""The TUI driven through Textual's pilot on the sick 8-GPU fixture: what an engineer sees and does."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from doctor.findings import CRITICAL, HIGH, PASS, Evidence, Finding, Fix, Impact
from doctor.runner import Result
from tests import helpers

pytest.importorskip("textual")

from textual.pilot import Pilot  # noqa: E402
from textual.widgets import Static  # noqa: E402

from doctor.tui.app import TOPOLOGY, DoctorApp  # noqa: E402
from doctor.tui.model import CATEGORY_FILTERS, fix_script  # noqa: E402
from doctor.tui.screens import DiffScreen, ExportScreen, FindingScreen, HelpScreen  # noqa: E402
from doctor.tui.topology import BAD  # noqa: E402
from reports import formats as exporter  # noqa: E402

SIZE = (80, 24)


@pytest.fixture(scope="module")
def sick() -> Result:
    if not helpers.SICK.is_dir():
        pytest.skip("fixtures/hgx-h100-sick is not generated")
    result = helpers.run(helpers.facts(base=helpers.SICK))
    # a stable path in the header, wherever the checkout lives (snapshots compare pixels)
    result.source["path"] = "fixtures/hgx-h100-sick"
    return result


def drive(app: DoctorApp, steps: Callable[[Pilot[int], DoctorApp], Awaitable[None]],
          size: tuple[int, int] = SIZE) -> None:
    """Run ``app`` headless, wait for the first run of the checks, then play ``steps``."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            await steps(pilot, app)

    asyncio.run(main())


async def settle(pilot: Pilot[int]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def plain(app: DoctorApp, ident: str) -> str:
    widget = app.screen_stack[0].query_one(f"#{ident}", Static)
    return str(widget.render())


def rows(app: DoctorApp) -> list[Finding]:
    return list(app.shown)


def test_worst_finding_is_first_with_its_evidence_and_fix(sick: Result) -> None:
    def check(pilot: Pilot[int], app: DoctorApp) -> Awaitable[None]:
        worst = sick.findings[0]
        assert worst.severity in (CRITICAL, HIGH)
        assert rows(app)[0] == worst
        header = plain(app, "header")
        assert str(sick.source["hostname"]) in header
        n_high = sum(f.severity == HIGH for f in sick.findings)
        assert f"{n_high} high" in header
        detail = plain(app, "detail")
        assert worst.title.split()[0] in detail
        assert worst.evidence and worst.evidence[0].source in detail
        assert worst.fix.runtime and worst.fix.runtime[0].splitlines()[0] in detail
        assert PASS not in {f.severity for f in rows(app)}  # passes hidden by default
        return pilot.pause()

    drive(DoctorApp(lambda: sick), check)


def test_selection_moves_the_detail_pane_and_enter_opens_it_full_screen(sick: Result) -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        await pilot.press("down", "down")
        assert app.current == rows(app)[2]
        detail = plain(app, "detail")
        assert rows(app)[2].subject in detail
        await pilot.press("enter")
        assert isinstance(app.screen, FindingScreen) and app.screen.finding == rows(app)[2]
        await pilot.press("escape")
        assert not isinstance(app.screen, FindingScreen)

    drive(DoctorApp(lambda: sick), steps)


def test_severity_and_area_filters_change_the_rows(sick: Result) -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        everything = rows(app)
        await pilot.press("s")  # critical only
        assert rows(app) and {f.severity for f in rows(app)} == {CRITICAL}
        await pilot.press("s")  # high only
        assert rows(app) and {f.severity for f in rows(app)} == {HIGH}
        assert "severity: high" in plain(app, "filters")
        while app.severity_filter:
            await pilot.press("s")
        assert rows(app) == everything
        labels = [label for label, _ in CATEGORY_FILTERS]
        for _ in range(labels.index("PCIe")):
            await pilot.press("f")
        pcie = rows(app)
        assert pcie and {f.category for f in pcie} <= {"pcie", "iommu"}
        assert len(pcie) < len(everything)
        assert "area: PCIe" in plain(app, "filters")
        assert any("0000:9c:00.0" in f.subject for f in pcie)  # GPU 5's degraded link
        assert pcie[0].subject.split()[0] in plain(app, "detail")

    drive(DoctorApp(lambda: sick), steps)


def test_c_copies_the_fix_commands_and_says_so(sick: Result) -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        await pilot.press("c")
        worst = sick.findings[0]
        assert app.clipboard == fix_script(worst)
        for command in worst.fix.runtime:
            assert command in app.clipboard
        title, message = app.notices[-1]
        assert title == "Fix copied to clipboard" and worst.subject in message
        # the full-screen view copies too
        await pilot.press("down", "enter", "c")
        assert app.clipboard == fix_script(rows(app)[1]) or not rows(app)[1].fix.runtime

    drive(DoctorApp(lambda: sick), steps)


def test_rerun_shows_what_was_fixed_and_what_is_new(sick: Result) -> None:
    worst, second = sick.findings[0], sick.findings[1]
    appeared = Finding(severity=HIGH, subject="GPU 9", title="a new problem", check="pcie.new", category="pcie")
    after = dataclasses.replace(sick, findings=[appeared, *sick.findings[1:]])
    runs = iter([sick, after])

    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        assert app.diff is None
        await pilot.press("r")
        await settle(pilot)
        assert isinstance(app.screen, DiffScreen)
        assert app.diff is not None
        assert [f.subject for f in app.diff.fixed] == [worst.subject]
        assert [f.subject for f in app.diff.new] == ["GPU 9"]
        assert second in app.diff.unchanged
        assert "1 fixed, 1 new" in str(app.screen.query_one(Static).render())
        await pilot.press("escape")
        assert rows(app)[0].subject == "GPU 9"
        assert "re-run: 1 fixed, 1 new" in plain(app, "header")

    drive(DoctorApp(lambda: next(runs)), steps)


def test_a_failed_run_is_reported_and_the_app_stays_up() -> None:
    def boom() -> Result:
        raise RuntimeError("snapshot vanished")

    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        assert app.result is None and not app.running
        assert any("snapshot vanished" in m for _, m in app.notices)
        await pilot.press("c", "s", "t", "e")  # nothing to act on: no crash
        assert app.is_running

    drive(DoctorApp(boom), steps)


def test_e_exports_markdown(sick: Result, tmp_path: Path) -> None:
    if not exporter.available("tui")["md"]:
        pytest.skip("reports.markdown not available")

    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        await pilot.press("e")
        assert isinstance(app.screen, ExportScreen)
        app.screen.query_one("#export-path").value = str(tmp_path / "node")  # type: ignore[attr-defined]
        await pilot.click("#export-md")
        await settle(pilot)
        assert app.exported == [str(tmp_path / "node.md")]
        text = (tmp_path / "node.md").read_text()
        assert sick.findings[0].check in text
        assert app.notices[-1][0] == "Exported"

    drive(DoctorApp(lambda: sick, exporter=exporter), steps)


def test_topology_highlights_bad_links_and_shows_a_devices_findings(sick: Result) -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        await pilot.press("t")
        assert app.view == TOPOLOGY
        tree = app.topo_tree
        nodes: list[Any] = []
        stack = list(tree.root.children)
        while stack:
            node = stack.pop(0)
            nodes.append(node)
            stack[0:0] = list(node.children)
        gpu5 = next(n for n in nodes if n.data and "0000:9c:00.0" in n.data.names)
        assert gpu5.data.link == BAD and "degraded" in str(gpu5.label)
        healthy = next(n for n in nodes if n.data and "0000:18:00.0" in n.data.names)
        assert healthy.data.link != BAD
        tree.move_cursor(gpu5)
        await pilot.pause()
        pane = plain(app, "device")
        link_finding = next(f for f in sick.findings if f.check.startswith("pcie") and "0000:9c:00.0" in f.subject)
        assert link_finding.title in pane
        await pilot.press("enter")  # jump to its first finding
        assert app.view != TOPOLOGY
        assert app.current is not None and "0000:9c:00.0" in app.current.subject

    drive(DoctorApp(lambda: sick), steps)


def test_help_and_quit(sick: Result) -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("s")  # main-screen keys do nothing under a window
        assert app.severity_filter == 0
        await pilot.press("escape", "q")
        await pilot.pause()
        assert not app.is_running

    drive(DoctorApp(lambda: sick), steps)


HOSTILE = "[bold]x[/] [link=http://e]y[/link] \x1b[31m"


def hostile_result() -> Result:
    f = Finding(severity=HIGH, subject=HOSTILE, title="[/] unbalanced [red]close", detail="[b]not bold",
                evidence=(Evidence("proc/1/[cmdline]", HOSTILE),), expected="[i]", observed="[/i]",
                impact=Impact(50, "[dim]"), fix=Fix.from_text(runtime=(f"echo {HOSTILE!r}",)), check="runtime.x",
                category="runtime", rank=1)
    inventory = {"numa": [{"id": 0, "cpulist": "0-3"}], "gpus": [], "nics": [],
                 "topology": [{"address": "0000:01:00.0", "kind": "gpu", "parent": None, "port_type": "Endpoint",
                               "name": "[bold]GPU[/]", "numa_node": 0}]}
    return Result(source={"kind": "snapshot", "path": "[red]p", "hostname": "[/]"}, checks=[], findings=[f],
                  inventory=inventory)


def test_host_data_is_never_read_as_markup() -> None:
    async def steps(pilot: Pilot[int], app: DoctorApp) -> None:
        assert "[bold]x[/]" in plain(app, "detail")
        assert "[/] unbalanced [red]close" in plain(app, "detail")
        assert "\x1b" not in plain(app, "detail")
        row = app.table.get_row_at(0)
        assert any("[bold]x[/]" in str(cell) for cell in row)
        await pilot.press("c", "t", "down", "enter", "e")
        await pilot.pause()
        assert app.is_running

    drive(DoctorApp(hostile_result), steps)


@pytest.fixture(autouse=True)
def no_clipboard_tools(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(var, raising=False)
    yield
