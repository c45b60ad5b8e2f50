"""Tests for doctor.parsers.sysctl."""

from __future__ import annotations

import pytest

from doctor.parsers.sysctl import parse_sysctl_a, parse_sysctl_conf

# Module docstring sample.
SYSCTL_A = (
    "net.core.rmem_max = 212992\n"
    "net.ipv4.tcp_rmem = 4096\t131072\t6291456\n"
    "sysctl: permission denied on key 'fs.protected_fifos'\n"
    "vm.swappiness = 60\n"
)

SYSCTL_D = """\
# Increase socket buffers
net.core.rmem_max = 268435456
; legacy comment style
-net.ipv4.tcp_mtu_probing = 1
"""


def test_sysctl_a_doc_sample() -> None:
    assert parse_sysctl_a(SYSCTL_A) == {
        "net.core.rmem_max": "212992",
        "net.ipv4.tcp_rmem": "4096 131072 6291456",
        "vm.swappiness": "60",
    }


def test_sysctl_a_real_variants() -> None:
    text = (
        'sysctl: reading key "net.ipv6.conf.all.stable_secret"\n'
        "kernel.core_pattern = |/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E\n"
        "kernel.domainname = (none)\n"
        "net.ipv4.conf.eth0/100.rp_filter = 2\n"
        "dev.cdrom.info = CD-ROM information, Id: cdrom.c 3.20 2003/12/17\n"
        "dev.cdrom.info = \n"
        "fs.binfmt_misc.status = enabled\n"
        "net.ipv4.ip_local_port_range = 32768\t60999\r\n"
        "kernel.sched_domain.cpu0.domain0.name = SMT\n"
        "vm.empty =\n"
    )
    d = parse_sysctl_a(text)
    assert d["kernel.core_pattern"] == "|/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E"
    assert d["net.ipv4.conf.eth0/100.rp_filter"] == "2"
    assert d["net.ipv4.ip_local_port_range"] == "32768 60999"
    assert d["dev.cdrom.info"] == ""  # last one wins
    assert d["vm.empty"] == ""
    assert not any(k.startswith("sysctl") for k in d)


def test_sysctl_conf_doc_sample() -> None:
    assert parse_sysctl_conf(SYSCTL_D) == {"net.core.rmem_max": "268435456", "net.ipv4.tcp_mtu_probing": "1"}


def test_sysctl_conf_variants() -> None:
    text = (
        "  # indented comment\n"
        "net/ipv4/ip_forward=1\n"
        "net.core.wmem_max=   134217728   \n"
        "net.ipv4.tcp_wmem = 4096 65536   134217728\n"
        "kernel.pid_max = 4194304\n"
        "kernel.pid_max = 99999\n"
        "this line has no equals sign\n"
        "= value without key\n"
    )
    d = parse_sysctl_conf(text)
    assert d == {
        "net.ipv4.ip_forward": "1",
        "net.core.wmem_max": "134217728",
        "net.ipv4.tcp_wmem": "4096 65536 134217728",
        "kernel.pid_max": "99999",
    }


@pytest.mark.parametrize("text", ["", "\x00\x01\xff", "garbage\n= =\n==\n", "net.core.rmem_max"])
def test_garbage(text: str) -> None:
    assert parse_sysctl_a(text) == {}
    assert parse_sysctl_conf(text) == {}
