"""Check nccl.transport (tests moved from test_net_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, healthy, sick
from tests.helpers import facts, findings_of


def _sev(found: list, subject: str | None = None) -> list[str]:
    return [f.severity for f in found if subject is None or f.subject_id == subject]


def test_transport_ib_disabled_with_active_rdma_is_high() -> None:
    found = findings_of(facts(base=sick()), "nccl.transport")
    assert ("NCCL_IB_DISABLE", "high") in [(f.subject_id, f.severity) for f in found]
    assert "NCCL_IB_DISABLE in vllm api_server (pid 4242)" in [f.subject for f in found]
    assert ("NCCL_SOCKET_IFNAME", "high") in [(f.subject_id, f.severity) for f in found]


def test_transport_healthy_only_low_and_other_forcings() -> None:
    assert set(_sev(findings_of(facts(base=healthy()), "nccl.transport"))) <= {"info", "pass"}
    f = facts(environ(NCCL_P2P_DISABLE="1", NCCL_NET_GDR_LEVEL="LOC", NCCL_SHM_DISABLE="1",
                      NCCL_IB_HCA="mlx5_1"), base=healthy())
    got = {(x.subject_id, x.severity) for x in findings_of(f, "nccl.transport")}
    assert {("NCCL_P2P_DISABLE", "high"), ("NCCL_NET_GDR_LEVEL", "high"), ("NCCL_SHM_DISABLE", "medium")} <= got


def test_ib_hca_prefix_matching_extra_devices_is_low() -> None:
    base = healthy()
    extra: dict[str, bytes | str | None] = {"sys/class/infiniband/mlx5_10/ports/1/state": "4: ACTIVE\n",
             "sys/class/infiniband/mlx5_10/ports/1/link_layer": "Ethernet\n"}
    found = findings_of(facts({**extra, **environ(NCCL_IB_HCA="mlx5_1")}, base=base), "nccl.transport")
    assert ("NCCL_IB_HCA", "low") in [(f.subject_id, f.severity) for f in found]


def test_socket_ifname_unset_picks_management_nic_when_tcp_carries_data() -> None:
    from tests.checks._netnuma_base import UNIT

    unit = (healthy() / UNIT).read_text().replace("Environment=NCCL_SOCKET_IFNAME==enp39s0f0np0\n", "")
    unset = {**environ(NCCL_SOCKET_IFNAME=None, NCCL_IB_DISABLE="1"), UNIT: unit}
    for pid in range(4318, 4318 + 9 * 8, 9):
        unset.update(environ(pid, NCCL_SOCKET_IFNAME=None, NCCL_IB_DISABLE="1"))
    found = [f for f in findings_of(facts(unset, base=healthy()), "nccl.transport") if f.subject == "NCCL_SOCKET_IFNAME"]
    assert [(f.severity, f.related[0]) for f in found] == [("medium", "enp39s0f0np0")]
    # RDMA carries the data: the bootstrap interface does not matter
    quiet = {k: v for k, v in unset.items()}
    quiet.update(environ(NCCL_SOCKET_IFNAME=None))
    assert not [f for f in findings_of(facts(quiet, base=healthy()), "nccl.transport")
                if f.subject == "NCCL_SOCKET_IFNAME"]


def test_p2p_level_values_are_judged_by_what_they_do() -> None:
    for value in ("NVL", "PIX", "SYS"):
        found = [f for f in findings_of(facts(environ(NCCL_P2P_LEVEL=value), base=healthy()), "nccl.transport")
                 if f.subject_id == "NCCL_P2P_LEVEL"]
        assert [f.severity for f in found] == ["low"], value
        assert "optimally select" in found[0].detail
    loc = [f for f in findings_of(facts(environ(NCCL_P2P_LEVEL="LOC"), base=healthy()), "nccl.transport")
           if f.subject_id == "NCCL_P2P_LEVEL"]
    assert [f.severity for f in loc] == ["high"]
