"""rdma.mtu: a RoCE port's active_mtu below what its interface MTU allows.

See docs/checks.md#rdma-mtu.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.rdma import roce_ports
from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

IB_MTUS = (256, 512, 1024, 2048, 4096)
#: RoCE v2 headers the kernel subtracts from the netdev MTU (include/rdma/ib_addr.h iboe_get_mtu:
#: GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + AtomicETH 28 + ICRC 4)
ROCE_OVERHEAD = 96
REFERENCES = (
    "https://github.com/torvalds/linux/blob/master/include/rdma/ib_addr.h",
    "https://github.com/linux-rdma/rdma-core/blob/master/libibverbs/examples/devinfo.c",
)
NOTES = (N_("A RoCE port's active_mtu follows its interface's MTU (the largest IB MTU that fits after the RoCE headers). A lower value comes from a port maximum below 4096, from a bond or VLAN upper device with a smaller MTU, or from an MTU change the RDMA driver did not pick up: set the MTU on the right device and restart the RDMA users. NCCL sizes its messages by the active_mtu."))


def allowed_mtu(netdev_mtu: int) -> int | None:
    """The largest IB MTU a netdev MTU carries (iboe_get_mtu): 1500 -> 1024, 9000 -> 4096."""
    fits = [m for m in IB_MTUS if m <= netdev_mtu - ROCE_OVERHEAD]
    return fits[-1] if fits else None


@check("rdma.mtu", "RoCE active_mtu vs. interface MTU", "rdma", acts="os", fixes=("rdma_show",), needs=("netdevs", "rdma"))
def rdma_mtu(facts: Facts) -> Iterator[Finding]:
    """``active_mtu`` (``ibv_devinfo -v``) below the IB MTU the interface MTU allows (medium); unknown when
    ``ibv_devinfo -v`` is not recorded. A small interface MTU itself is net.link's finding."""
    ports = roce_ports(facts)
    if not ports:
        return
    table = facts.active_mtu
    if table.missing is not None:
        yield Finding(UNKNOWN, "node", N_('RoCE active_mtu not recorded'),
                      detail=N_("{missing}: the ports' active MTU cannot be compared with their interfaces'.", missing=table.missing),
                      evidence=(Evidence(table.origin, table.missing),), references=REFERENCES)
        return
    good = 0
    for rp in ports:
        active = table.by_port.get(rp.port.name)
        want = allowed_mtu(rp.netdev.mtu) if rp.netdev.mtu else None
        if active is None or want is None:
            continue
        if active >= want:
            good += 1
            continue
        name = rp.netdev.name
        yield Finding(
            MEDIUM, rp.port.name, N_('{name} runs active_mtu {active}; {name2} MTU {mtu} allows {want}', name=rp.port.name, active=active, name2=name, mtu=rp.netdev.mtu, want=want),
            detail=(N_("The largest IB MTU that fits in {name}'s MTU after the RoCE headers is {want}; the port runs {active}, so every message is cut into {want2}x more packets.", name=name, want=want, active=active, want2=want // active)),
            evidence=(Evidence(table.origin, f"{rp.port.name} active_mtu {active}"),
                      Evidence(f"{rp.netdev.origin}/mtu", str(rp.netdev.mtu))),
            expected=N_('active_mtu {want}', want=want), observed=N_('active_mtu {active}', active=active),
            impact=Impact(10 if want // active <= 2 else 20, N_('{want}x more packets per message', want=want // active),
                          basis=N_('packets per message scale with 1/active_mtu (kernel iboe_get_mtu: the netdev MTU allows a larger one)')),
            fix=make("rdma_show", NOTES, device=rp.port.device, port=rp.port.port),
            references=REFERENCES, related=(name,))
    if good:
        yield Finding(PASS, "node", N_('{good} RoCE port(s) at the active_mtu their interface allows', good=good))
