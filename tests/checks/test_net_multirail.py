"""Check net.multirail: rp_filter and ARP settings with several RoCE NICs on one subnet."""

from __future__ import annotations

from checks.net_multirail import multirail
from doctor.registry import refusal
from tests.checks._roce_base import conf, route
from tests.helpers import facts, findings_of

SHARED = route(("enp25s0np0", "10.100.0.0", "0.0.0.0", "255.255.0.0"),
               ("enp27s0np0", "10.100.0.0", "0.0.0.0", "255.255.0.0"),
               ("enp39s0f0np0", "0.0.0.0", "192.168.10.1", "0.0.0.0"))



def test_one_subnet_per_rail_does_not_apply() -> None:
    assert findings_of(facts(), "net.multirail") == []


def test_shared_subnet_with_default_arp_is_medium_with_sysctl_fix() -> None:
    (f,) = findings_of(facts(SHARED), "net.multirail")
    assert f.severity == "medium" and set(f.related) == {"enp25s0np0", "enp27s0np0"}
    assert f.fix.builder == "sysctl"
    assert f.fix.params["set"] == {"net.ipv4.conf.all.arp_ignore": "1", "net.ipv4.conf.all.arp_announce": "2"}
    assert refusal(multirail, "net.multirail", "sysctl", f.fix.params) == ""
    assert "sysctl -w net.ipv4.conf.all.arp_ignore=0" in f.fix.rollback


def test_strict_rp_filter_is_fixed_per_interface() -> None:
    # RHEL-style strict filter: conf.all and the interfaces at 1 (the kernel uses the larger of all and <if>)
    tuned = {**SHARED, **conf("all", arp_ignore="1", arp_announce="2", rp_filter="1"),
             **conf("enp25s0np0", rp_filter="1"), **conf("enp27s0np0", rp_filter="1")}
    (f,) = findings_of(facts(tuned), "net.multirail")
    assert f.severity == "medium" and "rp_filter strict" in f.title
    assert f.fix.params["set"] == {"net.ipv4.conf.enp25s0np0.rp_filter": "2",
                                   "net.ipv4.conf.enp27s0np0.rp_filter": "2"}
    assert refusal(multirail, "net.multirail", "sysctl", f.fix.params) == ""


def test_loose_interface_filter_wins_over_strict_all() -> None:
    tuned = {**SHARED, **conf("all", arp_ignore="1", arp_announce="2", rp_filter="1")}
    assert [f.severity for f in findings_of(facts(tuned), "net.multirail")] == ["pass"]


def test_tuned_shared_subnet_passes_and_gateway_routes_do_not_count() -> None:
    tuned = {**SHARED, **conf("all", arp_ignore="1", arp_announce="2")}
    assert [f.severity for f in findings_of(facts(tuned), "net.multirail")] == ["pass"]
    via_gw = route(("enp25s0np0", "10.100.0.0", "10.1.0.1", "255.255.0.0"),
                   ("enp27s0np0", "10.100.0.0", "10.1.0.1", "255.255.0.0"))
    assert findings_of(facts(via_gw), "net.multirail") == []


def test_missing_or_corrupt_route_table() -> None:
    assert [f.severity for f in findings_of(facts({"proc/net/route": None}), "net.multirail")] == ["unknown"]
    assert findings_of(facts({"proc/net/route": "Iface\nenp25s0np0 ZZZZ\n\x00\n"}), "net.multirail") == []


def test_generated_node_with_all_rails_on_one_subnet(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from fixtures.tools.make_node import HEALTHY, build_node

    build_node(tmp_path / "n", replace(HEALTHY, shared_subnet=True))
    (f,) = findings_of(facts(base=tmp_path / "n"), "net.multirail")
    assert f.severity == "medium" and len(f.related) == 8
    tuned = replace(HEALTHY, shared_subnet=True, conf_sysctls={"rp_filter": "2", "arp_ignore": "1",
                                                               "arp_announce": "2"})
    build_node(tmp_path / "t", tuned)
    assert [x.severity for x in findings_of(facts(base=tmp_path / "t"), "net.multirail")] == ["pass"]
