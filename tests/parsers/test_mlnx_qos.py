"""mlnx_qos -i parser on a real sample (att/netarbiter nvmf/OUTPUTSAMPLE.setup-nic-lossless-layer3.sh.md)."""

from __future__ import annotations

from doctor.parsers.mlnx_qos import parse_mlnx_qos
from tests.helpers import ROOT

SAMPLE = (ROOT / "tests/data/mlnx_qos_-i_eth4.txt").read_text()


def test_real_sample_trust_pfc_and_dscp_map() -> None:
    rep = parse_mlnx_qos(SAMPLE)
    assert rep.trust == "dscp"
    assert rep.pfc == {p: p == 3 for p in range(8)}
    assert rep.dscp2prio[26] == 3 and rep.dscp2prio[0] == 0 and rep.dscp2prio[63] == 7 and len(rep.dscp2prio) == 64


def test_pcp_trust_without_map_and_a_buffer_row() -> None:
    text = ("DCBX mode: OS controlled\nPriority trust state: pcp\nCable len: 7\nPFC configuration:\n"
            "\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   0   0   0   0   0   \n"
            "\tbuffer      0   0   0   0   0   0   0   0   \ntc: 0 ratelimit: unlimited, tsa: vendor\n")
    rep = parse_mlnx_qos(text)
    assert rep.trust == "pcp" and rep.dscp2prio == {} and rep.pfc == {p: False for p in range(8)}


def test_malformed_rows_are_left_out_not_guessed() -> None:
    short = SAMPLE.replace("enabled     0   0   0   1   0   0   0   0", "enabled     0   0   1")
    assert parse_mlnx_qos(short).pfc == {}
    bogus = SAMPLE.replace("enabled     0   0   0   1   0   0   0   0", "enabled     0   0   0   7   0   0   0   0")
    assert parse_mlnx_qos(bogus).pfc == {}
    assert parse_mlnx_qos("") == parse_mlnx_qos("\x00" * 100000)
    assert parse_mlnx_qos("prio:3 dscp:99,26,\n").dscp2prio == {26: 3}
