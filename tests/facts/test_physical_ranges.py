"""Values outside physical ranges are unreadable, not healthy: one validating reader with a declared
range (doctor.facts.util.read_number) behind every numeric fact a verdict compares."""

from __future__ import annotations

import pytest

from doctor.facts.roce import parse_ethtool_stats
from doctor.facts.util import COUNTER, NUMA_ID, read_number
from tests.helpers import SICK, facts

GPU = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0"
HUGE = str(1 << 64)


@pytest.mark.parametrize("text", ["-2", "1024", HUGE, "7" * 70, "x", ""])
def test_a_numa_id_outside_the_kernel_range_is_unreadable(text: str) -> None:
    assert read_number(text, NUMA_ID) is None


@pytest.mark.parametrize("text", ["-1", HUGE, str(1 << 63)])
def test_a_counter_that_is_negative_or_absurd_is_unreadable(text: str) -> None:
    assert read_number(text, COUNTER) is None
    assert read_number("12", COUNTER) == 12


def _pci_facts(changes: dict[str, str]):  # type: ignore[no-untyped-def]
    import os

    real = os.path.realpath(SICK / "sys/bus/pci/devices/0000:18:00.0")
    base = os.path.relpath(real, SICK)
    overlay: dict[str, str | None] = {f"{base}/{k}": v for k, v in changes.items()}
    overlay["commands/lspci_-vvv"] = None  # sysfs alone (lspci, a second source, would fill a gap)
    return facts(overlay, base=SICK).pci.get("0000:18:00.0")


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize("node", ["7", "-5", HUGE])
def test_a_device_numa_node_beyond_the_hosts_nodes_is_unknown(node: str) -> None:
    dev = _pci_facts({"numa_node": node + "\n"})  # the fixture host has nodes 0 and 1
    assert dev is not None and dev.numa_node is None


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize("width", [HUGE, "-16", "33"])
def test_an_impossible_link_width_is_unknown(width: str) -> None:
    dev = _pci_facts({"current_link_width": width + "\n", "max_link_width": width + "\n"})
    assert dev is not None and dev.cur_width is None and dev.max_width is None


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
def test_aer_counters_out_of_range_are_not_read_as_zero_or_as_errors() -> None:
    dev = _pci_facts({"aer_dev_correctable": f"RxErr {HUGE}\nBadTLP -3\nTOTAL_ERR_COR 2\n"})
    assert dev is not None and dev.aer == {"correctable": {"TOTAL_ERR_COR": 2}}


def test_ethtool_counters_out_of_range_are_dropped() -> None:
    stats = parse_ethtool_stats(f"NIC statistics:\n     rx_dropped: {(1 << 64) - 1}\n     tx_dropped: 4\n")
    assert stats == {"tx_dropped": 4}
