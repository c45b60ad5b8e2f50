"""The sysctls a fix may set, with the values each accepts (read by the sysctl builder and by checks)."""

from __future__ import annotations

import re

from doctor.lazyre import lazy

INT = lazy(r"\d{1,10}")
TRIPLE = lazy(r"\d{1,10} \d{1,10} \d{1,10}")
#: sysctls a fix may set, with the values each accepts
KNOWN_SYSCTLS: dict[str, re.Pattern[str]] = {
    "kernel.numa_balancing": lazy(r"[01]"),
    "vm.zone_reclaim_mode": lazy(r"[0-7]"),
    "vm.swappiness": lazy(r"\d{1,3}"),
    "net.ipv4.tcp_slow_start_after_idle": lazy(r"[01]"),
    "net.ipv4.tcp_timestamps": lazy(r"[012]"),
    "net.ipv4.tcp_sack": lazy(r"[01]"),
    "net.ipv4.tcp_window_scaling": lazy(r"[01]"),
    "net.ipv4.tcp_mtu_probing": lazy(r"[012]"),
    "net.ipv4.tcp_congestion_control": lazy(r"[a-z0-9_]{1,16}"),
    "net.core.netdev_max_backlog": INT, "net.core.somaxconn": INT, "net.core.rmem_max": INT,
    "net.core.wmem_max": INT, "net.core.rmem_default": INT, "net.core.wmem_default": INT,
    "net.core.optmem_max": INT, "net.ipv4.tcp_rmem": TRIPLE, "net.ipv4.tcp_wmem": TRIPLE,
    # per-interface sysctls (``net.ipv4.conf.<all|default|if>.<name>``), validated by their generic key
    "net.ipv4.conf.*.rp_filter": lazy(r"[012]"),
    "net.ipv4.conf.*.arp_ignore": lazy(r"[0-8]"),
    "net.ipv4.conf.*.arp_announce": lazy(r"[012]"),
}
CONF_KEY = lazy(r"net\.ipv4\.conf\.([A-Za-z0-9_][A-Za-z0-9_-]{0,14})\.(rp_filter|arp_ignore|arp_announce)")


def generic_key(key: str) -> str:
    """``net.ipv4.conf.eth0.rp_filter`` -> ``net.ipv4.conf.*.rp_filter``; other keys unchanged."""
    match = CONF_KEY.fullmatch(key)
    return f"net.ipv4.conf.*.{match.group(2)}" if match else key
