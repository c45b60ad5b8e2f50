"""Check net.tcp_tuning (tests moved from test_net_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, sick
from tests.helpers import facts, findings_of


def _sev(found: list, subject: str | None = None) -> list[str]:
    return [f.severity for f in found if subject is None or f.subject == subject]


def test_tcp_tuning_lows_on_sick_pass_on_healthy() -> None:
    found = findings_of(facts(base=sick()), "net.tcp_tuning")
    assert sorted((f.subject, f.severity) for f in found) == [
        ("net.core.netdev_max_backlog", "low"), ("net.ipv4.tcp_slow_start_after_idle", "low")]
    assert _sev(findings_of(facts(base=healthy()), "net.tcp_tuning")) == ["pass"]
