"""The format registry: what each command offers, and that `gnd check` offers no heavy renderer."""

from __future__ import annotations

import pytest

from doctor.errors import DoctorError
from reports.formats import FORMATS, OFFERED, from_suffix

KINDS = {"check": "Result", "report": "Result", "tui": "Result", "watch": "Result", "diff": "Diff", "fleet": "FleetReport"}


def test_every_offered_format_renders_the_commands_view() -> None:
    for command, names in OFFERED.items():
        for name in names:
            assert KINDS[command] in dict(FORMATS[name].renderers), (command, name)


def test_check_needs_no_heavy_import() -> None:
    assert not any(FORMATS[name].heavy for name in OFFERED["check"])


def test_report_format_from_suffix() -> None:
    assert [from_suffix("report", p) for p in ("a.HTML", "b.htm", "c.pdf", "d.markdown", "e.json")] == \
        ["html", "html", "pdf", "md", "json"]
    with pytest.raises(DoctorError, match=r"use \.html, \.pdf, \.md or \.json, or --format"):
        from_suffix("report", "x.txt")
