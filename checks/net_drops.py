"""net.drops: RoCE drop and sequence-error counters that are not zero.

See docs/checks.md#net-drops.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.rdma import roce_ports
from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, UNKNOWN, Actor, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: counters that mean packets of an RDMA connection were lost in the fabric (go-back-N retransmission)
LOSS_COUNTERS = ("out_of_sequence", "packet_seq_err")
#: a receive queue without posted buffers: the NIC dropped what arrived (the application was slow)
BUFFER_COUNTERS = ("out_of_buffer",)
#: ethtool -S (mlx5): the port's receive buffer overflowed (no working PFC on that traffic) -- loss, medium
ETHTOOL_LOSS = ("rx_discards_phy",)
#: ethtool -S (mlx5): no receive buffer posted on an Ethernet ring -- low
ETHTOOL_BUFFER = ("rx_out_of_buffer",)
REFERENCES = (
    "https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-parameters",
    "https://docs.kernel.org/infiniband/user_verbs.html",
    "https://github.com/sosreport/sos/blob/main/sos/report/plugins/roce.py",
)
NOTES = (N_("The counters are cumulative since the driver loaded: read them twice under load to see whether they still grow. Growing sequence errors mean loss in the fabric (PFC or DCQCN not working on NCCL's priority); a growing out_of_buffer means receive queues ran dry. ethtool -S shows the NIC-level drops (rx_discards_phy: the port's buffer overflowed, rx_out_of_buffer)."))


@check("net.drops", "RoCE drop and sequence-error counters", "network", acts="hardware", fixes=("rdma_counters_show",),
       needs=("netdevs", "rdma"))
def drops(facts: Facts) -> Iterator[Finding]:
    """``out_of_sequence``/``packet_seq_err`` (hw_counters) or ``rx_discards_phy`` (``ethtool -S``: run per RoCE
    interface live, ``commands/ethtool_-S_<if>`` in snapshots, sosreports) above
    zero on an active RoCE port (medium), ``out_of_buffer``/``rx_out_of_buffer`` alone (low); unknown when
    neither source is recorded."""
    ports = roce_ports(facts)
    if not ports:
        return
    clean, unrecorded = [], []
    for rp in ports:
        counters = facts.rdma_counters.get(rp.port.name)
        ethtool = facts.ethtool_stats.get(rp.netdev.name)
        seen: dict[str, tuple[int, str]] = {}  # counter -> (value, file)
        if counters is not None:
            seen.update({c: (counters.values[c], f"{counters.origin}/{c}") for c in LOSS_COUNTERS + BUFFER_COUNTERS
                         if c in counters.values})
        if ethtool is not None:
            seen.update({c: (ethtool.values[c], ethtool.origin) for c in ETHTOOL_LOSS + ETHTOOL_BUFFER
                         if c in ethtool.values})
        if not seen:
            unrecorded.append(rp.port.name)
            continue
        hits = {c: v for c, (v, _) in seen.items() if v > 0}
        if not hits:
            clean.append(rp.port.name)
            continue
        loss = any(c in LOSS_COUNTERS + ETHTOOL_LOSS for c in hits)
        name = rp.netdev.name
        yield Finding(
            MEDIUM if loss else LOW, name,
            N_("{port} ({name}) counted {counters}", port=rp.port.name, name=name,
               counters=", ".join(f"{c} {v}" for c, v in hits.items())),
            detail=(N_("RoCE packets were lost (sequence errors: the sender went back and resent the window; rx_discards_phy: the port's buffer overflowed); on a lossless fabric these stay at zero. The counters are cumulative since the driver loaded.") if loss else
                    N_('The receive queue had no buffer posted when packets arrived, so the NIC dropped them. The counter is cumulative since the driver loaded.')),
            evidence=tuple(Evidence(where, f"{c} {v}") for c, (v, where) in seen.items()),
            expected=N_('0 for {counters}', counters=join(', ', seen)), observed=join(', ', (f"{c}={v}" for c, v in hits.items())),
            impact=Impact(25 if loss else 5, N_('retransmissions stall NCCL collectives and KV transfers'),
                          basis=N_("RoCE go-back-N: a sequence error resends the whole window; the counters' values are in the evidence")),
            fix=make("rdma_counters_show", NOTES, device=rp.port.device, port=rp.port.port, netdev=name),
            references=REFERENCES, related=(rp.port.name,),
            # loss is the fabric's (cabling, PFC/ECN on the switches); empty receive queues the host's own
            acts=None if loss else Actor.OS)
    if unrecorded and not clean:
        yield Finding(UNKNOWN, "node", N_('RoCE drop counters not recorded'),
                      detail=(N_('No hw_counters for {unrecorded}{v} (sys/class/infiniband/<dev>/ports/<n>/hw_counters).', unrecorded=join(', ', unrecorded[:4]), v=', ...' if len(unrecorded) > 4 else '')), references=REFERENCES)
    elif clean:
        yield Finding(PASS, "node", N_('no drop or sequence error on {n_clean} RoCE port(s)', n_clean=len(clean)))
