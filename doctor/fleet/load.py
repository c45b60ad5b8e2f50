"""Open one node for diff or fleet: a snapshot/sosreport (checks are run) or a saved JSON result."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from doctor.errors import DoctorError
from doctor.record import record

if TYPE_CHECKING:
    from doctor.registry import Check
    from doctor.runner import Result


@record
class Node:
    """One analysed node: the run's result and the facts digest behind it."""

    path: str
    kind: str  # "json", "snapshot" or "sosreport"
    result: Result
    digest: dict[str, str]


def load_node(path: str, checks: list[Check] | None = None) -> Node:
    """Analyse ``path`` (a source or a saved result); raises DoctorError with one line if it cannot."""
    from doctor.derived.digest import digest_from_inventory
    from doctor.pipeline import analyse
    from doctor.result_io import is_json_result, load_result

    if is_json_result(path):
        result = load_result(path)
        return Node(path, "json", result, digest_from_inventory(result.inventory))
    if not os.path.exists(path):
        raise DoctorError(f"{path}: no such file or directory")
    return node_of(path, analyse(path, checks=checks))


def node_of(path: str, result: Result) -> Node:
    """The node that ``result`` (a run on the snapshot or sosreport at ``path``) describes."""
    from doctor.derived.digest import digest_from_inventory

    digest = result.inventory.get("digest")
    if not isinstance(digest, dict):
        digest = digest_from_inventory(result.inventory)
    return Node(path, str(result.source.get("kind") or "snapshot"), result, digest)


def identity(result: Result, digest: dict[str, str]) -> dict[str, str]:
    """Host identity (hostname, machine-id, board serial) from the digest or the inventory."""
    host = result.inventory.get("host") if isinstance(result.inventory.get("host"), dict) else {}
    out: dict[str, str] = {}
    for name in ("hostname", "machine_id", "board_serial"):
        value = digest.get(f"host.{name}") or (host or {}).get(name)
        if name == "hostname" and not value:
            value = result.source.get("hostname")
        if value:
            out[name] = str(value)
    return out
