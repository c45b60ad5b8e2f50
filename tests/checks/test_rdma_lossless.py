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


# --- PFC and DSCP trust from mlnx_qos -i (issue 13 item 3) ------------------------------------------

def _qos(netdev: str, trust: str = "dscp", pfc: str = "0   0   0   1   0   0   0   0") -> dict:
    """A ``commands/mlnx_qos_-i_<if>`` overlay: the committed (real-format) output with trust/PFC changed."""
    text = (healthy() / f"commands/mlnx_qos_-i_{netdev}").read_text()
    text = text.replace("Priority trust state: dscp", f"Priority trust state: {trust}")
    if trust == "pcp":  # mlnx_qos prints no DSCP map under pcp trust
        text = text.split("dscp2prio mapping:\n")[0] + "Cable len: 7\n" + text.split("Cable len: 7\n")[1]
    text = text.replace("enabled     0   0   0   1   0   0   0   0", f"enabled     {pfc}")
    return {f"commands/mlnx_qos_-i_{netdev}": text}


TC106 = environ(NCCL_IB_TC="106")


def test_healthy_pfc_on_priority_3_with_trust_dscp_is_quiet() -> None:
    found = findings_of(facts(TC106), "rdma.lossless")
    assert [f.severity for f in found] == ["pass"]
    assert not any("mlnx_qos" in e.source for e in found[0].evidence)  # recorded and fine: nothing to note


def test_pfc_off_on_nccls_priority_is_medium_with_an_exact_rollback() -> None:
    found = findings_of(facts({**TC106, **_qos("enp61s0np0", pfc="0   0   0   0   1   0   0   0")}), "rdma.lossless")
    assert _alarms(found) == [("enp61s0np0", "medium")]
    f = found[0]
    assert "PFC off on priority 3" in f.title and "trust pcp" not in f.title
    assert f.evidence[0].source == "commands/mlnx_qos_-i_enp61s0np0"
    assert f.fix.builder == "roce_qos" and f.fix.params["previous_pfc"] == [0, 0, 0, 0, 1, 0, 0, 0]
    assert "mlnx_qos -i enp61s0np0 --pfc 0,0,0,1,1,0,0,0" in f.fix.runtime
    assert "mlnx_qos -i enp61s0np0 --pfc 0,0,0,0,1,0,0,0" in f.fix.rollback
    assert not any(s.unattended for s in f.fix.steps if s.argv and "--pfc" in s.argv)


def test_pfc_follows_the_recorded_dscp_map_not_the_default() -> None:
    # trap: DSCP 26 remapped to priority 4, where PFC is on: lossless although priority 3 has no PFC
    q = _qos("enp25s0np0", pfc="0   0   0   0   1   0   0   0")
    text = q["commands/mlnx_qos_-i_enp25s0np0"]
    text = text.replace("prio:3 dscp:31,30,29,28,27,26,25,24,", "prio:3 dscp:31,30,29,28,27,25,24,")
    text = text.replace("prio:4 dscp:39,", "prio:4 dscp:26,39,")
    assert _alarms(findings_of(facts({**TC106, "commands/mlnx_qos_-i_enp25s0np0": text}), "rdma.lossless")) == []


def test_trust_pcp_while_nccl_marks_dscp_is_medium() -> None:
    found = findings_of(facts({**TC106, **_qos("enp27s0np0", trust="pcp")}), "rdma.lossless")
    assert _alarms(found) == [("enp27s0np0", "medium")]
    assert "trust pcp" in found[0].title and "PFC off" not in found[0].title
    assert found[0].fix.params == {"netdev": "enp27s0np0", "trust": "dscp", "previous_trust": "pcp"}
    assert "mlnx_qos -i enp27s0np0 --trust pcp" in found[0].fix.rollback


def test_pfc_is_not_judged_without_nccl_ib_tc() -> None:
    # trap: NCCL_IB_TC unset -> the device's default ToS decides the DSCP, which mlnx_qos does not show
    assert _alarms(findings_of(facts(_qos("enp25s0np0", trust="pcp", pfc="0 0 0 0 0 0 0 0")), "rdma.lossless")) == []


def test_mlnx_qos_not_recorded_is_noted_not_a_finding() -> None:
    found = findings_of(facts({**TC106, "commands/mlnx_qos_-i_enp25s0np0": None}), "rdma.lossless")
    assert [f.severity for f in found] == ["pass"]
    notes = [e for e in found[0].evidence if "not judged" in e.value]
    assert [e.source for e in notes] == ["commands/mlnx_qos_-i_enp25s0np0"]
    garbage = findings_of(facts({**TC106, "commands/mlnx_qos_-i_enp25s0np0": "\x00\xffnot mlnx_qos\n"}),
                          "rdma.lossless")
    assert [f.severity for f in garbage] == ["pass"] and any("no trust state" in e.value for e in garbage[0].evidence)


def test_roce_qos_builder_refuses_what_no_check_produces() -> None:
    from doctor.fixes import make

    ok = make("roce_qos", netdev="eth4", pfc=[0, 0, 0, 1, 0, 0, 0, 0], previous_pfc=[0] * 8)
    assert [s.text for s in ok.steps if s.argv] == ["mlnx_qos -i eth4", "mlnx_qos -i eth4 --pfc 0,0,0,1,0,0,0,0",
                                                    "mlnx_qos -i eth4 --pfc 0,0,0,0,0,0,0,0"]
    for bad in ({"netdev": "eth4;reboot", "pfc": [1] * 8, "previous_pfc": [0] * 8},
                {"netdev": "eth4", "pfc": [1] * 7, "previous_pfc": [0] * 8},
                {"netdev": "eth4", "pfc": [True] * 8, "previous_pfc": [0] * 8},
                {"netdev": "eth4", "pfc": [1] * 8},  # no recorded state to roll back to
                {"netdev": "eth4", "trust": "dscp"},
                {"netdev": "eth4", "trust": "dscp; id", "previous_trust": "pcp"},
                {"netdev": "eth4"}):
        assert make("roce_qos", **bad).steps == (), bad
