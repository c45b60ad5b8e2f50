"""net.link: data NICs that are down, slower than identical peers, or at MTU 1500 on 100G+ RoCE."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from doctor.derived.net import DataNic, data_nics
from doctor.derived.procs import env_value
from doctor.derived.rdma import parse_list
from doctor.facts import Facts
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, Actor, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.reads import reads
from doctor.registry import check

#: At or above this speed (Mb/s) a 1500-byte MTU on a RoCE/data NIC is worth a note.
JUMBO_SPEED_MBPS = 100000
JUMBO_MTU = 9000
#: Identical NICs running faster needed to call a slower one degraded (a lone pair is ambiguous).
MIN_FASTER_PEERS = 2
REFERENCES = (
    "https://docs.kernel.org/networking/ip-sysctl.html",
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net",
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/ethernet+network",
)


def _named_by_nccl(facts: Facts, nic: DataNic) -> str | None:
    hca = env_value(facts, "NCCL_IB_HCA")
    if hca is not None:
        lst = parse_list(hca.value)
        if not lst.exclude and any(lst.matches(p.device, p.port) for p in nic.rdma):
            return f"NCCL_IB_HCA={hca.value}"
    ifname = env_value(facts, "NCCL_SOCKET_IFNAME")
    if ifname is not None:
        lst = parse_list(ifname.value)
        if not lst.exclude and lst.matches(nic.name):
            return f"NCCL_SOCKET_IFNAME={ifname.value}"
    return None


def _second_port(nics: list[DataNic], nic: DataNic) -> bool:
    """A later function of a multi-port card whose other port is up: often simply not cabled."""
    addr = nic.netdev.pci_address or ""
    if addr.endswith(".0"):
        return False
    base = addr.rsplit(".", 1)[0]
    return any((n.netdev.pci_address or "").startswith(base + ".") and n.netdev.speed_mbps for n in nics
               if n is not nic)


def _down(nic: DataNic) -> bool:
    nd = nic.netdev
    if nd.carrier is False or (nd.operstate or "").lower() in ("down", "lowerlayerdown"):
        return True
    return bool(nic.rdma) and all(not p.active for p in nic.rdma) and nd.speed_mbps is None


@check("net.link", "Data NIC link state, speed and MTU", "network", acts="hardware", fixes=("link_up", "link_autoneg", "link_mtu"),
       needs=("netdevs", "rdma"),
       reads=reads(env=("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME")))
def link(facts: Facts) -> Iterator[Finding]:
    """A data NIC down (high when NCCL is told to use it or its identical rails are up), slower than two
    or more identical peers (high), MTU 1500 on a 100G+ RoCE/data NIC (low), MTU unlike its peers (medium).
    """
    nics = data_nics(facts)
    if not nics:
        return
    by_model: dict[tuple[int | None, int | None], list[DataNic]] = {}
    for nic in nics:
        by_model.setdefault(nic.model, []).append(nic)
    found = False
    for nic in nics:
        nd = nic.netdev
        peers = [p for p in by_model.get(nic.model, []) if p is not nic and nic.model != (None, None)]
        up_peers = [p for p in peers if p.netdev.speed_mbps]
        evidence = [Evidence(f"{nd.origin}/operstate", nd.operstate or "?"),
                    Evidence(f"{nd.origin}/speed", str(nd.speed_mbps) if nd.speed_mbps else "-1 / unreadable"),
                    Evidence(f"{nd.origin}/mtu", str(nd.mtu))]
        evidence += [Evidence(f"{p.origin}/state", p.state or "?") for p in nic.rdma]
        if _down(nic):
            named = _named_by_nccl(facts, nic)
            rail = len(up_peers) >= MIN_FASTER_PEERS and not _second_port(nics, nic)
            if named or rail:
                found = True
                why = N_('NCCL is told to use it ({named})', named=named) if named else \
                    N_('{n_up_peers} identical NICs on this node are up (one rail per GPU)', n_up_peers=len(up_peers))
                yield Finding(
                    HIGH, nd.name, N_('data NIC {name} link is down', name=nd.name),
                    detail=(N_('{name} ({pci_address}) has no link: {why}. Its rail carries nothing; the GPUs next to it go through a farther NIC.', name=nd.name, pci_address=nd.pci_address, why=why)),
                    evidence=tuple(evidence), expected=N_('operstate up, carrier 1'), observed=N_('operstate {operstate}', operstate=nd.operstate),
                    impact=Impact(40, N_('one rail fewer of inter-node bandwidth'), basis=N_('a rail that is down carries nothing; NCCL spreads the traffic over the remaining rails')),
                    fix=make("link_up", netdev=nd.name,
                            notes=N_('Check cable, transceiver and switch port (mlxlink -d <pci> shows the physical state).')),
                    references=REFERENCES, related=tuple(p.name for p in nic.rdma))
            else:
                yield Finding(INFO, nd.name, N_('NIC {name} has no link (not known to be in use)', name=nd.name),
                              evidence=tuple(evidence))
            continue
        speed = nd.speed_mbps
        faster = [p for p in up_peers if (p.netdev.speed_mbps or 0) > (speed or 0)]
        if speed and len(faster) >= MIN_FASTER_PEERS:
            found = True
            top = Counter(p.netdev.speed_mbps for p in faster).most_common(1)[0][0] or 0
            yield Finding(
                HIGH, nd.name, N_('{name} negotiated {speed} Gb/s; identical NICs run {top} Gb/s', name=nd.name, speed=speed // 1000, top=top // 1000),
                detail=(N_('{n_faster} NICs of the same model on this node negotiated {top} Gb/s. A lower speed means a bad cable/transceiver, a forced speed, or a switch port configured lower.', n_faster=len(faster), top=top // 1000)),
                evidence=tuple(evidence + [Evidence(f"{p.netdev.origin}/speed", str(p.netdev.speed_mbps))
                                           for p in faster[:3]]),
                expected=N_('{top} Mb/s', top=top), observed=N_('{speed} Mb/s', speed=speed),
                impact=Impact(min(90.0, 100 * (1 - speed / top)), N_('{v}% of this rail lost', v=format(100 * (1 - speed / top), ".0f")), basis=N_('sysfs speed {speed} Mb/s against {top} Mb/s on identical NICs of this node; applies to traffic on this rail', speed=speed, top=top)),
                fix=make("link_autoneg", netdev=nd.name,
                        rollback=(),
                        notes=N_("If autonegotiation is already on, check the cable/transceiver and switch port speed; `mlxlink -d <pci>` shows the cable's supported speeds.")),
                references=REFERENCES, related=tuple(p.name for p in nic.rdma))
        roce = any((p.link_layer or "").lower() == "ethernet" for p in nic.rdma)
        if nd.mtu is None or (nic.rdma and not roce):
            continue  # InfiniBand netdevs (IPoIB) have their own MTU rules
        peer_mtus = Counter(p.netdev.mtu for p in up_peers if p.netdev.mtu)
        common = peer_mtus.most_common(1)[0][0] if peer_mtus else None
        if common is not None and len(up_peers) >= MIN_FASTER_PEERS and nd.mtu != common \
                and peer_mtus[common] >= MIN_FASTER_PEERS:
            found = True
            yield Finding(
                MEDIUM, nd.name, N_('{name} MTU {mtu} differs from its identical peers ({common})', name=nd.name, mtu=nd.mtu, common=common),
                detail=N_('Rails of one fabric must share an MTU; RoCE active_mtu follows the netdev MTU.'),
                evidence=tuple(evidence), expected=N_('MTU {common}', common=common), observed=N_('MTU {mtu}', mtu=nd.mtu),
                impact=Impact(15, N_('smaller RoCE MTU or fragmentation on this rail'), basis=N_('RoCE uses the largest IB MTU that fits the netdev MTU (4096 needs at least 4200); every peer and switch port must match')),
                fix=make("link_mtu", netdev=nd.name, mtu=common, previous=nd.mtu,
                        notes=N_('Persist in netplan/NetworkManager; the switch ports must match.')),
                references=REFERENCES, acts=Actor.OS)  # the MTU is the node's network configuration
        elif nd.mtu <= 1500 and (speed or 0) >= JUMBO_SPEED_MBPS:
            found = True
            yield Finding(
                LOW, nd.name, N_('{name} runs MTU {mtu} at {v} Gb/s', name=nd.name, mtu=nd.mtu, v=(speed or 0) // 1000),
                detail=(N_('With a 1500-byte netdev MTU RoCE uses active_mtu 1024 instead of 4096, and TCP needs 6x the packets; jumbo frames need the switch ports configured to match.')),
                evidence=tuple(evidence), expected=N_('MTU {JUMBO_MTU} (fabric permitting)', JUMBO_MTU=JUMBO_MTU), observed=N_('MTU {mtu}', mtu=nd.mtu),
                impact=Impact(5, N_('more per-packet overhead'), basis=N_('a 1500-byte MTU carries about 1448 bytes of TCP payload per packet against about 8948 at 9000: more packets and interrupts per byte')),
                fix=make("link_mtu", netdev=nd.name, mtu=JUMBO_MTU, previous=nd.mtu,
                        notes=N_('Persist in netplan/NetworkManager only after the switches allow 9000.')),
                references=REFERENCES, acts=Actor.OS)
    if not found:
        up = [n for n in nics if n.netdev.speed_mbps]
        if up:
            yield Finding(PASS, "node", N_('{n_up} data NIC(s) up at expected speed and MTU', n_up=len(up)),
                          evidence=tuple(Evidence(f"{n.netdev.origin}/speed", f"{n.name} {n.netdev.speed_mbps}")
                                         for n in up))
