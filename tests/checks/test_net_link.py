"""Check net.link (tests moved from test_net_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, real, sick
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



def test_a_link_is_the_hardwares_and_an_mtu_the_operating_systems() -> None:
    """Who acts: a rail down or slow is the cable's, transceiver's or switch port's; an MTU the node's setting."""
    base = healthy()
    net = real(f"sys/class/net/{NIC7}", base)
    down = [f for f in findings_of(facts(base=sick()), "net.link") if f.severity == "high"]
    slow = [f for f in findings_of(facts({f"{net}/speed": "200000\n"}, base=base), "net.link") if f.subject == NIC7]
    odd = [f for f in findings_of(facts({f"{net}/mtu": "1500\n"}, base=base), "net.link") if f.subject == NIC7]
    assert [f.acts for f in down + slow] == ["hardware", "hardware"]
    assert [f.acts for f in odd] == ["os"]


def test_unused_down_port_is_not_an_alarm() -> None:
    base = healthy()
    mgmt = real("sys/class/net/enp39s0f0np0", base)
    found = findings_of(facts({f"{mgmt}/operstate": "down\n", f"{mgmt}/speed": "-1\n"}, base=base), "net.link")
    assert _sev(found) == ["pass"]
