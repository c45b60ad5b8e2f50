"""pcie.acs_redirect: redirect bits on peer-path ports are high; SrcValid-only and VMs are not."""

from __future__ import annotations

from tests.checks.pcie_overlays import acs_config, node, sick
from tests.helpers import findings_of

CHECK = "pcie.acs_redirect"
SWITCH_99 = ("0000:99:00.0", "0000:99:01.0", "0000:99:02.0", "0000:99:03.0")


def test_sick_fixture_flags_the_switch_with_redirect() -> None:
    found = findings_of(node(base=sick()), CHECK)
    high = [f for f in found if f.severity == "high"]
    assert len(high) == 1 and high[0].subject_id == "0000:98:00.0"
    assert high[0].subject == "PCIe switch 0000:98:00.0 above GPU 4, GPU 5"
    assert set(SWITCH_99) <= set(high[0].related)
    runtime = "\n".join(high[0].fix.runtime)
    assert all(f"setpci -s {p} ECAP_ACS+0x6.w=0000" in runtime for p in SWITCH_99)
    assert any("ECAP_ACS+0x6.w=001d" in c for c in high[0].fix.rollback)  # restores the recorded value
    assert any("disable_acs_redir=0000:99:00.0" in c for c in high[0].fix.persistent)


def test_healthy_passes() -> None:
    assert {f.severity for f in findings_of(node(), CHECK)} == {"pass"}


def test_one_port_with_request_redirect_is_high() -> None:
    found = findings_of(node(acs_config("0000:17:01.0", 0x0005)), CHECK)
    high = [f for f in found if f.severity == "high"]
    assert len(high) == 1 and high[0].subject_id == "0000:16:00.0" and "0000:17:01.0" in high[0].related
    assert "ReqRedir+" in high[0].observed


def test_src_valid_only_is_info() -> None:
    found = findings_of(node(acs_config("0000:17:01.0", 0x0001)), CHECK)
    assert {f.severity for f in found} == {"info", "pass"}


def test_virtual_machine_is_silent() -> None:
    changes = {**acs_config("0000:17:01.0", 0x000C), "proc/cpuinfo": "flags\t\t: fpu hypervisor\n"}
    assert findings_of(node(changes), CHECK) == []
