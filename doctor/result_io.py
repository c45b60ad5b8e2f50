"""Saved results (``gnd check --format json``): recognise one, read it, validate it — once for every command.

``gnd report/fix-script --from-json``, ``gnd diff``, ``gnd fleet`` and its cache all read results
through :func:`read_result`, so one file is accepted or refused the same way everywhere.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from doctor.errors import DoctorError
from doctor.safe_open import open_regular, path_kind, read_regular

if TYPE_CHECKING:
    from doctor.runner import Result

TOOL_NAME = "gpu-node-doctor"
SUPPORTED_MAJORS = ("1", "2")
#: A saved result larger than this is refused (a gnd result is a few hundred KiB).
MAX_JSON_BYTES = 64 * 1024 * 1024
#: a ``\\uD800``-``\\uDFFF`` escape: half of a UTF-16 pair, text only when its other half follows
_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def is_json_result(path: str) -> bool:
    """Whether ``path`` is a regular file named ``*.json`` or whose content starts like a JSON object."""
    if path_kind(path) != "file":
        return False
    if path.lower().endswith(".json"):
        return True
    try:
        with open_regular(path) as fh:
            head = fh.read(64)
    except (OSError, DoctorError):
        return False
    return head.lstrip()[:1] == b"{"


def validate(data: object, where: str = "input") -> dict[str, Any]:
    """``data`` if it is a gnd result of a supported schema, else a one-line :class:`DoctorError`."""
    if not isinstance(data, dict):
        raise DoctorError(f"{where}: not a gnd result (expected a JSON object)")
    tool = data.get("tool")
    if not isinstance(tool, dict) or tool.get("name") != TOOL_NAME or "schema_version" not in data:
        raise DoctorError(f"{where}: not a gnd result (no tool.name {TOOL_NAME!r} / schema_version); "
                          "write one with `gnd check --format json -o FILE`")
    version = str(data.get("schema_version"))
    if version.split(".", 1)[0] not in SUPPORTED_MAJORS:
        raise DoctorError(f"{where}: schema_version {version} is not supported (this gnd reads 1.x and 2.x)")
    if not isinstance(data.get("findings"), list):
        raise DoctorError(f"{where}: 'findings' is not a list")
    for key in ("source", "inventory"):
        if data.get(key) is not None and not isinstance(data.get(key), dict):
            raise DoctorError(f"{where}: '{key}' is not an object")
    if data.get("checks") is not None and not isinstance(data.get("checks"), list):
        raise DoctorError(f"{where}: 'checks' is not a list")
    inventory = data.get("inventory")
    if inventory:
        data = {**data, "inventory": _inventory(inventory)}
    return data


#: inventory sections gnd writes as one object, and as a list of objects (rows)
_OBJECTS = ("host", "driver")
_ROWS = ("numa", "gpus", "nics", "topology")
#: row fields that hold a list of names (a NIC's interfaces and RDMA ports)
_NAME_LISTS = ("netdevs", "rdma")
#: row fields that hold an object of plain values (a device's link)
_OBJECT_FIELDS = ("link",)


def _plain(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float))


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with only the shapes gnd writes: plain values, lists of names, a link's object of plain values."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if key in _NAME_LISTS:
            if isinstance(value, list):
                out[key] = [x for x in value if isinstance(x, str)]
        elif _plain(value) or key in _OBJECT_FIELDS and isinstance(value, dict) and all(map(_plain, value.values())):
            out[key] = value
    return out


def _inventory(inventory: dict[str, Any]) -> dict[str, Any]:
    """A saved result's inventory in the shapes gnd writes it (what the report, topology, fix-script,
    TUI and digest read), whatever a hand-made or crafted file holds: other shapes are dropped."""
    out = dict(inventory)
    for key in _OBJECTS:
        if key in out:
            out[key] = _row(out[key]) if isinstance(out[key], dict) else {}
    for key in _ROWS:
        if key in out:
            rows = out[key]
            out[key] = [_row(r) for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []
    for key in ("pci_origin", "cmdline"):
        if key in out and not isinstance(out[key], str):
            del out[key]
    digest = out.get("digest")
    if digest is not None:
        out["digest"] = {str(k): v for k, v in digest.items() if isinstance(v, str)} if isinstance(digest, dict) else {}
    return out


def read_result(path: str) -> dict[str, Any]:
    """The validated dict of a saved result, secrets masked (``gnd fleet``); one-line DoctorError."""
    return parse_result(read_regular(path, "JSON result", MAX_JSON_BYTES), path)


def parse_result(raw: bytes, path: str) -> dict[str, Any]:
    """:func:`read_result` of bytes already read (``path`` names them in errors)."""
    from doctor.allowlist import keep_result
    from doctor.secrets import mask_data

    return dict(mask_data(keep_result(validate(_decode(raw, path), path))))


def _decode(raw: bytes, path: str) -> object:
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DoctorError(f"{path}: not valid JSON (not UTF-8 text)") from None
    except ValueError as exc:
        raise DoctorError(f"{path}: not valid JSON ({exc.args[0] if exc.args else exc})") from None
    except RecursionError:
        raise DoctorError(f"{path}: not valid JSON (nested too deeply)") from None
    if _SURROGATE.search(raw):
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise DoctorError(f"{path}: not valid JSON (a \\u escape of half a character)") from None
    return data


def to_result(data: object, where: str = "input") -> Result:
    """A :class:`~doctor.runner.Result` from a decoded result: validated, secrets masked, parsed, every
    string through the one sanitiser (fix steps included: a saved result's fix is for review): the one
    conversion of a saved result (from here it takes the path of a fresh one). One-line DoctorError."""
    from doctor.allowlist import keep_result
    from doctor.runner import Result
    from doctor.secrets import mask_data
    from doctor.textsafe import sanitised

    try:
        return sanitised(Result.from_dict(mask_data(keep_result(validate(data, where)))))  # type: ignore[no-any-return]
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise DoctorError(f"{where}: malformed gnd result ({exc})") from None


def own_result(raw: bytes, where: str, cache_key: str) -> Result:
    """The result this gnd wrote itself (a ``gnd fleet --cache`` entry, which the caller found to be this
    user's file), stored with ``cache_key`` (this version, these checks, that snapshot): decoded, validated
    and parsed, but not masked or sanitised again, since it was both when it was written
    (:func:`doctor.pipeline.analyse`). Damage of any kind, or another key, is a one-line DoctorError."""
    from doctor.runner import Result

    try:
        data = validate(_decode(raw, where), where)
        if data.get("cache_key") != cache_key:
            raise DoctorError(f"{where}: stored for another snapshot, version or set of checks")
        return Result.from_dict(data)
    except DoctorError:
        raise
    except Exception as exc:  # any other damage is a malformed entry too
        raise DoctorError(f"{where}: malformed gnd result ({type(exc).__name__})") from None


def load_result(path: str) -> Result:
    """Read a saved result as a :class:`~doctor.runner.Result` (``--from-json``, ``gnd diff``)."""
    return to_result(_decode(read_regular(path, "JSON result", MAX_JSON_BYTES), path), path)
