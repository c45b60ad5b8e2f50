"""The known-good baseline a user passes with ``--baseline``: read, validated, kept with its text for line numbers.

Written by ``gnd baseline`` (see :func:`doctor.fleet.baseline.write_baseline`); read by the
pipeline and attached to :class:`~doctor.facts.Facts` as ``facts.baseline`` for check
``baseline.deviation``.
"""

from __future__ import annotations

from typing import Any

from doctor.errors import DoctorError
from doctor.parsers import toml_io
from doctor.record import record

FORMAT_VERSION = 1
#: Allowed keys: top level, sections, and per-device entries.
TOP_KEYS: dict[str, type] = {"version": int, "gpus": dict, "nics": dict, "pci": dict, "sysctl": dict, "kernel": dict}
GROUP_KEYS: dict[str, type] = {"count": int, "models": list}
DEVICE_KEYS: dict[str, type] = {"kind": str, "model": str, "gen": int, "width": int, "numa_node": int, "driver": str}
KERNEL_KEYS: dict[str, type] = {"cmdline": dict}
#: Most entries (slots, sysctls, kernel parameters, models) a baseline may hold: ``gnd baseline``
#: writes a few hundred; each is compared and may become a finding (350,000 took 36 s and 1.8 GB).
MAX_ENTRIES = 10_000


@record
class Baseline:
    """A validated baseline file: its path, its text (for ``path:line`` evidence) and its data."""

    path: str
    text: str
    data: dict[str, Any]

    def where(self, *table: str, name: str | None = None) -> str:
        """``path:line`` of an entry, for evidence and error messages."""
        line = toml_io.line_of(self.text, tuple(table), name)
        return f"{self.path}:{line}" if line else self.path


def _type_name(t: type) -> str:
    return {int: "an integer", str: "a string", list: "a list", dict: "a table"}.get(t, t.__name__)


def _validate(b: Baseline) -> None:
    def bad(msg: str, *table: str, name: str | None = None) -> DoctorError:
        return DoctorError(f"{b.where(*table, name=name)}: {msg}")

    def check_keys(section: dict[str, Any], allowed: dict[str, type], table: tuple[str, ...]) -> None:
        label = "top level" if not table else "[" + ".".join(toml_io.key(t) for t in table) + "]"
        for k, v in section.items():
            if k not in allowed:
                raise bad(f"unknown key {k!r} in {label} (allowed: {', '.join(sorted(allowed))})", *table, name=k)
            want = allowed[k]
            if not isinstance(v, want) or (want is int and isinstance(v, bool)):
                raise bad(f"{k} in {label} must be {_type_name(want)}", *table, name=k)

    data = b.data
    check_keys(data, TOP_KEYS, ())
    entries = sum(len(data.get(k) or ()) for k in ("pci", "sysctl")) \
        + sum(len(v) for g in ("gpus", "nics") for v in [(data.get(g) or {}).get("models")] if isinstance(v, list)) \
        + sum(len(v) for v in [(data.get("kernel") or {}).get("cmdline")] if isinstance(v, dict))
    if entries > MAX_ENTRIES:
        raise DoctorError(f"{b.path}: {entries:,} entries; a baseline holds at most {MAX_ENTRIES:,} "
                          "(gnd baseline writes a few hundred)")
    if data.get("version", FORMAT_VERSION) != FORMAT_VERSION:
        raise bad(f"version {data['version']} is not supported (this gnd reads version {FORMAT_VERSION})",
                  name="version")
    for group in ("gpus", "nics"):
        check_keys(data.get(group, {}), GROUP_KEYS, (group,))
    for address, entry in data.get("pci", {}).items():
        if not isinstance(entry, dict):
            raise bad(f"pci.{address} must be a table", "pci", name=address)
        check_keys(entry, DEVICE_KEYS, ("pci", address))
    for name, value in data.get("sysctl", {}).items():
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise bad(f"sysctl {name} must be a string or an integer", "sysctl", name=name)
    kernel = data.get("kernel", {})
    check_keys(kernel, KERNEL_KEYS, ("kernel",))
    for name, value in kernel.get("cmdline", {}).items():
        if not isinstance(value, str):
            raise bad(f"kernel parameter {name} must be a string", "kernel", "cmdline", name=name)


def load_baseline(path: str) -> Baseline:
    """Read and validate a baseline file; any problem is one DoctorError line naming file and line."""
    from doctor.safe_open import read_text

    text = read_text(path, "baseline", 4 * 1024 * 1024)
    baseline = Baseline(path, text, toml_io.loads(text, path))
    _validate(baseline)
    return baseline
