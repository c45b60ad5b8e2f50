"""Kernel log parsing: NVRM Xid lines and the kernel's PCIe bandwidth line, in the formats hosts print."""

from __future__ import annotations

import pytest

from doctor.facts.kernel_log import _why_missing, build_kernel_log, parse_kernel_log, xid_address
from doctor.sources import SosreportSource
from doctor.sources.tree import OverlayTree
from tests.helpers import empty_tree, source

# Formats seen in bug reports: plain dmesg, `dmesg -T`, `journalctl -k`, old drivers without pid/name.
DMESG = """\
[    0.499779] pci 0000:01:00.0: 7.876 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x1 link at 0000:00:00.0 (capable of 126.016 Gb/s with 8.0 GT/s PCIe x16 link)
[    3.112233] pci 0000:0b:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link at 0000:00:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)
[    3.400000] pci 0000:c1:00.0: 504.112 Gb/s available PCIe bandwidth, limited by 64.0 GT/s PCIe x8 link at 0000:c0:01.1 (capable of 1008.224 Gb/s with 64.0 GT/s PCIe x16 link), in Flit mode
[ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter
Feb 14 05:03:41 gpu-1 kernel: NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error
[24128.834365] NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000
[99999.000001] NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000)
"""


def test_xid_lines_in_every_prefix_format() -> None:
    xids, _ = parse_kernel_log(DMESG)
    assert [(x.address, x.xid, x.timestamp) for x in xids] == [
        ("0000:3b:00.0", 79, "1843.308145"),
        ("0000:cb:00.0", 13, "Fri Aug 30 11:43:09 2024"),
        ("0000:9b:00.0", 94, "Feb 14 05:03:41"),
        ("0000:01:00.0", 31, "24128.834365"),
        ("0019:01:00.0", 149, "99999.000001"),
    ]
    assert xids[0].text == "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus."


# `dmesg -x --time-format=iso` (facility and level first), as kept in leptonai/gpud
# components/memory/testdata/dmesg.decode.iso.log (Apache-2.0), and the same decode prefix before a bracketed stamp.
DECODED = (
    "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, pid='<unknown>', "
    "name=<unknown>, Graphics SM Global Exception on (GPC 8, TPC 5, SM 1): Multiple Warp Errors\n"
    "kern  :err   : [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
)


def test_decoded_iso_dmesg_keeps_its_timestamps() -> None:
    xids, _ = parse_kernel_log(DECODED)
    assert [(x.address, x.xid, x.timestamp) for x in xids] == [
        ("0000:38:00.0", 13, "2025-01-21T04:41:44,283302+00:00"), ("0000:3b:00.0", 79, "1843.308145")]


def test_bandwidth_lines_name_the_limiting_link() -> None:
    _, bw = parse_kernel_log(DMESG)
    first, second, flit = bw
    assert (first.address, first.limit_speed, first.limit_width, first.limited_at) == ("0000:01:00.0", 8.0, 1,
                                                                                        "0000:00:00.0")
    assert (second.available_gbps, second.capable_gbps, second.capable_speed, second.capable_width) == (
        126.016, 252.048, 16.0, 16)
    assert second.limited_at == "0000:00:03.1" and not second.flit
    assert flit.flit and flit.limit_width == 8 and flit.text.endswith("in Flit mode")


@pytest.mark.parametrize("raw,expected", [("0000:3B:00", "0000:3b:00.0"), ("0000:3b:00.1", "0000:3b:00.1"),
                                          ("00000000:18:00", "0000:18:00.0"), ("3b:00", "0000:3b:00.0"),
                                          ("zz", "zz")])
def test_xid_address_gets_a_function(raw: str, expected: str) -> None:
    assert xid_address(raw) == expected


@pytest.mark.parametrize("text", ["", "\x00\xff garbage", "NVRM: Xid (PCI:): x", "NVRM: Xid (PCI:0000:3b:00): ",
                                  "pci 0000:01:00.0: nan Gb/s available PCIe bandwidth, limited by",
                                  "NVRM: Xid (PCI:0000:3b:00): 99999999999999999999, boom"])
def test_garbage_never_raises(text: str) -> None:
    assert parse_kernel_log(text) == ((), ())


def test_sosreport_dmesg_is_read() -> None:
    src = SosreportSource(OverlayTree(empty_tree(), {"sos_commands/kernel/dmesg": DMESG}), "<sos>")
    log = build_kernel_log(src)
    assert log.readable and log.origin == "sos_commands/kernel/dmesg"
    assert [x.xid for x in log.xids_of("0000:3b:00.0")] == [79]
    assert log.bandwidth_of("0000:0b:00.0") is not None


def test_snapshot_without_dmesg_says_why() -> None:
    log = build_kernel_log(source({}, base=None))
    assert not log.readable and log.missing == "commands/dmesg not in this snapshot"


def test_refused_dmesg_names_dmesg_restrict() -> None:
    refused = "dmesg failed: dmesg: read kernel buffer failed: Operation not permitted"
    for as_root in (False, None):
        assert "kernel.dmesg_restrict=1" in _why_missing(refused, as_root)
    assert "dmesg_restrict" not in _why_missing("dmesg not found on PATH", False)
    # root refused: telling root to run as root helps nobody
    assert "run as root" not in _why_missing(refused, True) and "even as root" in _why_missing(refused, True)
