"""SVG snapshots of the main screens at 80x24 and 160x48 (update with `pytest --snapshot-update`).

They draw a saved result of the sick fixture (``sick-result.json``, from ``gnd check --format json
fixtures/hgx-h100-sick``) so that a change to a check does not redraw every picture; regenerate
that file and the snapshots together when the look of a finding should change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from doctor.runner import Result

pytest.importorskip("pytest_textual_snapshot")

from textual.pilot import Pilot  # noqa: E402

from doctor.tui.app import DoctorApp  # noqa: E402

SAVED = Path(__file__).with_name("sick-result.json")


@pytest.fixture(scope="module")
def sick() -> Result:
    return Result.from_dict(json.loads(SAVED.read_text()))


async def _loaded(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("press", [(), ("t", *["down"] * 13)], ids=["findings", "topology"])
def test_main_screens(sick: Result, snap_compare: Callable[..., bool], size: tuple[int, int],
                      press: tuple[str, ...]) -> None:
    app = DoctorApp(lambda: sick)
    app.theme = "textual-dark"  # whatever COLORFGBG says where the tests run
    assert snap_compare(app, press=press, terminal_size=size, run_before=_loaded)
