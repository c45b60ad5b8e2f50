"""The one PCIe link verdict (doctor.derived.links): table-driven over numbers, ends and stored records."""

from __future__ import annotations

import pytest

from doctor.derived.links import (
    DEGRADED_SPEED,
    DEGRADED_WIDTH,
    DOWN,
    OK,
    POWER_SAVING,
    UNKNOWN,
    LinkEnd,
    LinkVerdict,
    judge_ends,
    judge_link,
    judge_record,
)
from doctor.facts.pcie_gen import generation, link_bandwidth

CASES = [
    # (cur speed, cur width, expected speed, expected width, idle) -> state, width_short, speed_short
    ((32.0, 16, 32.0, 16, False), (OK, False, False)),
    ((32.0, 8, 32.0, 16, False), (DEGRADED_WIDTH, True, False)),
    ((16.0, 8, 32.0, 16, False), (DEGRADED_WIDTH, True, True)),  # narrower and slower: width wins the name
    ((16.0, 8, 32.0, 16, True), (DEGRADED_WIDTH, True, True)),  # an idle GPU never excuses lost lanes
    ((16.0, 16, 32.0, 16, False), (DEGRADED_SPEED, False, True)),
    ((2.5, 16, 32.0, 16, True), (POWER_SAVING, False, True)),  # idle GPU parked at 2.5 GT/s
    ((2.5, 16, 32.0, 16, False), (DEGRADED_SPEED, False, True)),  # the same numbers on a busy GPU
    ((15.995, 16, 16.0, 16, False), (OK, False, False)),  # rounding in sysfs is not a downgrade
    ((16.0, 0, 32.0, 16, False), (DOWN, False, False)),  # width 0: link down / D3cold, never compared
    ((None, 0, None, None, False), (DOWN, False, False)),  # down wins over unknown numbers
    ((None, 16, 32.0, 16, False), (UNKNOWN, False, False)),
    ((32.0, 16, 32.0, None, False), (UNKNOWN, False, False)),
]


@pytest.mark.parametrize(("numbers", "want"), CASES)
def test_verdict_table(numbers: tuple, want: tuple) -> None:
    cs, cw, es, ew, idle = numbers
    v = judge_link(cs, cw, es, ew, idle=idle)
    assert (v.state, v.width_short, v.speed_short) == want
    assert v.degraded == (want[0] in (DEGRADED_WIDTH, DEGRADED_SPEED, DOWN))


def test_gen4_card_in_gen3_slot_is_ok_and_slot_limited() -> None:
    card = LinkEnd(cur_speed=8.0, cur_width=16, max_speed=16.0, max_width=16)
    slot = LinkEnd(cur_speed=8.0, cur_width=16, max_speed=8.0, max_width=16, port_type="Root Port")
    v = judge_ends(card, slot)
    assert (v.state, v.exp_speed, v.exp_width, v.slot_limited) == (OK, 8.0, 16, True)
    # the same card in a Gen4 slot trained at Gen3 is a real downgrade, and not slot-limited
    v4 = judge_ends(card, LinkEnd(8.0, 16, 16.0, 16, "Root Port"))
    assert (v4.state, v4.slot_limited) == (DEGRADED_SPEED, False)


def test_expected_is_the_lower_of_both_maxima_and_needs_the_childs() -> None:
    x8_card = LinkEnd(8.0, 8, 8.0, 8)
    assert judge_ends(x8_card, LinkEnd(None, None, 32.0, 16)).state == OK  # x8 card in an x16 slot: fine
    assert judge_ends(LinkEnd(8.0, 8, 8.0, 16), None).exp_width == 16  # no port above: the child's maximum
    assert judge_ends(LinkEnd(8.0, 8, None, None), LinkEnd(None, None, 32.0, 16)).state == UNKNOWN


def test_current_falls_back_to_a_downstream_or_root_port_only() -> None:
    child = LinkEnd(None, None, 32.0, 16)
    port = LinkEnd(32.0, 8, 32.0, 16, "Downstream Port")
    assert judge_ends(child, port).state == DEGRADED_WIDTH  # the port's values describe the link below it
    switch_up = LinkEnd(32.0, 8, 32.0, 16, "Upstream Port")
    assert judge_ends(child, switch_up).state == UNKNOWN  # an upstream port's values describe another link


def test_stored_verdict_is_read_not_rejudged() -> None:
    numbers = {"cur_speed": 32.0, "cur_width": 8, "max_speed": 32.0, "max_width": 16}
    parent = {"max_speed": 32.0, "max_width": 16, "port_type": "Downstream Port"}
    judged = judge_record(numbers, parent)
    assert judged is not None and judged.state == DEGRADED_WIDTH
    stored = {**numbers, "link": judged.to_dict()}
    assert judge_record(stored, parent) == judged
    # a result written by this version says "ok": the renderer believes it rather than comparing again
    assert judge_record({**numbers, "link": {**judged.to_dict(), "state": "ok"}}, parent).state == OK  # type: ignore[union-attr]
    assert judge_record({**numbers, "link": None}, parent) is None  # no link (root port, switch bus)


@pytest.mark.parametrize("bad", ["ok", {"state": "fine"}, {"state": None}, ["ok"], 3])
def test_malformed_stored_verdict_is_none(bad: object) -> None:
    assert LinkVerdict.from_dict(bad) is None
    assert judge_record({"cur_width": 16, "link": bad}, {"max_width": 16}) is None


def test_hostile_numbers_in_an_old_record_do_not_raise() -> None:
    rec = {"cur_speed": "fast", "cur_width": True, "max_speed": 1e400, "max_width": "16"}
    assert judge_record(rec, {"max_speed": None, "max_width": [1]}).state == UNKNOWN  # type: ignore[union-attr]


def test_switch_internal_bus_has_no_link() -> None:
    assert judge_record({"port_type": "Downstream Port", "cur_width": 16}, {"port_type": "Upstream Port"}) is None
    assert judge_record({"cur_width": 16}, None) is None


def test_generation_table() -> None:
    assert [generation(s) for s in (2.5, 5.0, 8.0, 16.0, 32.0, 64.0)] == [1, 2, 3, 4, 5, 6]
    assert generation(24.0) is None and generation(None) is None and generation(16) == 4
    assert link_bandwidth(32.0, 16) == pytest.approx(63.0, abs=0.1)
    assert link_bandwidth(None, 16) is None
