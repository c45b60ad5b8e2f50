"""Check net.drops: RoCE hw_counters above zero."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, real, sick
from tests.checks._roce_base import counter
from tests.helpers import facts, findings_of


def _alarms(found: list) -> list[tuple[str, str]]:
    return [(f.subject, f.severity) for f in found if f.severity not in ("pass", "info")]


def test_healthy_passes_and_sick_sequence_errors_are_medium() -> None:
    assert [f.severity for f in findings_of(facts(base=healthy()), "net.drops")] == ["pass"]
    found = findings_of(facts(base=sick()), "net.drops")
    assert _alarms(found) == [("enp155s0np0", "medium")]
    assert found[0].observed == "out_of_sequence=1823, packet_seq_err=311"
    assert "rdma statistic show link mlx5_4/1" in found[0].fix.runtime
    assert not found[0].fix.rollback  # read-only commands


def test_out_of_buffer_alone_is_low() -> None:
    found = findings_of(facts(counter("mlx5_1", "out_of_buffer", "42\n")), "net.drops")
    assert _alarms(found) == [("enp27s0np0", "low")]


def test_down_port_and_hostile_values_are_not_alarms() -> None:
    port = real("sys/class/infiniband/mlx5_1", healthy()) + "/ports/1"
    down = {f"{port}/state": "1: DOWN\n", **counter("mlx5_1", "out_of_sequence", "9\n")}
    assert _alarms(findings_of(facts(down), "net.drops")) == []
    for junk in ("-1\n", "abc\n", "9" * 30 + "\n", ""):
        assert _alarms(findings_of(facts(counter("mlx5_1", "out_of_sequence", junk)), "net.drops")) == []


def test_missing_counters_are_unknown() -> None:
    gone = {}
    for i in range(8):
        for name in ("out_of_sequence", "packet_seq_err", "out_of_buffer"):
            gone.update(counter(f"mlx5_{i}", name, None))
    assert [f.severity for f in findings_of(facts(gone), "net.drops")] == ["unknown"]
