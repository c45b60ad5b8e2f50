"""Check net.socket_buffers (tests moved from test_net_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, healthy, real, sick
from tests.helpers import facts, findings_of


def _sev(found: list, subject: str | None = None) -> list[str]:
    return [f.severity for f in found if subject is None or f.subject == subject]


def test_socket_buffers_medium_when_tcp_carries_data_low_otherwise() -> None:
    assert [(f.subject, f.severity) for f in findings_of(facts(base=sick()), "net.socket_buffers")] == \
        [("net.ipv4.tcp_rmem", "medium")]
    small = {"proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n", "proc/sys/net/ipv4/tcp_wmem": "4096\t16384\t4194304\n"}
    found = findings_of(facts(small, base=healthy()), "net.socket_buffers")
    assert _sev(found) == ["low"] and found[0].fix.runtime[0].startswith("sysctl -w 'net.ipv4.tcp_rmem=")
    assert not any("rmem_max" in c for c in found[0].fix.runtime)  # 2 GiB rmem_max is never lowered
    assert found[0].fix.builder == "sysctl" and found[0].fix.phase("runtime")[0].unattended
    assert any("rm -f /etc/sysctl.d/" in c for c in found[0].fix.rollback)
    assert _sev(findings_of(facts(base=healthy()), "net.socket_buffers")) == ["pass"]


def test_core_max_default_alone_is_not_flagged_unless_nccl_asks_for_more() -> None:
    core: dict[str, bytes | str | None] = {"proc/sys/net/core/rmem_max": "212992\n", "proc/sys/net/core/wmem_max": "212992\n"}
    assert _sev(findings_of(facts(core, base=healthy()), "net.socket_buffers")) == ["pass"]
    asked: dict[str, bytes | str | None] = {**core, **environ(NCCL_SOCKET_RCVBUF="8388608")}
    assert _sev(findings_of(facts(asked, base=healthy()), "net.socket_buffers")) == ["medium"]


def _ten_gig_node() -> dict:
    """The healthy node without its RoCE NICs: only the 10 GbE X710 is up (a TCP-served inference node)."""
    import os

    base = healthy()
    out: dict = {f"sys/class/infiniband/mlx5_{i}": None for i in range(8)}
    for name in os.listdir(base / "sys/class/net"):
        if name.startswith("enp") and name.endswith("s0np0") and name != "enp39s0f0np0":
            out[f"{real(f'sys/class/net/{name}', base)}/speed"] = "-1\n"
            out[f"{real(f'sys/class/net/{name}', base)}/operstate"] = "down\n"
    return out


def test_ten_gig_tcp_served_node_is_still_judged() -> None:
    node = _ten_gig_node()
    found = findings_of(facts(node, base=healthy()), "net.socket_buffers")
    assert [f.severity for f in found] == ["pass"] and "enp39s0f0np0" in found[0].title
    small = {**node, "proc/sys/net/ipv4/tcp_rmem": "4096\t87380\t262144\n"}
    (f,) = findings_of(facts(small, base=healthy()), "net.socket_buffers")
    assert f.severity == "low" and "10 Gb/s" in f.title
    # without an inference server such a node is not judged
    idle = {**node, "proc/4242/cmdline": b"/usr/bin/sleep\x00infinity\x00"}
    assert findings_of(facts(idle, base=healthy()), "net.socket_buffers") == []
