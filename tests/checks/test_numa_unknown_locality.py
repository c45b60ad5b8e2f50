"""Check numa.unknown_locality (tests moved from test_numa_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, real
from tests.helpers import facts, findings_of


def _worst(found: list) -> str | None:
    order = ("critical", "high", "medium", "low", "unknown", "info", "pass")
    return min((f.severity for f in found), key=order.index, default=None)


def _numa_all(value: str) -> dict[str, str]:
    base = healthy()
    out = {}
    for dev in (base / "sys/bus/pci/devices").iterdir():
        out[real(f"sys/bus/pci/devices/{dev.name}") + "/numa_node"] = value + "\n"
    return out


def test_unknown_locality_on_two_sockets_is_medium_never_mismatch() -> None:
    f = facts(_numa_all("-1"), base=healthy())
    found = findings_of(f, "numa.unknown_locality")
    assert [(x.subject, x.severity) for x in found] == [("node", "medium")]
    assert "unverifiable" in found[0].title
    assert not [x for x in findings_of(f, "numa.gpu_nic_locality") if x.severity not in ("pass",)]


def test_unknown_locality_on_one_socket_is_silent_pass() -> None:
    changes = {**_numa_all("-1"), "sys/devices/system/node/node1": None}
    found = findings_of(facts(changes, base=healthy()), "numa.unknown_locality")
    assert [x.severity for x in found] == ["pass"]


def test_cpuless_memory_nodes_are_not_sockets() -> None:
    changes = {**_numa_all("-1"), "sys/devices/system/node/node1": None,
               "sys/devices/system/node/node250/cpulist": "\n", "sys/devices/system/node/node251/cpulist": "\n"}
    f = facts(changes, base=healthy())
    assert not f.numa.multi_node
    assert _worst(findings_of(f, "numa.unknown_locality")) == "pass"
