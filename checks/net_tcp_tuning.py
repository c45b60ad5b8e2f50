"""net.tcp_tuning: TCP sysctls that hurt fast, bursty transfers (slow start after idle, backlog, somaxconn)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import serving_nic, tcp_carries_data
from doctor.derived.procs import server_roots
from doctor.facts import Facts
from doctor.findings import LOW, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import sysctl_fix
from doctor.i18n import N_
from doctor.registry import check

#: NICs at or above this speed (Mb/s) need a deeper backlog than the 1000 default.
FAST_NIC_MBPS = 100000
#: netdev_max_backlog below this on a 100G+ NIC is reported (Mellanox tuning guides use 250000).
MIN_BACKLOG = 10000
RECOMMENDED_BACKLOG = 250000
#: somaxconn below this on an API front end is reported (the default was 128 before kernel 5.4).
MIN_SOMAXCONN = 1024
RECOMMENDED_SOMAXCONN = 4096
REFERENCES = (
    "https://docs.kernel.org/networking/ip-sysctl.html",
    "https://docs.kernel.org/admin-guide/sysctl/net.html",
    "https://fasterdata.es.net/host-tuning/linux/",
)


@check("net.tcp_tuning", "TCP slow start after idle, backlog, accept queue", "network", acts="os",
       fixes=("sysctl",),
       sysctls=("net.ipv4.tcp_slow_start_after_idle", "net.core.netdev_max_backlog", "net.core.somaxconn"), needs=("sysctls",))
def tcp_tuning(facts: Facts) -> Iterator[Finding]:
    """``tcp_slow_start_after_idle=1`` where TCP moves bursty data on fast NICs, ``netdev_max_backlog`` below
    10000 on 100G+ NICs, ``somaxconn`` below 1024 on an inference API front end: each low.
    """
    nic = serving_nic(facts)
    servers = server_roots(facts)
    if nic is None and not servers:
        return
    sysctls = facts.sysctls
    keys = ("net.ipv4.tcp_slow_start_after_idle", "net.core.netdev_max_backlog", "net.core.somaxconn")
    if all(sysctls.get(k) is None for k in keys):
        yield Finding(UNKNOWN, "node", N_('TCP sysctls not recorded'),
                      detail=N_('tcp_slow_start_after_idle, netdev_max_backlog and somaxconn are missing from this source'))
        return
    speed = nic.netdev.speed_mbps or 0 if nic else 0
    carries, why = tcp_carries_data(facts)
    found = False

    def ev(key: str) -> Evidence:
        return Evidence(sysctls.origins.get(key, "sysctl"), f"{key} = {sysctls.get(key)}")

    slow = sysctls.get_int("net.ipv4.tcp_slow_start_after_idle")
    if slow == 1 and nic is not None and (carries or speed >= FAST_NIC_MBPS):
        found = True
        yield Finding(
            LOW, "net.ipv4.tcp_slow_start_after_idle", N_('TCP restarts slow start after every idle period'),
            detail=(N_('Long-lived connections that send in bursts (KV-cache transfer, RPC, NCCL socket transport) fall back to a small congestion window after each pause. TCP carries data here: {why}.', why=why)
                    if carries else N_('Long-lived bursty connections fall back to a small congestion window after each pause; this matters when TCP carries KV-cache or NCCL traffic.')),
            evidence=(ev("net.ipv4.tcp_slow_start_after_idle"),), expected="0", observed="1",
            impact=Impact(5, N_('first round trips of each burst run far below line rate'), basis=N_('Linux tcp_slow_start_after_idle (RFC 5681 section 4.1): after an idle period the congestion window restarts from the initial window')),
            fix=sysctl_fix({"net.ipv4.tcp_slow_start_after_idle": "0"}, sysctls, "90-gnd-tcp-slow-start.conf"), references=REFERENCES)
    backlog = sysctls.get_int("net.core.netdev_max_backlog")
    if backlog is not None and backlog < MIN_BACKLOG and speed >= FAST_NIC_MBPS and nic is not None:
        found = True
        yield Finding(
            LOW, "net.core.netdev_max_backlog", N_('netdev_max_backlog {backlog} is small for {name} at {speed} Gb/s', backlog=backlog, name=nic.name, speed=speed // 1000),
            detail=N_('Packets beyond the per-CPU input queue are dropped (column 2 of /proc/net/softnet_stat grows).'),
            evidence=(ev("net.core.netdev_max_backlog"), Evidence(f"{nic.netdev.origin}/speed", str(speed))),
            expected=N_('>= {MIN_BACKLOG} (tuning guides use {RECOMMENDED_BACKLOG})', MIN_BACKLOG=MIN_BACKLOG, RECOMMENDED_BACKLOG=RECOMMENDED_BACKLOG), observed=str(backlog),
            impact=Impact(3, N_('drops and retransmits under TCP bursts'), basis=N_('kernel networking sysctl documentation: packets beyond netdev_max_backlog per CPU are dropped')),
            fix=sysctl_fix({"net.core.netdev_max_backlog": str(RECOMMENDED_BACKLOG)}, sysctls,
                           "90-gnd-tcp-backlog.conf"),
            references=REFERENCES)
    somax = sysctls.get_int("net.core.somaxconn")
    if somax is not None and somax < MIN_SOMAXCONN and servers:
        found = True
        yield Finding(
            LOW, "net.core.somaxconn", N_("somaxconn {somax} limits the API server's accept queue", somax=somax),
            detail=N_('{n_servers} inference server(s) accept client connections; bursts beyond the queue are refused.', n_servers=len(servers)),
            evidence=(ev("net.core.somaxconn"),), expected=N_('>= {MIN_SOMAXCONN}', MIN_SOMAXCONN=MIN_SOMAXCONN), observed=str(somax),
            impact=Impact(2, N_('connection resets under load spikes'), basis=N_('connections beyond the listen backlog (capped by somaxconn) are dropped or reset')),
            fix=sysctl_fix({"net.core.somaxconn": str(RECOMMENDED_SOMAXCONN)}, sysctls, "90-gnd-tcp-somaxconn.conf"), references=REFERENCES)
    if not found:
        yield Finding(PASS, "node", N_('TCP slow start, backlog and accept queue suit this node'),
                      evidence=tuple(ev(k) for k in keys if sysctls.get(k) is not None))
