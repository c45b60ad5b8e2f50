"""rdma.gid_index: NCCL's GID choice reproduced on real-world table shapes (docs/checks.md#rdma-gid-index)."""

from __future__ import annotations

from collections.abc import Sequence

from doctor.derived.rdma import AF_INET6, NcclGidEnv, auto_gid_index, parse_list
from doctor.facts import Gid, RdmaPort
from tests.checks._netnuma_base import UNIT, environ, gid_table, healthy
from tests.helpers import facts, findings_of

FE80 = "fe80:0000:0000:0000:966d:aeff:fe00:0710"
V4 = "0000:0000:0000:0000:0000:ffff:0a64:0007"
V6 = "2001:0db8:0000:0000:966d:aeff:fe00:0710"
ZERO = "0000:0000:0000:0000:0000:0000:0000:0000"
NDEV = "enp25s0np0"
CHECK = "rdma.gid_index"


def _port(rows: Sequence[tuple[int, str, str | None]]) -> RdmaPort:
    gids = tuple(Gid(i, g, t, NDEV if t else None) for i, g, t in rows)
    return RdmaPort("mlx5_0", 1, "x", "Ethernet", "ACTIVE", "LINK_UP", 400.0, None, None, gids)


def test_common_table_picks_ipv4_v2() -> None:
    table = [(0, FE80, "IB/RoCE v1"), (1, FE80, "RoCE v2"), (2, V4, "IB/RoCE v1"), (3, V4, "RoCE v2")]
    assert auto_gid_index(_port(table), NcclGidEnv()) == 3


def test_sparse_table_starting_at_4_with_unreadable_types() -> None:
    table = [(0, ZERO, None), (1, ZERO, None), (4, V4, "IB/RoCE v1"), (5, V4, "RoCE v2")]
    assert auto_gid_index(_port(table), NcclGidEnv()) == 5


def test_ipv6_only_table_stays_link_local_unless_af_inet6() -> None:
    table = [(0, FE80, "IB/RoCE v1"), (1, FE80, "RoCE v2"), (2, V6, "IB/RoCE v1"), (3, V6, "RoCE v2")]
    assert auto_gid_index(_port(table), NcclGidEnv()) == 0
    assert auto_gid_index(_port(table), NcclGidEnv(addr_family=AF_INET6)) == 3


def test_hca_list_prefix_exact_and_exclude() -> None:
    assert parse_list("mlx5_1").matches("mlx5_10")
    assert not parse_list("=mlx5_1").matches("mlx5_10")
    assert not parse_list("^=mlx5_1").matches("mlx5_1")
    assert parse_list("=mlx5_0:1").matches("mlx5_0", 1) and not parse_list("=mlx5_0:2").matches("mlx5_0", 1)


def test_healthy_reports_pick_3_as_pass() -> None:
    found = findings_of(facts(base=healthy()), CHECK)
    assert found and all(f.severity == "pass" for f in found)
    assert any(f.subject == "mlx5_0/1" and "3 (10.100.0.7, RoCE v2" in f.title for f in found)


def test_forced_link_local_index_is_high() -> None:
    found = findings_of(facts(environ(NCCL_IB_GID_INDEX="0"), base=healthy()), CHECK)
    high = [f for f in found if f.severity == "high"]
    assert len(high) == 1 and high[0].subject_id == "NCCL_IB_GID_INDEX"
    assert "link-local" in high[0].title and "mlx5_7/1" in high[0].related


def test_forced_v1_and_empty_entries_are_high() -> None:
    v1 = findings_of(facts(environ(NCCL_IB_GID_INDEX="2"), base=healthy()), CHECK)
    assert any(f.severity == "high" and "RoCE v1" in f.title for f in v1)
    empty = findings_of(facts(environ(NCCL_IB_GID_INDEX="9"), base=healthy()), CHECK)
    assert any(f.severity == "high" and "empty slot" in f.title for f in empty)


def test_forced_valid_index_is_only_low() -> None:
    found = findings_of(facts(environ(NCCL_IB_GID_INDEX="3"), base=healthy()), CHECK)
    assert any(f.severity == "low" for f in found)
    assert not any(f.severity in ("high", "medium") for f in found)


def test_forced_index_on_another_ports_netdev_is_high() -> None:
    table = gid_table("mlx5_0", [(0, FE80, "IB/RoCE v1", NDEV), (3, V4, "RoCE v2", "enp27s0np0")])
    found = findings_of(facts({**table, **environ(NCCL_IB_GID_INDEX="3")}, base=healthy()), CHECK)
    hit = [f for f in found if f.severity == "high"]
    assert hit and hit[0].subject == "mlx5_0/1" and "enp27s0np0" in hit[0].title


def test_ipv6_only_roce_port_is_high() -> None:
    table = gid_table("mlx5_0", [(0, FE80, "IB/RoCE v1", NDEV), (1, FE80, "RoCE v2", NDEV),
                                 (2, V6, "IB/RoCE v1", NDEV), (3, V6, "RoCE v2", NDEV)])
    found = findings_of(facts(table, base=healthy()), CHECK)
    bad = [f for f in found if f.subject == "mlx5_0/1"]
    assert [f.severity for f in bad] == ["high"] and "no IPv4 GID" in bad[0].title


def test_ipv6_only_with_af_inet6_requested_passes() -> None:
    table = gid_table("mlx5_0", [(0, FE80, "IB/RoCE v1", NDEV), (1, FE80, "RoCE v2", NDEV),
                                 (2, V6, "IB/RoCE v1", NDEV), (3, V6, "RoCE v2", NDEV)])
    found = findings_of(facts({**table, **environ(NCCL_IB_ADDR_FAMILY="AF_INET6")}, base=healthy()), CHECK)
    assert [f.severity for f in found if f.subject == "mlx5_0/1"] == ["pass"]


def test_sparse_table_from_index_4_passes() -> None:
    table = gid_table("mlx5_0", [(4, V4, "IB/RoCE v1", NDEV), (5, V4, "RoCE v2", NDEV)])
    found = [f for f in findings_of(facts(table, base=healthy()), CHECK) if f.subject == "mlx5_0/1"]
    assert [f.severity for f in found] == ["pass"] and "5 (10.100.0.7" in found[0].title


def test_infiniband_port_does_not_apply_and_missing_gids_is_unknown() -> None:
    base = healthy()
    from tests.checks._netnuma_base import real

    port = real("sys/class/infiniband/mlx5_0", base) + "/ports/1"
    ib = findings_of(facts({f"{port}/link_layer": "InfiniBand\n"}, base=base), CHECK)
    assert not [f for f in ib if f.subject == "mlx5_0/1"]
    gone = findings_of(facts({f"{port}/gids": None}, base=base), CHECK)
    assert [f.severity for f in gone if f.subject == "mlx5_0/1"] == ["unknown"]
    # an InfiniBand port without gids/ (gpud's H100 /sys/class/infiniband, procfs fixtures): still nothing to say
    ib_gone = findings_of(facts({f"{port}/link_layer": "InfiniBand\n", f"{port}/gids": None}, base=base), CHECK)
    assert not [f for f in ib_gone if f.subject == "mlx5_0/1"]


def test_unit_file_value_counts_without_a_process() -> None:
    base = healthy()
    unit = (base / UNIT).read_text() + "Environment=NCCL_IB_GID_INDEX=1\n"
    found = findings_of(facts({UNIT: unit, "proc/4242/environ": b""}, base=base), CHECK)
    assert any(f.severity == "high" and UNIT in " ".join(e.source for e in f.evidence) for f in found)
