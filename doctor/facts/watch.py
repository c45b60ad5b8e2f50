"""What a watch saw over time: bounded summaries of links, counters, clocks and new kernel-log lines.

``gnd watch`` builds a :class:`WatchRecord` while it samples (:mod:`doctor.watch`); ``gnd collect
--watch`` stores it in the snapshot as ``gnd/watch.json``, where :func:`build_watch` reads it back,
so ``gnd check`` of that snapshot judges the same over-time facts days later. Every series is a
summary of fixed size (counts, extremes, seconds, and the last :data:`RECENT` samples as evidence):
memory does not grow with the duration. A stored record is hostile input: any field of the wrong
type or out of range makes the whole record unreadable (``WatchRecord.missing``), never a partial one.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields
from typing import Any

from doctor.record import record
from doctor.sources import Source

#: where ``gnd collect --watch`` stores the record in a snapshot
PATH = "gnd/watch.json"
#: the samples each series keeps as evidence (the newest)
RECENT = 12
#: caps on a stored record (a larger one is refused, not cut)
MAX_BYTES = 4 << 20
MAX_SERIES = 20_000


@record
class LinkSeries:
    """One PCIe link (the link above ``address``) over the watch. Speeds GT/s, seconds of watch time."""

    address: str
    role: str  # "gpu", "nic" or "hop" (a bridge or switch port on the path above a GPU or NIC)
    samples: int = 0
    top_speed: float | None = None  # the highest speed and width seen
    top_width: int | None = None
    low_speed: float | None = None  # the lowest seen
    low_width: int | None = None
    transitions: int = 0  # samples whose speed or width differed from the sample before
    width_changes: int = 0
    speed_changes: int = 0
    busy_speed_changes: int = 0  # speed changes between two samples in which the GPUs below were busy
    busy_samples: int = 0
    busy_s: float = 0.0  # seconds the GPUs below were busy
    busy_below_s: float = 0.0  # of them, seconds below the top speed or width seen
    below_s: float = 0.0  # seconds below the top speed or width seen
    seconds: float = 0.0  # seconds covered by samples
    recent: tuple[str, ...] = ()  # "t=12.0s 16.0 GT/s x16 busy"


@record
class CounterSeries:
    """One error counter (totals since boot, or since the driver loaded) over the watch."""

    subject: str  # a PCI address, "mlx5_0 port 1" or an interface name
    name: str  # aer_fatal, aer_nonfatal, aer_correctable, replay, carrier_changes, or an IB counter name
    first: int = 0
    last: int = 0
    first_t: float = 0.0
    last_t: float = 0.0
    growth: int = 0  # the sum of the increases between samples
    increases: int = 0  # sample intervals in which it grew
    resets: int = 0  # times it went down (a driver reload or a GPU reset zeroes it)
    recent: tuple[str, ...] = ()


@record
class ClockSeries:
    """One GPU's clock-event reasons and performance state while busy."""

    address: str
    samples: int = 0
    busy_samples: int = 0
    #: reason -> busy samples in which it was active
    busy_reasons: dict[str, int] | None = None
    max_temp: int | None = None  # the hottest core temperature read, degrees C
    recent: tuple[str, ...] = ()


@record
class KernelEvents:
    """New kernel-log lines of one kind about one subject during the watch."""

    kind: str  # "xid", "aer" or "link_down"
    subject: str
    count: int = 0
    first_t: float = 0.0
    last_t: float = 0.0
    examples: tuple[str, ...] = ()


@record
class WatchRecord:
    """The summaries of one watch; ``missing`` says why a stored record could not be read."""

    origin: str
    duration_s: float = 0.0
    interval_s: float = 0.0
    samples: int = 0
    links: tuple[LinkSeries, ...] = ()
    counters: tuple[CounterSeries, ...] = ()
    clocks: tuple[ClockSeries, ...] = ()
    events: tuple[KernelEvents, ...] = ()
    #: what could not be sampled, and why (no GPU runtime view, kernel log unreadable, ...)
    not_sampled: tuple[str, ...] = ()
    missing: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("missing")
        return data


_SERIES = {"links": LinkSeries, "counters": CounterSeries, "clocks": ClockSeries, "events": KernelEvents}


class _Bad(ValueError):
    pass


def _value(name: str, kind: str, value: Any) -> Any:
    """``value`` checked against the annotation ``kind`` (as written in this module)."""
    optional = kind.endswith(" | None")
    base = kind.removesuffix(" | None")
    if value is None and optional:
        return None
    if base == "str" and isinstance(value, str) and len(value) <= 4096:
        return value
    if base == "int" and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63:
        return value
    if base == "float" and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and 0 <= value < 1e9:
        return float(value)
    if base == "tuple[str, ...]" and isinstance(value, list) and len(value) <= RECENT \
            and all(isinstance(v, str) and len(v) <= 4096 for v in value):
        return tuple(value)
    if base == "dict[str, int]" and isinstance(value, dict) and len(value) <= 64 \
            and all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for k, v in value.items()):
        return dict(value)
    raise _Bad(f"{name}: {type(value).__name__} is not {kind}")


def _series(cls: type, item: Any, where: str) -> Any:
    if not isinstance(item, dict):
        raise _Bad(f"{where}: not an object")
    known = {f.name: str(f.type) for f in fields(cls)}
    extra = set(item) - set(known)
    if extra:
        raise _Bad(f"{where}: unknown field {sorted(extra)[0]!r}")
    return cls(**{k: _value(f"{where}.{k}", known[k], v) for k, v in item.items()})


def from_dict(data: Any, origin: str) -> WatchRecord:
    """The record in ``data`` (as :meth:`WatchRecord.to_dict` wrote it); raises ValueError if malformed."""
    if not isinstance(data, dict):
        raise _Bad("not an object")
    out: dict[str, Any] = {"origin": origin}
    total = 0
    for key, value in data.items():
        if key in _SERIES:
            if not isinstance(value, list):
                raise _Bad(f"{key}: not a list")
            total += len(value)
            if total > MAX_SERIES:
                raise _Bad(f"more than {MAX_SERIES} series")
            out[key] = tuple(_series(_SERIES[key], item, f"{key}[{i}]") for i, item in enumerate(value))
        elif key in ("duration_s", "interval_s"):
            out[key] = _value(key, "float", value)
        elif key == "samples":
            out[key] = _value(key, "int", value)
        elif key == "not_sampled":
            if not isinstance(value, list) or len(value) > 64 or not all(isinstance(v, str) for v in value):
                raise _Bad("not_sampled: not a list of strings")
            out[key] = tuple(v[:4096] for v in value)
        elif key != "origin":
            raise _Bad(f"unknown field {key!r}")
    return WatchRecord(**out)


def build_watch(src: Source) -> WatchRecord | None:
    """The record ``gnd collect --watch`` stored in the snapshot; ``None`` when it holds none."""
    if not src.exists(PATH):
        return None
    where = f"{src.location}/{PATH}" if src.location else PATH
    raw = src.read_bytes(PATH, cap=MAX_BYTES)
    if raw is None:
        return WatchRecord(origin=where, missing=f"{PATH}: unreadable or larger than {MAX_BYTES >> 20} MiB")
    try:
        return from_dict(json.loads(raw), where)
    except (ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
        return WatchRecord(origin=where, missing=f"{PATH}: {str(exc)[:200]}")
