"""rdma.port_errors: InfiniBand/RoCE ports whose error counters, carrier changes or kernel log show a sick link.

See docs/checks.md#rdma-port-errors.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts, LinkDown, PortErrors, RdmaPort
from doctor.facts.port_health import QP_ERRORS, QP_FATAL, QP_RETRIES
from doctor.findings import INFO, LOW, MEDIUM, PASS, Evidence, Finding, Impact, severity_order
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

#: The link went down or was retrained: every RDMA connection on it broke (fatal to a running NCCL job).
LINK_FATAL = ("link_downed",)
#: Link-level integrity errors: bit errors the link survived (a marginal cable, transceiver or port).
INTEGRITY = ("symbol_error", "link_error_recovery", "local_link_integrity_errors", "port_rcv_errors",
             "port_rcv_remote_physical_errors", "excessive_buffer_overrun_errors")
#: Packets the port dropped (congestion, a port that was down, partition or VL15 management traffic).
#: (``port_rcv_switch_relay_errors`` is left out: a host adapter counts unroutable multicast there, which is why
#: infiniband-diags' ibqueryerrors suppresses it by default.)
DISCARDS = ("port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors", "VL15_dropped")
#: Totals at or above these are reported ``low`` (non-fatal counters; of the order of infiniband-diags' defaults).
INTEGRITY_THRESHOLD = 10
DISCARD_THRESHOLD = 100
#: Carrier changes a healthy boot leaves (the interface coming up once or twice).
BOOT_CARRIER_CHANGES = 2
SINCE = ("These are totals since the driver loaded or the counters were last reset, not rates: one recording "
         "cannot tell an old incident from a link that is failing now. Read them again under load (or reset them "
         "with perfquery -R) and compare.")
REFERENCES = (
    "https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband",
    "https://enterprise-support.nvidia.com/s/article/understanding-mlx5-linux-counters-and-status-parameters",
    "https://docs.kernel.org/networking/statistics.html",
)
NOTES = ("Inspect the cable or transceiver of this port and the switch port it plugs into (the switch's own "
         "counters for the same link), reseat or replace it, and read the counters again; nothing on this host "
         "is changed.")


def _value(pe: PortErrors, name: str) -> str:
    value = pe.counters.get(name, pe.hw.get(name))
    return f"{'>=' if pe.saturated(name) else ''}{value}"


def _flaps(facts: Facts, port: RdmaPort) -> list[LinkDown]:
    events = facts.link_downs or ()
    return [e for e in events if (port.pci_address and e.address == port.pci_address)
            or (e.netdev and e.netdev in port.netdevs)]


def _judge(facts: Facts, port: RdmaPort, pe: PortErrors) -> Finding | None:
    parts: list[tuple[str, str]] = []  # (severity, words)
    evidence: list[Evidence] = []

    def cite(kind: str, names: tuple[str, ...]) -> list[str]:
        hit = [n for n in names if pe.counters.get(n, pe.hw.get(n, 0)) > 0]
        evidence.extend(Evidence(f"{pe.origin}/{kind}/{n}", _value(pe, n)) for n in hit)
        return hit

    down = cite("counters", LINK_FATAL)
    flaps = _flaps(facts, port)
    carrier = {n: v for n, v in pe.carrier_changes.items() if v > BOOT_CARRIER_CHANGES}
    if down:
        parts.append((MEDIUM, f"link went down {_value(pe, 'link_downed')} time(s)"))
    if flaps:
        first, last = flaps[0], flaps[-1]
        evidence.append(Evidence(facts.kernel_log.origin, f"{len(flaps)} line(s), first: {first.text}"
                                 + (f" ({first.time})" if first.time else "")
                                 + (f"; last: {last.text} ({last.time})" if len(flaps) > 1 and last.time else "")))
        parts.append((MEDIUM, f"{len(flaps)} link-down/cable line(s) in the kernel log"))
    if carrier:
        evidence.extend(Evidence(f"sys/class/net/{n}/carrier_changes", str(v)) for n, v in carrier.items())
        if not down and not flaps:
            parts.append((LOW, "carrier changed " + ", ".join(f"{v} times on {n}" for n, v in carrier.items())))
    fatal = cite("hw_counters", QP_FATAL)
    if fatal:
        parts.append((MEDIUM, "RDMA connections gave up (" + ", ".join(f"{n} {_value(pe, n)}" for n in fatal) + ")"))
    retries = cite("hw_counters", QP_RETRIES)
    if retries:
        parts.append((LOW, "transport retries within the QP's limit (" + ", ".join(f"{n} {_value(pe, n)}" for n in retries)
                      + ")"))
    cqe = cite("hw_counters", QP_ERRORS)
    if cqe:
        parts.append((LOW, "completions with errors (" + ", ".join(f"{n} {_value(pe, n)}" for n in cqe) + ")"))
    bad = cite("counters", INTEGRITY)
    if bad:
        big = any(pe.counters[n] >= INTEGRITY_THRESHOLD for n in bad)
        parts.append((LOW if big else INFO, "link integrity errors (" + ", ".join(f"{n} {_value(pe, n)}" for n in bad)
                      + ")"))
    drops = cite("counters", DISCARDS)
    if drops:
        big = any(pe.counters[n] >= DISCARD_THRESHOLD for n in drops)
        parts.append((LOW if big else INFO, "discards (" + ", ".join(f"{n} {_value(pe, n)}" for n in drops) + ")"))
    if not parts:
        return None
    severity = min((s for s, _ in parts), key=severity_order)  # order 0 is the most severe
    fatal_now = severity == MEDIUM
    detail = (f"{port.name} ({port.link_layer or 'link layer ?'}, {port.rate_text or 'rate ?'}, {port.state or 'state ?'}): "
              + "; ".join(w for _, w in parts) + ". "
              + ("A link that goes down, and a queue pair whose retries run out, break every RDMA connection on the "
                 "port: NCCL reports a transport error and the job stops or restarts. " if fatal_now else
                 "Errors the link survived (retransmitted or dropped packets) cost bandwidth and point to a marginal "
                 "cable, transceiver or port before it fails. ")
            + "A counter shown as >=N stands at its maximum (the IBTA counters are 4 to 16 bits wide). " + SINCE)
    title = f"RDMA port {port.name}: " + "; ".join(w for s, w in parts if s == severity)
    return Finding(
        severity, port.name, title, detail=detail, evidence=tuple(evidence),
        expected=N_('error counters 0, no link-down events'), observed="; ".join(w for _, w in parts),
        impact=Impact(35.0 if fatal_now else 8.0 if severity == LOW else 0.0,
                      N_('connections on this rail break (jobs fail or fall back to other rails)') if fatal_now else
                      N_('retransmissions and drops on this rail'),
                      basis=N_('a link-down or an exhausted QP retry moves the QP to the error state (every connection on the port fails); integrity errors are packets the link layer dropped or retried')),
        fix=make("rdma_counters_show", NOTES, device=port.device, port=port.port,
                 netdev=port.netdevs[0] if port.netdevs else ""),
        references=REFERENCES, confidence=0.8)


@check("rdma.port_errors", "InfiniBand/RoCE port error counters, link flaps and QP-fatal errors", "rdma", acts="hardware",
       fixes=("rdma_counters_show",), needs=("rdma_counters",))
def port_errors(facts: Facts) -> Iterator[Finding]:
    """Per RDMA port: a link that went down (``link_downed``, mlx5 link-down lines) or queue pairs whose retries ran
    out (``req_transport_retries_exceeded``, ``req_rnr_retries_exceeded``): medium. Recoverable retries
    (``local_ack_timeout_err``, ``rnr_nak_retry_err``), error completions, carrier changes, integrity errors
    (``symbol_error``, ``port_rcv_errors`` ...) from 10 and discards from 100: low; fewer: info. Totals since
    the counters were cleared, not rates (the finding says so)."""
    if not facts.rdma:
        return
    clean = []
    for port in facts.rdma:
        pe = facts.port_errors.get(port.name)
        if pe is None or pe.missing:
            continue  # the declared input makes the runner say unknown
        finding = _judge(facts, port, pe)
        if finding is None:
            clean.append(port.name)
        else:
            yield finding
    if clean:
        yield Finding(PASS, "node", N_('{n_clean} RDMA port(s) with zero error counters', n_clean=len(clean)),
                      detail=N_('No link-down, integrity, discard or QP-fatal count on ') + ", ".join(clean) + ". " + SINCE,
                      evidence=(Evidence("sys/class/infiniband/*/ports/*/counters", ", ".join(clean)),))
