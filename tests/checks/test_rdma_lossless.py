"""Check rdma.lossless: DCQCN switches on the priority NCCL_IB_TC selects."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, healthy, real, sick
from tests.checks._roce_base import ecn, no_ecn
from tests.helpers import facts, findings_of


def _alarms(found: list) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found if f.severity not in ("pass", "info")]


def test_healthy_passes_and_sick_rail_with_dcqcn_off_is_medium() -> None:
    assert [f.severity for f in findings_of(facts(base=healthy()), "rdma.lossless")] == ["pass"]
    found = findings_of(facts(base=sick()), "rdma.lossless")
    assert _alarms(found) == [("enp59s0np0", "medium")]
    fix = found[0].fix
    assert fix.builder == "roce_ecn"
    assert any("ecn/roce_np/enable/0" in s and s.startswith("echo 1") for s in fix.runtime)
    assert any("ecn/roce_rp/enable/0" in s and s.startswith("echo 0") for s in fix.rollback)
    assert fix.persistent  # a human step: the sysfs switches do not survive a reboot


def test_priority_follows_nccl_ib_tc() -> None:
    # NCCL_IB_TC=106 is DSCP 26, priority 3: only priority 3 matters
    tc = environ(NCCL_IB_TC="106")
    hit = findings_of(facts({**tc, **ecn("enp25s0np0", 3, np="0")}), "rdma.lossless")
    assert _alarms(hit) == [("enp25s0np0", "medium")]
    assert "priority 3" in hit[0].title and hit[0].observed == "roce_np=0"
    # trap: DCQCN off on priority 0 while NCCL uses priority 3
    quiet = findings_of(facts({**tc, **ecn("enp25s0np0", 0, np="0", rp="0")}), "rdma.lossless")
    assert _alarms(quiet) == []


def test_missing_switches_are_unknown_never_an_alarm() -> None:
    found = findings_of(facts(no_ecn()), "rdma.lossless")
    assert [f.severity for f in found] == ["unknown"]
    garbage = findings_of(facts({**no_ecn(), **ecn("enp25s0np0", 0, np="abc", rp="")}), "rdma.lossless")
    assert [f.severity for f in garbage] == ["unknown"]


def test_ports_nccl_does_not_use_do_not_apply() -> None:
    excluded = {**environ(NCCL_IB_HCA="^=mlx5_2"), **ecn("enp59s0np0", 0, np="0", rp="0")}
    assert _alarms(findings_of(facts(excluded), "rdma.lossless")) == []
    port = real("sys/class/infiniband/mlx5_2", healthy()) + "/ports/1"
    ib = {f"{port}/link_layer": "InfiniBand\n", **ecn("enp59s0np0", 0, np="0", rp="0")}
    assert _alarms(findings_of(facts(ib), "rdma.lossless")) == []
    down = {f"{port}/state": "1: DOWN\n", **ecn("enp59s0np0", 0, np="0", rp="0")}
    assert _alarms(findings_of(facts(down), "rdma.lossless")) == []
