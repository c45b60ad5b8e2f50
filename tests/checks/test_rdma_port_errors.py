"""rdma.port_errors: link flaps and QP-fatal counters are medium, integrity errors low, a clean port passes, and a
port without counters is unknown (never pass)."""

from __future__ import annotations

from doctor.facts.port_health import parse_link_downs
from tests.helpers import facts, findings_of, run

CHECK = "rdma.port_errors"
PORT = "sys/class/infiniband/mlx5_0/ports/1"


def _of(changes: dict) -> list:
    return [f for f in findings_of(facts(changes), CHECK) if f.subject == "mlx5_0/1"]


def test_healthy_ports_pass_and_say_totals_not_rates() -> None:
    found = findings_of(facts(), CHECK)
    assert [f.severity for f in found] == ["pass"] and "not rates" in found[0].detail


def test_link_downed_is_medium_and_says_since_when() -> None:
    hit = _of({f"{PORT}/counters/link_downed": "3\n"})
    assert [f.severity for f in hit] == ["medium"] and "link went down 3 time(s)" in hit[0].title
    assert "not rates" in hit[0].detail and hit[0].evidence[0].source == f"{PORT}/counters/link_downed"


def test_saturated_counter_reads_as_at_least() -> None:
    hit = _of({f"{PORT}/counters/excessive_buffer_overrun_errors": "15\n"})
    assert [f.severity for f in hit] == ["low"] and "excessive_buffer_overrun_errors >=15" in hit[0].title


def test_fatal_and_non_fatal_apart() -> None:
    fatal = _of({f"{PORT}/hw_counters/req_transport_retries_exceeded": "7\n"})
    assert [f.severity for f in fatal] == ["medium"] and "gave up" in fatal[0].title
    retried = _of({f"{PORT}/hw_counters/local_ack_timeout_err": "131\n", f"{PORT}/hw_counters/req_cqe_error": "3\n"})
    assert [f.severity for f in retried] == ["low"] and "within the QP's limit" in retried[0].title
    few = _of({f"{PORT}/counters/symbol_error": "3\n"})
    assert [f.severity for f in few] == ["info"]  # a handful of bit errors since boot
    many = _of({f"{PORT}/counters/symbol_error": "4000\n"})
    assert [f.severity for f in many] == ["low"] and "symbol_error 4000" in many[0].title
    drops = _of({f"{PORT}/counters/port_xmit_discards": "99\n"})
    assert [f.severity for f in drops] == ["info"]


def test_switch_relay_errors_of_a_host_adapter_are_ignored() -> None:
    assert not _of({f"{PORT}/counters/port_rcv_switch_relay_errors": "12\n"})


def test_kernel_log_link_down_lines_are_flap_history() -> None:
    log = ("[  100.1] mlx5_core 0000:19:00.0 enp25s0np0: Link down\n"
           "[  160.2] mlx5_core 0000:19:00.0 enp25s0np0: Link up\n"
           "[  300.3] mlx5_core 0000:19:00.0: mlx5_port_module_event:1162:(pid 0): Port module event: module 0, "
           "Cable unplugged\n")
    events = parse_link_downs(log)
    assert [(e.address, e.netdev, e.time) for e in events] == [("0000:19:00.0", "enp25s0np0", "100.1"),
                                                               ("0000:19:00.0", None, "300.3")]
    hit = _of({"commands/dmesg": log})
    assert [f.severity for f in hit] == ["medium"] and "link-down/cable line(s)" in hit[0].title


def test_carrier_changes_beyond_boot_are_low() -> None:
    net = "sys/class/net/enp25s0np0/carrier_changes"
    assert not _of({net: "2\n"})
    hit = _of({net: "9\n"})
    assert [f.severity for f in hit] == ["low"] and "carrier changed 9 times" in hit[0].title


def test_missing_counters_make_the_check_unknown() -> None:
    real = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/infiniband/mlx5_0/ports/1"
    removed = {f"{real}/counters/{n}": None for n in ("symbol_error", "link_error_recovery", "link_downed",
               "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
               "port_xmit_discards", "port_xmit_constraint_errors", "port_rcv_constraint_errors",
               "local_link_integrity_errors", "excessive_buffer_overrun_errors", "VL15_dropped")}
    found = [f for f in run(facts(removed)).findings if f.check == CHECK]
    assert [f.severity for f in found] == ["unknown"] and "counters" in found[0].title + found[0].detail


def test_no_rdma_ports_no_finding() -> None:
    assert not findings_of(facts(base=None), CHECK)
