"""Check rdma.mtu: active_mtu (ibv_devinfo -v) against the interface MTU."""

from __future__ import annotations

from checks.rdma_mtu import allowed_mtu
from tests.checks._netnuma_base import healthy, real
from tests.helpers import facts, findings_of

DEVINFO = "commands/ibv_devinfo_-v"


def _devinfo(old: str, new: str) -> dict[str, str]:
    text = (healthy() / DEVINFO).read_text()
    head, sep, tail = text.partition("hca_id:\tmlx5_3\n")
    assert sep
    return {DEVINFO: head + sep + tail.replace(old, new, 1)}


def test_iboe_mtu_table() -> None:
    assert [allowed_mtu(m) for m in (1500, 2048, 2144, 4191, 4192, 9000, 200)] == [1024, 1024, 2048, 2048, 4096,
                                                                                  4096, None]


def test_healthy_passes_and_low_active_mtu_is_medium() -> None:
    assert [f.severity for f in findings_of(facts(), "rdma.mtu")] == ["pass"]
    found = findings_of(facts(_devinfo("active_mtu:\t\t4096 (5)", "active_mtu:\t\t1024 (3)")), "rdma.mtu")
    bad = [f for f in found if f.severity == "medium"]
    assert [(f.subject, f.expected, f.observed) for f in bad] == [("mlx5_3/1", "active_mtu 4096", "active_mtu 1024")]
    assert bad[0].fix.runtime == ("ibv_devinfo -v -d mlx5_3 -i 1",)


def test_small_interface_mtu_is_net_link_business() -> None:
    nd = real("sys/class/net/enp61s0np0", healthy())
    quiet = {f"{nd}/mtu": "1500\n", **_devinfo("active_mtu:\t\t4096 (5)", "active_mtu:\t\t1024 (3)")}
    assert [f.severity for f in findings_of(facts(quiet), "rdma.mtu")] == ["pass"]


def test_missing_or_garbage_devinfo_is_unknown() -> None:
    assert [f.severity for f in findings_of(facts({DEVINFO: None}), "rdma.mtu")] == ["unknown"]
    assert [f.severity for f in findings_of(facts({DEVINFO: "\x00garbage\n"}), "rdma.mtu")] == ["unknown"]
