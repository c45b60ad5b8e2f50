"""Open one node for diff or fleet: a snapshot/sosreport (checks are run) or a saved JSON result."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doctor.errors import DoctorError

if TYPE_CHECKING:
    from doctor.registry import Check
    from doctor.runner import Result

#: A saved result larger than this is refused (a gnd result is a few hundred KiB).
MAX_JSON_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Node:
    """One analysed node: the run's result and the facts digest behind it."""

    path: str
    kind: str  # "json", "snapshot" or "sosreport"
    result: Result
    digest: dict[str, str]


def is_json_result(path: str) -> bool:
    """Whether ``path`` is a file whose content starts like a JSON object (``gnd check --format json``)."""
    if not os.path.isfile(path):
        return False
    if path.lower().endswith(".json"):
        return True
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
    except OSError:
        return False
    return head.lstrip()[:1] == b"{"


def read_json_result(path: str) -> dict[str, Any]:
    """The dict of a saved result, secrets masked; one-line DoctorError when it is not one."""
    try:
        size = os.path.getsize(path)
        if size > MAX_JSON_BYTES:
            raise DoctorError(f"{path}: {size} bytes is too large for a gnd JSON result")
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8", "replace"))
    except OSError as exc:
        raise DoctorError(f"{path}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise DoctorError(f"{path}: not valid JSON ({exc.args[0] if exc.args else exc})") from None
    if not isinstance(data, dict) or "findings" not in data or "schema_version" not in data:
        raise DoctorError(f"{path}: JSON but not a gnd result (no schema_version/findings)")
    from doctor.secrets import mask_data

    return dict(mask_data(data))  # a saved result may come from an older gnd, or be crafted


def load_node(path: str, checks: list[Check] | None = None) -> Node:
    """Analyse ``path`` (a source or a saved result); raises DoctorError with one line if it cannot."""
    from doctor.fleet.digest import digest_from_inventory
    from doctor.runner import Result
    from doctor.secrets import mask_data

    if is_json_result(path):
        data = read_json_result(path)
        try:
            result = Result.from_dict(data)
        except (TypeError, ValueError, AttributeError) as exc:
            raise DoctorError(f"{path}: malformed gnd result ({exc})") from None
        return Node(path, "json", result, digest_from_inventory(result.inventory))
    from doctor.facts import Facts
    from doctor.runner import run_checks
    from doctor.sources import open_source

    if not os.path.exists(path):
        raise DoctorError(f"{path}: no such file or directory")
    source = open_source(path)
    result = Result.from_dict(mask_data(run_checks(Facts(source), checks=checks).to_dict()))
    digest = result.inventory.get("digest")
    if not isinstance(digest, dict):
        digest = digest_from_inventory(result.inventory)
    return Node(path, source.kind, result, digest)


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
