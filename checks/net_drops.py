"""net.drops: RoCE drop and sequence-error counters that are not zero.

See docs/checks.md#net-drops.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks._roce import roce_ports
from doctor.facts import Facts
from doctor.findings import LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.registry import check

#: counters that mean packets of an RDMA connection were lost in the fabric (go-back-N retransmission)
LOSS_COUNTERS = ("out_of_sequence", "packet_seq_err")
#: a receive queue without posted buffers: the NIC dropped what arrived (the application was slow)
BUFFER_COUNTERS = ("out_of_buffer",)
REFERENCES = (
    "https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-parameters",
    "https://docs.kernel.org/infiniband/user_verbs.html",
    "https://github.com/sosreport/sos/blob/main/sos/report/plugins/roce.py",
)
NOTES = ("The counters are cumulative since the driver loaded: read them twice under load to see whether they "
         "still grow. Growing sequence errors mean loss in the fabric (PFC or DCQCN not working on NCCL's priority); "
         "a growing out_of_buffer means receive queues ran dry. ethtool -S shows the NIC-level drops "
         "(rx_discards_phy: the port's buffer overflowed, rx_out_of_buffer).")


@check("net.drops", "RoCE drop and sequence-error counters", "network")
def drops(facts: Facts) -> Iterator[Finding]:
    """``out_of_sequence``/``packet_seq_err`` above zero on an active RoCE port (medium), ``out_of_buffer``
    above zero (low); unknown when the port's ``hw_counters`` are not recorded."""
    ports = roce_ports(facts)
    if not ports:
        return
    clean, unrecorded = [], []
    for rp in ports:
        counters = facts.rdma_counters.get(rp.port.name)
        values = counters.values if counters else {}
        present = [c for c in LOSS_COUNTERS + BUFFER_COUNTERS if c in values]
        if counters is None or not present:
            unrecorded.append(rp.port.name)
            continue
        hits = {c: values[c] for c in present if values[c] > 0}
        if not hits:
            clean.append(rp.port.name)
            continue
        loss = any(c in LOSS_COUNTERS for c in hits)
        name = rp.netdev.name
        yield Finding(
            MEDIUM if loss else LOW, name,
            f"{rp.port.name} ({name}) counted " + ", ".join(f"{c} {v}" for c, v in hits.items()),
            detail=("Sequence errors mean RoCE packets were lost and the sender went back and resent the window; "
                    "on a lossless fabric they stay at zero. The counters are cumulative since the driver loaded."
                    if loss else "The receive queue had no buffer posted when packets arrived, so the NIC dropped "
                    "them. The counter is cumulative since the driver loaded."),
            evidence=tuple(Evidence(f"{counters.origin}/{c}", str(values[c])) for c in present if counters),
            expected="0 for " + ", ".join(present), observed=", ".join(f"{c}={v}" for c, v in hits.items()),
            impact=Impact(25 if loss else 5, "retransmissions stall NCCL collectives and KV transfers"),
            fix=make("rdma_counters_show", NOTES, device=rp.port.device, port=rp.port.port, netdev=name),
            references=REFERENCES, related=(rp.port.name,))
    if unrecorded and not clean:
        yield Finding(UNKNOWN, "node", "RoCE drop counters not recorded",
                      detail=(f"No hw_counters for {', '.join(unrecorded[:4])}{', ...' if len(unrecorded) > 4 else ''}"
                              " (sys/class/infiniband/<dev>/ports/<n>/hw_counters)."), references=REFERENCES)
    elif clean:
        yield Finding(PASS, "node", f"no drop or sequence error on {len(clean)} RoCE port(s)")
