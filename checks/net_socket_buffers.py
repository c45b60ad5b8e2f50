"""net.socket_buffers: TCP buffer limits against the bandwidth-delay product of the fastest data NIC."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import serving_nic, tcp_carries_data
from doctor.derived.procs import env_value
from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import sysctl_fix
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

#: Round-trip time assumed in a rack (docs/checks.md#net-socket-buffers), seconds
RTT_IN_RACK_S = 0.0002
#: Horizon used to size recommended buffers (cross-pod RTT), seconds
RTT_RECOMMEND_S = 0.001
DEFAULT_CORE_MAX = 212992
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


@check("net.socket_buffers", "TCP socket buffers vs. NIC bandwidth-delay product", "network",
       fixes=("sysctl",),
       sysctls=("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"), needs=("sysctls",),
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
    wanted = {"net.core.rmem_max": str(target), "net.core.wmem_max": str(target),
              "net.ipv4.tcp_rmem": f"4096 87380 {target}", "net.ipv4.tcp_wmem": f"4096 65536 {target}"}
    ceiling_gbps = min(rmem[2], wmem[2]) * 8 / RTT_IN_RACK_S / 1e9
    severity = MEDIUM if carries or small_core else LOW
    observed = N_('tcp_rmem max {rmem}, tcp_wmem max {wmem}, rmem_max {core_r}, wmem_max {core_w}', rmem=rmem[2], wmem=wmem[2], core_r=core_r, core_w=core_w)
    yield Finding(
        severity, "net.ipv4.tcp_rmem" if small_tcp else "net.core.rmem_max",
        N_('TCP socket buffers too small for {name} at {gbit} Gb/s', name=nic.name, gbit=gbit),
        detail=(N_('2x the bandwidth-delay product at {RTT_IN_RACK_S} ms RTT is {v} MB. TCP carries data here: {why}.', RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"), v=format(2 * bdp / 1e6, ".1f"), why=why) if carries else
                N_('2x the bandwidth-delay product at {RTT_IN_RACK_S} ms RTT is {v} MB; this matters only for TCP traffic ({why}).', RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"), v=format(2 * bdp / 1e6, ".1f"), why=why)),
        evidence=tuple(evidence),
        expected=N_('tcp_rmem/tcp_wmem max >= {v} bytes', v=int(2 * bdp))
                 + (f"; rmem_max/wmem_max >= {join(', ', capped)}" if small_core else ""),
        observed=observed,
        impact=Impact(30 if carries else 5,
                      N_('one TCP flow is capped near {ceiling_gbps} Gb/s at {RTT_IN_RACK_S} ms RTT on a {gbit} Gb/s link', ceiling_gbps=format(ceiling_gbps, ".0f"), RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"), gbit=gbit), basis=N_('one TCP flow moves at most window / RTT (the bandwidth-delay product); window = the buffer maximum in the evidence, RTT assumed {RTT_IN_RACK_S} ms in a rack; applies to TCP traffic only', RTT_IN_RACK_S=format(RTT_IN_RACK_S * 1000, "g"))),
        fix=sysctl_fix(wanted, sysctls, "90-gnd-net-buffers.conf",
                       notes=N_('Values follow ESnet fasterdata host tuning, sized for 2x BDP at 1 ms.')),
        references=REFERENCES,
    )
