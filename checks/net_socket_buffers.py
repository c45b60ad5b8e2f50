"""net.socket_buffers: TCP buffer limits against the bandwidth-delay product of the fastest data NIC."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from doctor.derived.net import serving_nic, tcp_carries_data
from doctor.derived.procs import env_value
from doctor.facts import Facts
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import sysctl_fix
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

#: Round-trip time assumed in a rack (docs/checks.md#net-socket-buffers), seconds
RTT_IN_RACK_S = 0.0002
#: Horizon used to size recommended buffers (cross-pod RTT), seconds
RTT_RECOMMEND_S = 0.001
MIN_RECOMMENDED = 67108864  # ESnet fasterdata, 10G hosts and up
MAX_RECOMMENDED = 2147483647
REFERENCES = (
    "https://docs.kernel.org/networking/ip-sysctl.html",
    "https://fasterdata.es.net/host-tuning/linux/",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
)


def _int(text: str) -> int | None:
    try:
        return int(text.strip())
    except ValueError:
        return None


def _next_pow2(n: float) -> int:
    value = 1
    while value < n:
        value <<= 1
    return value


@check("net.socket_buffers", "TCP socket buffers vs. NIC bandwidth-delay product", "network", acts="os",
       fixes=("sysctl",),
       sysctls=("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                "net.ipv4.tcp_window_scaling"), needs=("sysctls",),
       reads=reads(env=("NCCL_SOCKET_RCVBUF", "NCCL_SOCKET_SNDBUF")))
def socket_buffers(facts: Facts) -> Iterator[Finding]:
    """tcp_rmem/tcp_wmem maximum below 2x the BDP of the fastest data NIC (medium when TCP carries data).

    Autotuning is capped by tcp_rmem[2]/tcp_wmem[2]; rmem_max/wmem_max cap explicit SO_RCVBUF/SO_SNDBUF
    (NCCL_SOCKET_RCVBUF). A single TCP flow cannot exceed buffer / RTT.
    """
    data = serving_nic(facts)
    if data is None:
        return
    nic = data.netdev
    gbit = (nic.speed_mbps or 0) // 1000
    speed_bps = (nic.speed_mbps or 0) * 1_000_000
    bdp = speed_bps * RTT_IN_RACK_S / 8
    sysctls = facts.sysctls
    rmem, wmem = sysctls.get_ints("net.ipv4.tcp_rmem"), sysctls.get_ints("net.ipv4.tcp_wmem")
    core_r, core_w = sysctls.get_int("net.core.rmem_max"), sysctls.get_int("net.core.wmem_max")
    if not rmem or not wmem or len(rmem) < 3 or len(wmem) < 3:
        yield Finding(UNKNOWN, "node", N_('TCP buffer sysctls not recorded'),
                      detail=N_('net.ipv4.tcp_rmem/tcp_wmem are missing from this source'))
        return
    carries, why = tcp_carries_data(facts)
    evidence = [Evidence(nic.origin + "/speed", f"{nic.speed_mbps} Mb/s ({nic.name})")]
    if sysctls.get_int("net.ipv4.tcp_window_scaling") == 0 and speed_bps:
        yield _no_window_scaling(facts, nic.name, gbit, speed_bps, carries, why, evidence)
    for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max", "net.core.wmem_max"):
        if sysctls.get(key) is not None:
            evidence.append(Evidence(sysctls.origins.get(key, "sysctl"), str(sysctls.get(key))))
    small_tcp = min(rmem[2], wmem[2]) < 2 * bdp
    # rmem_max/wmem_max cap only an explicit SO_RCVBUF/SO_SNDBUF (NCCL_SOCKET_RCVBUF/SNDBUF), not autotuning
    capped = []
    for name, limit in (("NCCL_SOCKET_RCVBUF", core_r), ("NCCL_SOCKET_SNDBUF", core_w)):
        setting = env_value(facts, name)
        value = _int(setting.value) if setting else None
        if value is not None and limit is not None and value > limit:
            capped.append(f"{name}={value}")
    small_core = bool(capped)
    if not small_tcp and not small_core:
        yield Finding(PASS, "node", N_('TCP buffers cover 2x BDP of {name} ({gbit} Gb/s)', name=nic.name, gbit=gbit),
                      evidence=tuple(evidence))
        return
    target = min(MAX_RECOMMENDED, max(MIN_RECOMMENDED, _next_pow2(2 * speed_bps * RTT_RECOMMEND_S / 8)))
    wanted = _raise_only(target, rmem, wmem, core_r, core_w, small_tcp, small_core)
    window = min(rmem[2], wmem[2]) if small_tcp else min(x for x in (core_r, core_w) if x is not None)
    ceiling_gbps = window * 8 / RTT_IN_RACK_S / 1e9
    if ceiling_gbps >= gbit:
        reach = window * 8 / speed_bps * 1000 if speed_bps else 0
        flow = N_("one TCP flow reaches {gbit} Gb/s only while the RTT stays under {reach} ms (no headroom for "
                  "cross-rack paths or queueing)", gbit=gbit, reach=format(reach, ".2g"))
    else:
        flow = N_("one TCP flow is capped near {ceiling} Gb/s at {rtt} ms RTT on a {gbit} Gb/s link",
                  ceiling=format(ceiling_gbps, ".0f"), rtt=format(RTT_IN_RACK_S * 1000, "g"), gbit=gbit)
    severity = MEDIUM if carries or small_core else LOW
    observed = N_('tcp_rmem max {rmem}, tcp_wmem max {wmem}, rmem_max {core_r}, wmem_max {core_w}', rmem=rmem[2], wmem=wmem[2], core_r=core_r, core_w=core_w)
    yield Finding(
        severity, "net.ipv4.tcp_rmem" if small_tcp else "net.core.rmem_max",
        N_('TCP socket buffers too small for {name} at {gbit} Gb/s', name=nic.name, gbit=gbit),
        detail=(N_('2x the bandwidth-delay product at {RTT_IN_RACK_S} ms RTT is {v} MB. TCP carries data here: {why}.', RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"), v=format(2 * bdp / 1e6, ".1f"), why=why) if carries else
                N_('2x the bandwidth-delay product at {RTT_IN_RACK_S} ms RTT is {v} MB; this matters only for TCP traffic ({why}).', RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"), v=format(2 * bdp / 1e6, ".1f"), why=why)),
        evidence=tuple(evidence),
        expected=N_('tcp_rmem/tcp_wmem max >= {v} bytes', v=int(2 * bdp))
                 + (N_('; rmem_max/wmem_max >= {v}', v=join(', ', capped)) if small_core else ""),
        observed=observed,
        impact=Impact((30 if ceiling_gbps < gbit else 10) if carries else 5, flow,
                      basis=(N_('one TCP flow moves at most window / RTT (the bandwidth-delay product) and never more than the link rate; window = {window} bytes (the {v}), RTT assumed {v2} ms in a rack; applies to TCP traffic only', window=window, v=N_('autotuning maximum') if small_tcp else N_('rmem_max/wmem_max clamp of an explicit buffer'), v2=format(RTT_IN_RACK_S * 1000, 'g')))),
        fix=sysctl_fix(wanted, sysctls, "90-gnd-net-buffers.conf",
                       notes=N_('Values follow ESnet fasterdata host tuning, sized for 2x BDP at 1 ms.')),
        references=REFERENCES,
    )


def _raise_only(target: int, rmem: Sequence[int], wmem: Sequence[int], core_r: int | None,
                core_w: int | None, small_tcp: bool, small_core: bool) -> dict[str, str]:
    """The sysctls to set: only those that are short, each raised to ``target`` and never lowered (a
    healthy 2 GiB tcp_rmem maximum stays when only rmem_max is short); min and default of the triples kept."""
    wanted: dict[str, str] = {}
    if small_tcp:
        for key, triple in (("net.ipv4.tcp_rmem", rmem), ("net.ipv4.tcp_wmem", wmem)):
            if triple[2] < target:
                wanted[key] = f"{triple[0]} {triple[1]} {target}"
    if small_core or small_tcp:
        for key, value in (("net.core.rmem_max", core_r), ("net.core.wmem_max", core_w)):
            if value is None or value < target:
                wanted[key] = str(target)
    return wanted


#: kernel ip-sysctl.rst: "tcp_window_scaling - BOOLEAN. Enable window scaling as defined in RFC1323."
#: Without the option the 16-bit window field caps the receive window at 65535 bytes (RFC 7323, section 2).
NO_SCALING_WINDOW = 65535


def _no_window_scaling(facts: Facts, name: str, gbit: int, speed_bps: int, carries: bool, why: str,
                       evidence: list[Evidence]) -> Finding:
    ceiling = min(NO_SCALING_WINDOW * 8 / RTT_IN_RACK_S / 1e9, gbit)
    return Finding(
        HIGH if carries else LOW, "net.ipv4.tcp_window_scaling",
        N_('TCP window scaling is off: every TCP flow is capped near {ceiling} Gb/s on {name} ({gbit} Gb/s)', ceiling=format(ceiling, '.1f'), name=name, gbit=gbit),
        detail=(N_('net.ipv4.tcp_window_scaling=0: the kernel does not offer the RFC 7323 window-scale option, so a TCP window cannot exceed 64 KiB whatever tcp_rmem/tcp_wmem allow. ')
                + (N_("TCP carries data here ({why}): NCCL's socket transport and KV-cache transfer over TCP are limited per connection.", why=why) if carries else
                   N_("RDMA carries the data ({why}); this limits NCCL's bootstrap, model downloads and any socket fallback.", why=why))),
        evidence=tuple(evidence) + (Evidence(facts.sysctls.origins.get("net.ipv4.tcp_window_scaling", "sysctl"),
                                             "net.ipv4.tcp_window_scaling = 0"),),
        expected=N_('net.ipv4.tcp_window_scaling = 1 (the kernel default)'), observed="0",
        impact=Impact(60 if carries else 5, N_('one TCP flow moves at most {ceiling} Gb/s at {v} ms RTT', ceiling=format(ceiling, '.1f'), v=format(RTT_IN_RACK_S * 1000, 'g')),
                      basis=(N_('kernel ip-sysctl documentation: tcp_window_scaling enables "window scaling as defined in RFC1323"; without it the window field holds at most 65535 bytes, and a flow moves at most window / RTT (RTT assumed {v} ms)', v=format(RTT_IN_RACK_S * 1000, 'g')))),
        fix=sysctl_fix({"net.ipv4.tcp_window_scaling": "1"}, facts.sysctls, "90-gnd-tcp-window-scaling.conf",
                       notes=N_('Re-enable window scaling (the kernel default); it applies to new connections.')),
        references=REFERENCES + ("https://www.rfc-editor.org/rfc/rfc7323#section-2",))
