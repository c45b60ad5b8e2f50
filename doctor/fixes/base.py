"""The builder registry, parameter validation and the inventory context."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from doctor.findings import Fix, FixStep
from doctor.lazyre import lazy
from doctor.record import record


class FixRejected(ValueError):
    """Parameters a builder does not accept; the message says why (one line)."""


@record
class Context:
    """What exists on the host the fix is for; ``None`` skips that existence check (at check time)."""

    netdevs: frozenset[str] | None = None
    pci: frozenset[str] | None = None
    rdma: frozenset[str] | None = None

    @classmethod
    def from_inventory(cls, inventory: object) -> Context:
        """Interface names, PCI addresses and RDMA ports listed in a result's ``inventory``."""
        inv = inventory if isinstance(inventory, dict) else {}

        def rows(key: str) -> list[dict[str, Any]]:
            value = inv.get(key)
            return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []

        nics = rows("nics")
        netdevs = {str(n) for r in nics for n in (r.get("netdevs") or []) if isinstance(r.get("netdevs"), list)}
        rdma = {str(n) for r in nics for n in (r.get("rdma") or []) if isinstance(r.get("rdma"), list)}
        pci = {str(r.get("address")) for key in ("gpus", "nics", "topology") for r in rows(key) if r.get("address")}
        return cls(netdevs=frozenset(netdevs), pci=frozenset(pci), rdma=frozenset(rdma))


NETDEV = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}")
PCI_ADDRESS = lazy(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
CPULIST = lazy(r"\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?){0,1023}")
UNIT = lazy(r"[A-Za-z0-9_][A-Za-z0-9@_.:-]{0,200}\.service")
RDMA_DEVICE = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


class Params:
    """Typed, validated access to a builder's parameters; unread keys are refused by ``done``."""

    def __init__(self, data: object, ctx: Context) -> None:
        if not isinstance(data, dict):
            raise FixRejected("parameters are not an object")
        self.data = data
        self.ctx = ctx
        self.read: set[str] = set()

    def raw(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self.data.get(key, default)

    def text(self, key: str, pattern: re.Pattern[str], what: str, optional: bool = False) -> str:
        value = self.raw(key)
        if value is None and optional:
            return ""
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise FixRejected(f"{key}: not a valid {what}")
        return value

    def choice(self, key: str, allowed: Iterable[str]) -> str:
        value = self.raw(key)
        if value not in tuple(allowed):
            raise FixRejected(f"{key}: not one this check produces")
        return str(value)

    def integer(self, key: str, low: int, high: int, optional: bool = False) -> int | None:
        value = self.raw(key)
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise FixRejected(f"{key}: not an integer from {low} to {high}")
        return value

    def items(self, key: str, check: Callable[[object], str], limit: int = 256) -> list[str]:
        value = self.raw(key, [])
        if not isinstance(value, list) or len(value) > limit:
            raise FixRejected(f"{key}: not a list")
        return [check(v) for v in value]

    def mapping(self, key: str, limit: int = 1024) -> dict[str, Any]:
        value = self.raw(key, {})
        if not isinstance(value, dict) or len(value) > limit:
            raise FixRejected(f"{key}: not an object")
        return value

    def netdev(self, key: str) -> str:
        return netdev(self.raw(key), self.ctx)

    def pci(self, key: str) -> str:
        return pci_address(self.raw(key), self.ctx)

    def done(self) -> None:
        extra = set(self.data) - self.read
        if extra:
            raise FixRejected(f"unexpected parameter {sorted(extra)[0]!r}")


def netdev(value: object, ctx: Context) -> str:
    if not isinstance(value, str) or not NETDEV.fullmatch(value) or value in (".", ".."):
        raise FixRejected("not a valid interface name")
    if ctx.netdevs is not None and value not in ctx.netdevs:
        raise FixRejected(f"interface {value} is not in the result's inventory")
    return value


def pci_address(value: object, ctx: Context) -> str:
    if not isinstance(value, str) or not PCI_ADDRESS.fullmatch(value):
        raise FixRejected("not a valid PCI address")
    if ctx.pci is not None and value not in ctx.pci:
        raise FixRejected(f"PCI device {value} is not in the result's inventory")
    return value


def cpulist(value: object) -> str:
    if not isinstance(value, str) or not CPULIST.fullmatch(value):
        raise FixRejected("not a valid CPU list")
    return value


def unit(value: object) -> str:
    if not isinstance(value, str) or not UNIT.fullmatch(value):
        raise FixRejected("not a valid systemd service name")
    return value


Builder = Callable[[Params], list[FixStep]]
BUILDERS: dict[str, Builder] = {}


def builder(name: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        BUILDERS[name] = fn
        return fn
    return register


def load_builders() -> dict[str, Builder]:
    """Every registered builder; the builder modules are imported on first use (a healthy node needs none)."""
    import doctor.fixes.builders  # noqa: F401  (registers the builders)
    import doctor.fixes.deploy  # noqa: F401  (registers the start-up builders)

    return BUILDERS


def build(name: str, params: dict[str, Any], notes: str = "", ctx: Context | None = None) -> Fix:
    """The fix ``name`` builds from ``params``; ``FixRejected`` when it does not accept them."""
    fn = load_builders().get(name)
    if fn is None:
        raise FixRejected(f"no fix builder named {name!r}" if name else "no fix builder recorded (a 1.x result?)")
    p = Params(params, ctx or Context())
    steps = fn(p)
    p.done()
    return Fix(steps=tuple(steps), notes=notes, builder=name, params=params)


def make(name: str, notes: str = "", **params: Any) -> Fix:
    """For checks: the fix ``name`` builds; parameters it refuses (a hostile name in the data) leave
    only the notes, with the reason."""
    try:
        return build(name, params, notes)
    except FixRejected as exc:
        return Fix(notes=(notes + " " if notes else "") + f"(No commands: {exc}.)")


def rebuild(fix: Fix, ctx: Context) -> Fix:
    """``fix`` rebuilt from its builder and parameters, validated against ``ctx``; never from its steps."""
    return build(fix.builder, fix.params, fix.notes, ctx)
