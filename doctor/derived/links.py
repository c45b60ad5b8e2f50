"""The one PCIe link verdict: a pure function over the numbers at both ends of a link.

Every reader judges a link here: the checks (through :class:`doctor.derived.pcie.Link`), the
inventory (which stores the verdict in each device record of a result) and the renderers that
draw a saved result (TUI and SVG topology, which call :func:`judge_record` only for an old result
whose records lack the stored verdict).

Rules (docs/checks.md#pcie-link-downgrade):

* The current speed and width are read at the child's end; when one is missing and the parent is a
  root or switch downstream port, the parent's value (which describes the link below it) stands in.
* The expected speed and width are the lower of the two ends' maxima (the child's maximum when the
  parent's is unknown; unknown when the child's is unknown). NCCL does the same.
* **Width 0 is "down"**: the link is down or the device sits in D3cold. A down link is never
  compared with its maxima and never counted as bandwidth; renderers draw it as a fault.
* Any of the four numbers unknown: ``unknown``.
* Narrower than expected: ``degraded-width`` (whatever the speed). Slower than expected (by more
  than 0.01 GT/s) and full width: ``degraded-speed``, or ``power-saving`` when the device is an
  idle (not known busy) GPU, which parks its link at a lower speed on purpose.
* ``slot_limited``: the child could run faster or wider than the port above allows; not a fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from doctor.facts.pci import DOWNSTREAM, ROOT_PORT, UPSTREAM
from doctor.record import record

OK = "ok"
DEGRADED_WIDTH = "degraded-width"
DEGRADED_SPEED = "degraded-speed"
POWER_SAVING = "power-saving"
DOWN = "down"
UNKNOWN = "unknown"
STATES = (OK, DEGRADED_WIDTH, DEGRADED_SPEED, POWER_SAVING, DOWN, UNKNOWN)
#: Speeds closer than this (GT/s) count as equal.
SPEED_TOLERANCE = 0.01


@record
class LinkEnd:
    """The link numbers one end of a link reports (a device or the port above it)."""

    cur_speed: float | None = None
    cur_width: int | None = None
    max_speed: float | None = None
    max_width: int | None = None
    port_type: str | None = None


@record
class LinkVerdict:
    """How a link runs compared with what both ends support (see the module docstring)."""

    state: str
    cur_speed: float | None
    cur_width: int | None
    exp_speed: float | None
    exp_width: int | None
    width_short: bool = False
    speed_short: bool = False
    slot_limited: bool = False

    @property
    def degraded(self) -> bool:
        """A real fault of the link: narrower, or slower without an idle GPU's excuse, or down."""
        return self.state in (DEGRADED_WIDTH, DEGRADED_SPEED, DOWN)

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "cur_speed": self.cur_speed, "cur_width": self.cur_width,
                "exp_speed": self.exp_speed, "exp_width": self.exp_width, "width_short": self.width_short,
                "speed_short": self.speed_short, "slot_limited": self.slot_limited}

    @classmethod
    def from_dict(cls, data: object) -> LinkVerdict | None:
        """A stored verdict (from a saved result), or None when it is absent or malformed."""
        if not isinstance(data, Mapping) or data.get("state") not in STATES:
            return None
        return cls(str(data["state"]), _num(data.get("cur_speed")), _int(data.get("cur_width")),
                   _num(data.get("exp_speed")), _int(data.get("exp_width")), data.get("width_short") is True,
                   data.get("speed_short") is True, data.get("slot_limited") is True)


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _int(value: object) -> int | None:
    num = _num(value)
    return int(num) if num is not None and num == num and abs(num) < 1 << 31 else None


def _lower(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def judge_link(cur_speed: float | None, cur_width: int | None, exp_speed: float | None, exp_width: int | None,
               idle: bool = False, slot_limited: bool = False) -> LinkVerdict:
    """The verdict over a link's current and expected numbers; ``idle``: the device is an idle GPU."""
    if cur_width == 0:
        return LinkVerdict(DOWN, cur_speed, cur_width, exp_speed, exp_width, slot_limited=slot_limited)
    if cur_speed is None or cur_width is None or exp_speed is None or exp_width is None:
        return LinkVerdict(UNKNOWN, cur_speed, cur_width, exp_speed, exp_width, slot_limited=slot_limited)
    width_short = cur_width < exp_width
    speed_short = cur_speed < exp_speed - SPEED_TOLERANCE
    if width_short:
        state = DEGRADED_WIDTH
    elif speed_short:
        state = POWER_SAVING if idle else DEGRADED_SPEED
    else:
        state = OK
    return LinkVerdict(state, cur_speed, cur_width, exp_speed, exp_width, width_short, speed_short, slot_limited)


def judge_ends(child: LinkEnd, parent: LinkEnd | None, idle: bool = False) -> LinkVerdict:
    """The verdict of the link between ``child`` and the port above it (None when missing)."""
    cur_speed, cur_width = child.cur_speed, child.cur_width
    if (cur_speed is None or cur_width is None) and parent is not None \
            and parent.port_type in (ROOT_PORT, DOWNSTREAM):
        cur_speed = cur_speed if cur_speed is not None else parent.cur_speed
        cur_width = cur_width if cur_width is not None else parent.cur_width
    p_speed = parent.max_speed if parent is not None else None
    p_width = parent.max_width if parent is not None else None
    exp_speed = _lower(child.max_speed, p_speed) if child.max_speed is not None else None
    exp_width = _lower(child.max_width, p_width) if child.max_width is not None else None
    slot_limited = parent is not None and (
        (child.max_speed is not None and p_speed is not None and child.max_speed > p_speed)
        or (child.max_width is not None and p_width is not None and child.max_width > p_width))
    return judge_link(None if cur_speed is None else float(cur_speed), None if cur_width is None else int(cur_width),
                      None if exp_speed is None else float(exp_speed), None if exp_width is None else int(exp_width),
                      idle=idle, slot_limited=slot_limited)


def is_internal(parent_port_type: str | None, child_port_type: str | None) -> bool:
    """The virtual bus inside a switch (upstream port -> its downstream ports): no physical link."""
    return parent_port_type == UPSTREAM and child_port_type == DOWNSTREAM


def end_of_record(record: Mapping[str, Any]) -> LinkEnd:
    """A :class:`LinkEnd` from an inventory topology record (plain data from a saved result)."""
    port_type = record.get("port_type")
    return LinkEnd(_num(record.get("cur_speed")), _int(record.get("cur_width")), _num(record.get("max_speed")),
                   _int(record.get("max_width")), port_type if isinstance(port_type, str) else None)


def judge_record(record: Mapping[str, Any], parent: Mapping[str, Any] | None, idle: bool = False
                 ) -> LinkVerdict | None:
    """The verdict of a topology record's upstream link: the stored one, else judged now (old results).

    None when the record has no link to judge (no parent, or a switch's internal bus).
    """
    if "link" in record:
        return LinkVerdict.from_dict(record.get("link"))
    if parent is None or is_internal(parent.get("port_type"), record.get("port_type")):
        return None
    return judge_ends(end_of_record(record), end_of_record(parent), idle=idle)
