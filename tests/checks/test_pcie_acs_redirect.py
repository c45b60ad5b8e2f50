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


def _pairwise(f) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    """The quadratic reference: every GDR pair, the bridges between them."""
    from doctor.derived.net import is_virtual_nic, subject_nics
    from doctor.derived.paths import GDR_WORDS, bridges_between, path_word

    pci = f.pci
    gpus = sorted(pci.gpus, key=lambda d: d.address)
    nics = [n for n in subject_nics(f) if not is_virtual_nic(n)]
    pairs = [(g, n) for g in gpus for n in nics]
    if not any(d.is_nvswitch for d in pci.devices.values()):
        pairs += [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    out: dict[str, set[str]] = {}
    for a, b in pairs:
        if path_word(pci, a.address, b.address) in GDR_WORDS:
            for bridge in bridges_between(pci, a.address, b.address):
                out.setdefault(bridge, set()).update({a.address, b.address})
    return out


def test_subtree_counts_match_the_pairwise_definition() -> None:
    from checks.pcie_acs_redirect import _Peers

    for f in (node(), node(base=sick())):
        want = _pairwise(f)
        peers = _Peers(f)
        assert peers.crossing() == sorted(want)
        for bridge, ends in want.items():
            mask = peers.at(bridge)
            assert {a for i, a in enumerate(peers.order) if mask >> i & 1} == ends, bridge
