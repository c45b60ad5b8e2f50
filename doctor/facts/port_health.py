"""InfiniBand/RoCE port health: the IBTA port error counters, the QP-fatal transport counters, carrier changes
and mlx5 link-down lines of the kernel log.

Every number here is a total since the driver loaded or the counters were last reset (``perfquery -R``),
never a rate: one recording cannot say whether a counter still grows. The IBTA PortCounters are narrow
and stop at their maximum (``link_downed`` at 255, ``excessive_buffer_overrun_errors`` at 15): a counter
at its maximum means "at least".
"""

from __future__ import annotations

from doctor.facts import kernel_log
from doctor.facts.net import NetDev, RdmaPort
from doctor.facts.util import normalise_bdf
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source

#: ``counters/`` files read, with their width in bits (IBTA PortCounters attribute; Linux's
#: drivers/infiniband/core/sysfs.c exposes them as the 16/8/4-bit fields they are)
COUNTER_BITS: dict[str, int] = {
    "symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16, "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8, "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4, "VL15_dropped": 16,
}
#: ``hw_counters/`` (mlx5, newer kernels) whose every count is a queue pair whose retries ran out (the QP moved to
#: error: NCCL reports "transport retry counter exceeded" / "RNR retry counter exceeded" and the job fails)
QP_FATAL = ("req_transport_retries_exceeded", "req_rnr_retries_exceeded")
#: ``hw_counters/`` of retries that were still within the QP's limit (recoverable, but each ack timeout stalls the
#: connection for the QP's timeout): NVIDIA's mlx5 counter reference calls them recoverable errors
QP_RETRIES = ("local_ack_timeout_err", "rnr_nak_retry_err")
#: ``hw_counters/`` of completions with an error (remote access, invalid request, length): also QP errors
QP_ERRORS = ("req_cqe_error", "resp_cqe_error", "req_remote_access_errors", "req_remote_invalid_request",
             "resp_remote_access_errors", "resp_local_length_error")
#: Longest kernel log scanned for link-down lines and most events kept per device.
MAX_EVENTS = 1000

_LINK_DOWN = lazy(r"mlx5_core (?P<addr>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
                  r"(?: (?P<ndev>[\w.@-]{1,32}))?: (?:\w{1,40}:\d{1,6}:\(pid \d{1,9}\): )?"
                  r"(?P<what>Link down|Port module event(?:\[error\])?: module \d+, "
                  r"(?:Cable unplugged|Cable error[^\n]{0,80}))")


@record
class LinkDown:
    """An mlx5 kernel log line saying a port's link went down (or its cable was pulled or failed)."""

    address: str
    netdev: str | None
    text: str
    time: str | None


@record
class PortErrors:
    """The error counters of one RDMA port (``mlx5_0/1``); ``missing`` names what was not recorded."""

    port: str
    origin: str  # the port's sysfs folder
    counters: dict[str, int]
    hw: dict[str, int]
    carrier_changes: dict[str, int]  # netdev -> sys/class/net/<if>/carrier_changes
    missing: str | None = None

    def saturated(self, name: str) -> bool:
        """Whether ``counters/<name>`` stands at its maximum (the true count may be higher)."""
        bits = COUNTER_BITS.get(name)
        return bits is not None and self.counters.get(name) == (1 << bits) - 1


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() and len(text) <= 20 else None


def build_port_errors(src: Source, ports: tuple[RdmaPort, ...], netdevs: tuple[NetDev, ...]
                      ) -> dict[str, PortErrors]:
    """Per sysfs RDMA port: its counters, the QP error counters and its interfaces' carrier changes."""
    out: dict[str, PortErrors] = {}
    for port in ports:
        if not port.origin.startswith("sys/"):
            out[port.name] = PortErrors(port.name, port.origin, {}, {}, {},
                                        f"{port.origin}: no sysfs port folder (error counters not recorded)")
            continue
        counters = {n: v for n in COUNTER_BITS
                    if (v := _number(src.read_line(f"{port.origin}/counters/{n}"))) is not None}
        hw = {n: v for n in QP_FATAL + QP_RETRIES + QP_ERRORS
              if (v := _number(src.read_line(f"{port.origin}/hw_counters/{n}"))) is not None}
        names = set(port.netdevs) | {n.name for n in netdevs if port.pci_address and n.pci_address == port.pci_address}
        carrier = {n: v for n in sorted(names)
                   if (v := _number(src.read_line(f"sys/class/net/{n}/carrier_changes"))) is not None}
        missing = None if counters else f"{port.origin}/counters: not recorded"
        out[port.name] = PortErrors(port.name, port.origin, counters, hw, carrier, missing)
    return out


def parse_link_downs(text: str) -> tuple[LinkDown, ...]:
    """mlx5 link-down and cable lines of a kernel log, in log order (at most :data:`MAX_EVENTS`)."""
    out: list[LinkDown] = []
    for line in text.splitlines():
        if "mlx5_core" not in line or len(out) >= MAX_EVENTS:
            continue
        m = _LINK_DOWN.search(line)
        address = normalise_bdf(m.group("addr").lower()) if m else None
        if m and address:
            out.append(LinkDown(address, m.group("ndev"), line[m.start():].strip()[:200], kernel_log.timestamp(line)))
    return tuple(out)


def build_link_downs(src: Source) -> tuple[LinkDown, ...] | None:
    """The kernel log's mlx5 link-down lines; None when the kernel log is not recorded."""
    out = src.command(kernel_log.SPEC)
    return None if out.text is None else parse_link_downs(out.text)
