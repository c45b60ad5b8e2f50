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


ETHTOOL_S = """\
NIC statistics:
     rx_packets: 81724392
     rx_bytes: 662874384123
     tx_packets: 80127311
     rx_out_of_buffer: {oob}
     rx_prio3_pause: 1203
     rx_discards_phy: {discards}
     tx_discards_phy: 0
     rx_prio0_bytes: 1024
"""


def _sosreport(tmp_path, discards: int, oob: int = 0):  # type: ignore[no-untyped-def]
    import shutil

    from doctor.facts import Facts
    from doctor.sources import SOSREPORT, open_source

    root = tmp_path / "sosreport-gpu-node-07"
    shutil.copytree(healthy(), root, symlinks=True)
    (root / "sos_commands/networking").mkdir(parents=True)
    (root / "sos_commands/networking/ethtool_-S_enp61s0np0").write_text(ETHTOOL_S.format(oob=oob, discards=discards))
    (root / "sos_commands/networking/ethtool_-S_garbage").write_text("\x00\xff not ethtool\n")
    src = open_source(str(root))
    assert src.kind == SOSREPORT
    return Facts(src)


def test_ethtool_discards_from_a_sosreport_are_medium(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = _sosreport(tmp_path, discards=512)
    assert f.ethtool_stats["enp61s0np0"].values["rx_discards_phy"] == 512
    assert f.ethtool_stats["garbage"].values == {}
    found = findings_of(f, "net.drops")
    assert _alarms(found) == [("enp61s0np0", "medium")]
    assert found[0].observed == "rx_discards_phy=512"
    assert "sos_commands/networking/ethtool_-S_enp61s0np0" in [e.source for e in found[0].evidence]


def test_ethtool_buffer_drops_alone_are_low_and_zero_is_quiet(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert _alarms(findings_of(_sosreport(tmp_path / "a", discards=0, oob=77), "net.drops")) == [("enp61s0np0", "low")]
    assert _alarms(findings_of(_sosreport(tmp_path / "b", discards=0), "net.drops")) == []


def test_ethtool_discards_from_a_snapshot_command_are_medium() -> None:
    # gnd collect stores ethtool -S per RoCE interface as commands/ethtool_-S_<if>
    f = facts({"commands/ethtool_-S_enp61s0np0": ETHTOOL_S.format(oob=0, discards=77)})
    found = findings_of(f, "net.drops")
    assert _alarms(found) == [("enp61s0np0", "medium")]
    assert "commands/ethtool_-S_enp61s0np0" in [e.source for e in found[0].evidence]


def test_live_ethtool_runs_per_roce_interface_only(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from doctor.facts import Facts
    from doctor.sources import LiveSource

    log = tmp_path / "ran"
    fake = tmp_path / "bin/ethtool"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n"
                    f"printf '%s' '{ETHTOOL_S.format(oob=0, discards=5)}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    f = Facts(LiveSource(str(healthy()), run_commands=True))
    assert _alarms(findings_of(f, "net.drops")) == [(nd, "medium") for nd in sorted(f.roce_netdevs)]
    ran = sorted(log.read_text().split("\n")[:-1])
    assert ran == sorted(f"-S {nd}" for nd in f.roce_netdevs) and "-S enp39s0f0np0" not in ran  # not the X710
