"""watch.counter_growth: error counters that grew during a watch, with their rate.

The counters are totals since boot (AER, InfiniBand/RoCE ports, ``carrier_changes``) or since the
driver loaded (a GPU's PCIe replays): one snapshot shows a total, a watch shows growth. Growth of a
fatal or non-fatal AER counter, of ``link_downed`` or of ``carrier_changes`` (the link went down and
up) is high; of correctable AER errors, replays and port error counters medium; of congestion
counters (discards, RNR NAK retries) low. A counter that went down was reset (a driver reload or a
GPU reset): its growth is counted from the reset.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.watch import per_minute, record_of, series_evidence, span, unreadable
from doctor.facts import Facts
from doctor.facts.watch import CounterSeries
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.registry import check

CHECK_ID = "watch.counter_growth"
REFERENCES = ("https://docs.kernel.org/PCI/pcieaer-howto.html",
              "https://docs.kernel.org/networking/statistics.html",
              "https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-parameters")
#: counter name -> (severity, category, what its growth means)
MEANING = {
    "aer_fatal": (HIGH, "pcie", "fatal PCIe errors: the link or device was reset"),
    "aer_nonfatal": (HIGH, "pcie", "uncorrectable PCIe errors: transactions were lost"),
    "aer_correctable": (MEDIUM, "pcie", "corrected PCIe errors: retransmissions eat bandwidth, often before worse"),
    "replay": (MEDIUM, "pcie", "PCIe replays: the link resends packets after CRC errors"),
    "carrier_changes": (HIGH, "network", "the link lost carrier and came back: traffic stopped each time"),
    "link_downed": (HIGH, "rdma", "the port's link went down: RDMA connections broke"),
    "link_error_recovery": (MEDIUM, "rdma", "the port retrained its link"),
    "local_link_integrity_errors": (HIGH, "rdma", "the port exceeded its local integrity error threshold"),
    "excessive_buffer_overrun_errors": (HIGH, "rdma", "receive buffer overruns: packets were dropped"),
    "symbol_error": (MEDIUM, "rdma", "symbol errors on the wire: cable, transceiver or port"),
    "port_rcv_errors": (MEDIUM, "rdma", "received packets with errors were dropped"),
    "port_rcv_remote_physical_errors": (MEDIUM, "rdma", "packets arrived marked bad by the far end"),
    "port_rcv_constraint_errors": (LOW, "rdma", "packets dropped by partition or raw-packet constraints"),
    "port_xmit_constraint_errors": (LOW, "rdma", "packets not sent for partition or raw-packet constraints"),
    "port_xmit_discards": (LOW, "rdma", "packets discarded while the port was congested"),
    "VL15_dropped": (LOW, "rdma", "subnet management packets dropped"),
    "rnr_nak_retry_err": (LOW, "rdma", "the receiver ran out of posted buffers (RNR NAK retries exhausted)"),
    "out_of_sequence": (LOW, "rdma", "packets arrived out of sequence (loss on a lossy RoCE fabric)"),
    "packet_seq_err": (LOW, "rdma", "packet sequence errors (loss on the fabric)"),
    "local_ack_timeout_err": (MEDIUM, "rdma", "acknowledgements timed out: the fabric dropped packets"),
    "req_transport_retries_exceeded": (HIGH, "rdma", "transport retries exhausted: a queue pair failed"),
}
SCORE = {HIGH: 40.0, MEDIUM: 15.0, LOW: 4.0}


def _finding(facts: Facts, c: CounterSeries) -> Finding:
    record = record_of(facts)
    severity, category, meaning = MEANING.get(c.name, (MEDIUM, "pcie", "an error counter"))
    seconds = c.last_t - c.first_t
    rate = per_minute(c.growth, seconds, record.interval_s)
    gpu = facts.gpus.by_address(c.subject)
    subject = f"GPU {gpu.index} ({c.subject})" if gpu is not None else c.subject
    reset = f"; it was reset {c.resets} times during the watch" if c.resets else ""
    return Finding(
        severity, subject, f"{c.name} grew by {c.growth} in {seconds:g} s ({rate:.1f}/min)",
        detail=f"{meaning[0].upper() + meaning[1:]}. From {c.first} to {c.last}, growing in {c.increases} of the "
               f"sample intervals{reset}. The total since boot says little; this growth is the rate now.",
        evidence=series_evidence(record, f"{c.subject} {c.name}", c.recent),
        expected="no growth", observed=f"+{c.growth} ({rate:.1f}/min)",
        impact=Impact(SCORE.get(severity, 10.0), meaning, basis=f"counter growth over {span(record)}"),
        references=REFERENCES, related=(c.subject,), category=category)


@check(CHECK_ID, "Error counters that grow over a watch (AER, replays, InfiniBand/RoCE, carrier)", "pcie",
       requires="watch")
def watch_counter_growth(facts: Facts) -> Iterator[Finding]:
    """Over a watch: each growing error counter with its rate per minute; counters that only hold their total pass."""
    record = record_of(facts)
    bad = unreadable(record, CHECK_ID)
    if bad is not None:
        yield bad
        return
    watched = [c for c in record.counters if c.last_t > c.first_t]
    if not watched:
        why = "no error counter was read twice (no AER, replay, port or carrier counters, or one sample)"
        yield Finding(UNKNOWN, "node", "no error counter was watched", detail=why, evidence=(Evidence(record.origin, why),))
        return
    grown = [c for c in watched if c.growth > 0]
    for c in sorted(grown, key=lambda c: (c.subject, c.name)):
        yield _finding(facts, c)
    if not grown:
        yield Finding(PASS, "node", f"none of {len(watched)} error counters grew over {span(record)}",
                      evidence=(Evidence(record.origin, ", ".join(sorted({c.name for c in watched}))),))
