"""Check rdma.port_state (tests moved from test_net_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import environ, sick
from tests.helpers import facts, findings_of


def _sev(found: list, subject: str | None = None) -> list[str]:
    return [f.severity for f in found if subject is None or f.subject == subject]


def test_port_state_listed_hca_down_is_medium() -> None:
    found = findings_of(facts(base=sick()), "rdma.port_state")
    assert [(f.subject, f.severity) for f in found] == [("mlx5_7/1", "medium")]
    excluded = findings_of(facts(environ(base=sick(), NCCL_IB_HCA="=mlx5_0,mlx5_1"), base=sick()),
                           "rdma.port_state")
    assert _sev(excluded) == ["pass"]
