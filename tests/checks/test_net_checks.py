"""net.*, rdma.port_state and nccl.transport on the HGX fixtures and small overlays."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, healthy, real, sick
from tests.helpers import facts, findings_of

NIC7 = "enp189s0np0"


def _sev(found: list, subject: str | None = None) -> list[str]:
    return [f.severity for f in found if subject is None or f.subject == subject]


def test_link_down_rail_is_high_and_healthy_passes() -> None:
    found = findings_of(facts(base=sick()), "net.link")
    assert [(f.subject, f.severity) for f in found if f.severity != "info"] == [(NIC7, "high")]
    assert "ip link set dev enp189s0np0 up" in found[0].fix.runtime
    assert _sev(findings_of(facts(base=healthy()), "net.link")) == ["pass"]


def test_slow_rail_high_and_mtu_rules() -> None:
    base = healthy()
    net = real(f"sys/class/net/{NIC7}", base)
    slow = findings_of(facts({f"{net}/speed": "200000\n"}, base=base), "net.link")
    assert _sev(slow, NIC7) == ["high"]
    odd = findings_of(facts({f"{net}/mtu": "1500\n"}, base=base), "net.link")
    assert _sev(odd, NIC7) == ["medium"]
    all1500 = {f"{real(f'sys/class/net/{n}', base)}/mtu": "1500\n" for n in
               ("enp25s0np0", "enp27s0np0", "enp59s0np0", "enp61s0np0", "enp155s0np0", "enp157s0np0",
                "enp187s0np0", NIC7)}
    assert set(_sev(findings_of(facts(all1500, base=base), "net.link"))) == {"low"}


def test_unused_down_port_is_not_an_alarm() -> None:
    base = healthy()
    mgmt = real("sys/class/net/enp39s0f0np0", base)
    found = findings_of(facts({f"{mgmt}/operstate": "down\n", f"{mgmt}/speed": "-1\n"}, base=base), "net.link")
    assert _sev(found) == ["pass"]


def test_port_state_listed_hca_down_is_medium() -> None:
    found = findings_of(facts(base=sick()), "rdma.port_state")
    assert [(f.subject, f.severity) for f in found] == [("mlx5_7/1", "medium")]
    excluded = findings_of(facts(environ(base=sick(), NCCL_IB_HCA="=mlx5_0,mlx5_1"), base=sick()),
                           "rdma.port_state")
    assert _sev(excluded) == ["pass"]


def test_socket_buffers_medium_when_tcp_carries_data_low_otherwise() -> None:
    assert [(f.subject, f.severity) for f in findings_of(facts(base=sick()), "net.socket_buffers")] == \
        [("net.ipv4.tcp_rmem", "medium")]
    small = {"proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n", "proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t4194304\n"}
    found = findings_of(facts(small, base=healthy()), "net.socket_buffers")
    assert _sev(found) == ["low"] and found[0].fix.runtime[0].startswith("sysctl -w net.core.rmem_max=")
    assert found[0].fix.builder == "sysctl" and found[0].fix.phase("runtime")[0].unattended
    assert any("rm -f /etc/sysctl.d/" in c for c in found[0].fix.rollback)
    assert _sev(findings_of(facts(base=healthy()), "net.socket_buffers")) == ["pass"]


def test_core_max_default_alone_is_not_flagged_unless_nccl_asks_for_more() -> None:
    core: dict[str, bytes | str | None] = {"proc/sys/net/core/rmem_max": "212992\n", "proc/sys/net/core/wmem_max": "212992\n"}
    assert _sev(findings_of(facts(core, base=healthy()), "net.socket_buffers")) == ["pass"]
    asked: dict[str, bytes | str | None] = {**core, **environ(NCCL_SOCKET_RCVBUF="8388608")}
    assert _sev(findings_of(facts(asked, base=healthy()), "net.socket_buffers")) == ["medium"]


def test_tcp_tuning_lows_on_sick_pass_on_healthy() -> None:
    found = findings_of(facts(base=sick()), "net.tcp_tuning")
    assert sorted((f.subject, f.severity) for f in found) == [
        ("net.core.netdev_max_backlog", "low"), ("net.ipv4.tcp_slow_start_after_idle", "low")]
    assert _sev(findings_of(facts(base=healthy()), "net.tcp_tuning")) == ["pass"]


def test_transport_ib_disabled_with_active_rdma_is_high() -> None:
    found = findings_of(facts(base=sick()), "nccl.transport")
    assert ("NCCL_IB_DISABLE", "high") in [(f.subject, f.severity) for f in found]
    assert ("NCCL_SOCKET_IFNAME", "high") in [(f.subject, f.severity) for f in found]


def test_transport_healthy_only_low_and_other_forcings() -> None:
    assert set(_sev(findings_of(facts(base=healthy()), "nccl.transport"))) <= {"info", "pass"}
    f = facts(environ(NCCL_P2P_DISABLE="1", NCCL_NET_GDR_LEVEL="LOC", NCCL_SHM_DISABLE="1",
                      NCCL_IB_HCA="mlx5_1"), base=healthy())
    got = {(x.subject, x.severity) for x in findings_of(f, "nccl.transport")}
    assert {("NCCL_P2P_DISABLE", "high"), ("NCCL_NET_GDR_LEVEL", "high"), ("NCCL_SHM_DISABLE", "medium")} <= got


def test_ib_hca_prefix_matching_extra_devices_is_low() -> None:
    base = healthy()
    extra: dict[str, bytes | str | None] = {"sys/class/infiniband/mlx5_10/ports/1/state": "4: ACTIVE\n",
             "sys/class/infiniband/mlx5_10/ports/1/link_layer": "Ethernet\n"}
    found = findings_of(facts({**extra, **environ(NCCL_IB_HCA="mlx5_1")}, base=base), "nccl.transport")
    assert ("NCCL_IB_HCA", "low") in [(f.subject, f.severity) for f in found]
