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

from doctor.derived.watch import per_minute, record_of, series_evidence, span
from doctor.facts import Facts
from doctor.facts.watch import CounterSeries
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.i18n import N_, capitalised
from doctor.registry import check

CHECK_ID = "watch.counter_growth"
REFERENCES = ("https://docs.kernel.org/PCI/pcieaer-howto.html",
              "https://docs.kernel.org/networking/statistics.html",
              "https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-parameters")
#: counter name -> (severity, category, what its growth means)
MEANING = {
    "aer_fatal": (HIGH, "pcie", N_("fatal PCIe errors: the link or device was reset")),
    "aer_nonfatal": (HIGH, "pcie", N_("uncorrectable PCIe errors: transactions were lost")),
    "aer_correctable": (MEDIUM, "pcie", N_("corrected PCIe errors: retransmissions eat bandwidth, often before worse")),
    "replay": (MEDIUM, "pcie", N_("PCIe replays: the link resends packets after CRC errors")),
    "carrier_changes": (HIGH, "network", N_("the link lost carrier and came back: traffic stopped each time")),
    "link_downed": (HIGH, "rdma", N_("the port's link went down: RDMA connections broke")),
    "link_error_recovery": (MEDIUM, "rdma", N_("the port retrained its link")),
    "local_link_integrity_errors": (HIGH, "rdma", N_("the port exceeded its local integrity error threshold")),
    "excessive_buffer_overrun_errors": (HIGH, "rdma", N_("receive buffer overruns: packets were dropped")),
    "symbol_error": (MEDIUM, "rdma", N_("symbol errors on the wire: cable, transceiver or port")),
    "port_rcv_errors": (MEDIUM, "rdma", N_("received packets with errors were dropped")),
    "port_rcv_remote_physical_errors": (MEDIUM, "rdma", N_("packets arrived marked bad by the far end")),
    "port_rcv_constraint_errors": (LOW, "rdma", N_("packets dropped by partition or raw-packet constraints")),
    "port_xmit_constraint_errors": (LOW, "rdma", N_("packets not sent for partition or raw-packet constraints")),
    "port_xmit_discards": (LOW, "rdma", N_("packets discarded while the port was congested")),
    "VL15_dropped": (LOW, "rdma", N_("subnet management packets dropped")),
    "rnr_nak_retry_err": (LOW, "rdma", N_("the receiver ran out of posted buffers (RNR NAK retries exhausted)")),
    "out_of_sequence": (LOW, "rdma", N_("packets arrived out of sequence (loss on a lossy RoCE fabric)")),
    "packet_seq_err": (LOW, "rdma", N_("packet sequence errors (loss on the fabric)")),
    "local_ack_timeout_err": (MEDIUM, "rdma", N_("acknowledgements timed out: the fabric dropped packets")),
    "req_transport_retries_exceeded": (HIGH, "rdma", N_("transport retries exhausted: a queue pair failed")),
}
SCORE = {HIGH: 40.0, MEDIUM: 15.0, LOW: 4.0}


def _finding(facts: Facts, c: CounterSeries) -> Finding:
    record = record_of(facts)
    severity, category, meaning = MEANING.get(c.name, (MEDIUM, "pcie", N_("an error counter")))
    seconds = c.last_t - c.first_t
    rate = per_minute(c.growth, seconds, record.interval_s)
    gpu = facts.gpus.by_address(c.subject)
    subject = f"GPU {gpu.index} ({c.subject})" if gpu is not None else c.subject
    reset = N_("; it was reset {n} times during the watch", n=c.resets) if c.resets else ""
    return Finding(
        severity, subject, N_("{name} grew by {n} in {secs} s ({rate}/min)", name=c.name, n=c.growth,
                              secs=f"{seconds:g}", rate=f"{rate:.1f}"),
        detail=N_("{meaning}. From {first} to {last}, growing in {n} of the sample intervals{reset}. The total since "
                  "boot says little; this growth is the rate now.", meaning=capitalised(meaning), first=c.first,
                  last=c.last, n=c.increases, reset=reset),
        evidence=series_evidence(record, f"{c.subject} {c.name}", c.recent),
        expected=N_("no growth"), observed=N_('+{growth} ({rate}/min)', growth=c.growth, rate=format(rate, '.1f')),
        impact=Impact(SCORE.get(severity, 10.0), meaning, basis=N_("counter growth over {span}", span=span(record))),
        references=REFERENCES, related=(c.subject,), category=category)


@check(CHECK_ID, "Error counters that grow over a watch (AER, replays, InfiniBand/RoCE, carrier)", "pcie", acts="hardware",
       requires="watch", needs=("watch",))
def watch_counter_growth(facts: Facts) -> Iterator[Finding]:
    """Over a watch: each growing error counter with its rate per minute; counters that only hold their total pass."""
    record = record_of(facts)
    if record.missing:
        return  # the runner reports the unreadable record as the input "watch"
    watched = [c for c in record.counters if c.last_t > c.first_t]
    if not watched:
        why = N_("no error counter was read twice (no AER, replay, port or carrier counters, or one sample)")
        yield Finding(UNKNOWN, "node", N_("no error counter was watched"), detail=why,
                      evidence=(Evidence(record.origin, why),))
        return
    grown = [c for c in watched if c.growth > 0]
    for c in sorted(grown, key=lambda c: (c.subject, c.name)):
        yield _finding(facts, c)
    if not grown:
        yield Finding(PASS, "node", N_("none of {n} error counters grew over {span}", n=len(watched), span=span(record)),
                      evidence=(Evidence(record.origin, ", ".join(sorted({c.name for c in watched}))),))
