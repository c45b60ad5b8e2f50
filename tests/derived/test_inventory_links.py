"""The inventory stores each link's verdict; the TUI and SVG topology draw it, old results judge the same way."""

from __future__ import annotations

import copy

from doctor.derived.links import judge_record
from doctor.derived.pcie import upstream_links
from doctor.inventory import build_inventory
from doctor.tui.topology import BAD, IDLE, build_topology, walk
from reports.topology_svg import render_topology
from tests.checks.pcie_overlays import GPU0, link, node
from tests.helpers import facts, healthy, sick


def _records(inv: dict) -> dict[str, dict]:
    return {d["address"]: d for d in inv["topology"]}


def test_sick_node_stores_the_degraded_links() -> None:
    inv = build_inventory(facts(base=sick()))
    states = {a: (d["link"] or {}).get("state") for a, d in _records(inv).items()}
    assert sorted(s for s in states.values() if s not in (None, "ok")) == ["degraded-speed", "degraded-width"]
    # every stored verdict matches the checks' own judgement of that link (one rule)
    f = facts(base=sick())
    for addr, rec in _records(inv).items():
        if rec["link"] is None:
            continue
        own = upstream_links(f.pci, addr)[0]
        assert own.child.address == addr
        assert (own.width_short, own.speed_short) == (rec["link"]["width_short"], rec["link"]["speed_short"])


def test_idle_gpu_speed_drop_is_power_saving_and_width_zero_is_down() -> None:
    inv = build_inventory(node(link(GPU0, speed=2.5), healthy()))  # the healthy node's GPUs are idle
    assert _records(inv)[GPU0]["link"]["state"] == "power-saving"
    inv = build_inventory(node(link(GPU0, width=0), healthy()))
    assert _records(inv)[GPU0]["link"]["state"] == "down"
    tui = {n.device["address"]: n for n in walk(build_topology(inv)) if n.device}
    assert tui[GPU0].link == BAD and "link down" in tui[GPU0].link_text


def test_old_result_without_verdicts_draws_the_same() -> None:
    inv = build_inventory(facts(base=sick()))
    old = copy.deepcopy(inv)
    for rec in old["topology"]:
        del rec["link"]
    new_tui = [(n.head, n.link) for n in walk(build_topology(inv))]
    assert new_tui == [(n.head, n.link) for n in walk(build_topology(old))]
    assert any(state == BAD for _, state in new_tui)
    assert render_topology(inv) == render_topology(old)
    by_addr = _records(old)
    for rec in inv["topology"]:
        parent = by_addr.get(rec["parent"] or "")
        idle = rec["kind"] == "gpu" and not any(g["address"] == rec["address"] and g["activity"] == "busy"
                                                for g in inv["gpus"])
        assert judge_record(by_addr[rec["address"]], parent, idle=idle) == judge_record(rec, parent)


def test_renderers_believe_the_stored_verdict() -> None:
    inv = build_inventory(node(link(GPU0, speed=2.5), healthy()))
    assert {n.device["address"]: n.link for n in walk(build_topology(inv)) if n.device}[GPU0] == IDLE
    _records(inv)[GPU0]["link"]["state"] = "degraded-speed"  # e.g. a newer rule decided otherwise
    assert {n.device["address"]: n.link for n in walk(build_topology(inv)) if n.device}[GPU0] == BAD
    assert "\u25bc 2.5 GT/s x16" in render_topology(inv)
