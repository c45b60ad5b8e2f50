"""The GPU fact parses ``nvidia-smi -q -x`` without its second-to-second readings.

``doctor.facts.gpu.parse_xml`` leaves out temperatures, power draw, fan, memory in use and the like
before parsing, so a fleet worker parses one configuration's output once however its readings
differ. That is only sound while the parser reads none of them: every recorded output here must
parse to the same GPUs either way, and a value the parser does read must still count.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doctor.facts.gpu import parse_xml
from doctor.parsers.nvidia_smi import parse_nvidia_smi_xml

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = sorted([*ROOT.glob("fixtures/*/commands/nvidia-smi_-q_-x"),
                  *ROOT.glob("tests/realworld/cases/*/commands/nvidia-smi_-q_-x")])
HEALTHY = ROOT / "fixtures/hgx-h100-healthy/commands/nvidia-smi_-q_-x"


def _relabel(text: str, tag: str, value: str) -> str:
    return re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", text)


def test_outputs_are_recorded() -> None:
    assert len(OUTPUTS) >= 20 and HEALTHY in OUTPUTS


@pytest.mark.parametrize("path", OUTPUTS, ids=lambda p: p.parent.parent.name)
def test_cleared_readings_change_nothing_the_parser_reads(path: Path) -> None:
    text = path.read_text(errors="replace")
    plain, cleared = parse_nvidia_smi_xml(text), parse_xml(text)
    assert cleared.gpus == plain.gpus
    assert (cleared.driver_version, cleared.cuda_version) == (plain.driver_version, plain.cuda_version)


def test_other_readings_give_the_very_same_report() -> None:
    text = HEALTHY.read_text()
    first = parse_xml(text)
    assert first.gpus  # the fixture has GPUs, so the comparison below means something
    warmer = _relabel(_relabel(_relabel(text, "gpu_temp", "71 C"), "power_draw", "612.25 W"), "used", "80123 MiB")
    assert warmer != text
    assert parse_xml(warmer) is first


@pytest.mark.parametrize(("tag", "value", "field", "expected"), [
    ("replay_counter", "4000", "replays_since_reset", 4000),
    ("gpu_util", "97 %", "util_gpu", 97.0),
    ("performance_state", "P8", "pstate", "P8"),
])
def test_values_the_parser_reads_still_count(tag: str, value: str, field: str, expected: object) -> None:
    text = HEALTHY.read_text()
    changed = parse_xml(_relabel(text, tag, value))
    assert changed is not parse_xml(text)
    assert {getattr(g, field) for g in changed.gpus} == {expected}
    assert changed.gpus == parse_nvidia_smi_xml(_relabel(text, tag, value)).gpus


@pytest.mark.parametrize("content", ["&bogus;", "1<b/>2", "<![CDATA[1]]>", "]]>", "\x01"])
def test_a_reading_that_is_not_plain_text_is_left_for_the_parser(content: str) -> None:
    text = HEALTHY.read_text().replace("<gpu_temp>", f"<gpu_temp>{content}", 1)
    assert parse_xml(text).gpus == parse_nvidia_smi_xml(text).gpus
