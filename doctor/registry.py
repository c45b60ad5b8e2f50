"""Check plugins: declared with :func:`check`, discovered through the ``gpu_node_doctor.checks`` entry points.

An entry point may name a :class:`Check`, a module holding checks, or a package whose modules
hold checks (the built-in ``checks`` package is registered that way, so a new check is one new
module and nothing else changes).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from doctor.findings import ACTORS, CATEGORIES, Actor, Finding
from doctor.reads import Reads
from doctor.record import record

if TYPE_CHECKING:
    from doctor.facts import Facts

ENTRY_POINT_GROUP = "gpu_node_doctor.checks"
CheckFunc = Callable[["Facts"], Iterable[Finding]]


@record
class Check:
    """A check: stable dotted id, title, category, and a pure function from facts to findings."""

    id: str
    title: str
    category: str
    func: CheckFunc
    #: who acts on its findings (:class:`~doctor.findings.Actor`); the loader refuses a check without one
    acts: Actor | None = None
    description: str = ""
    plugin: str = "builtin"
    #: name of an optional input on Facts (e.g. ``baseline``): the check runs exactly when the user gave it
    requires: str | None = None
    #: the fix builders (:mod:`doctor.fixes.builders`) its fixes use: ``gnd fix-script`` rebuilds through no other
    fixes: tuple[str, ...] = ()
    #: the sysctls its ``sysctl`` fixes may set (``None``: any sysctl the builder knows)
    sysctls: tuple[str, ...] | None = None
    #: the environment variables it judges: the only ones its fixes may unset or set
    env: tuple[str, ...] = ()
    #: the command-line flags it judges (a flag word must match one in full): the only ones its fixes remove
    flags: tuple[re.Pattern[str], ...] = ()
    #: the inputs (:data:`doctor.inputs.INPUTS`) its verdict rests on: one missing or incomplete makes
    #: the runner report it ``unknown``, never ``pass``
    needs: tuple[str, ...] = ()
    #: why it does not apply to these facts (``None``: it applies); a check that does not apply and
    #: found nothing is "not applicable" with that reason, even when an input it needs is missing
    applies: Callable[[Facts], str | None] | None = None
    #: the option, environment, kernel-parameter and config-key values it reads: only these values
    #: survive masking (:mod:`doctor.allowlist`); every other value is replaced by a placeholder
    reads: Reads = Reads()

    def __call__(self, facts: Facts) -> Iterable[Finding]:
        return self.func(facts)


def refusal(declared: Check | None, check_id: str, builder: str, params: object) -> str:
    """Why check ``check_id`` (``declared``, ``None`` when no loaded check has that id) could not have
    produced a ``builder`` fix with ``params``; "" when it could."""
    if declared is None or builder not in declared.fixes:
        return f"check {check_id} does not produce {builder or 'builder-less'} fixes"
    keys = declared.sysctls
    wanted = params.get("set") if isinstance(params, dict) else None
    if builder == "sysctl" and keys is not None and isinstance(wanted, dict):
        from doctor.fixes.sysctl_keys import generic_key

        extra = sorted(k for k in wanted if str(k) not in keys and generic_key(str(k)) not in keys)
        if extra:
            return f"check {check_id} does not set {extra[0]}"
    return ""


def check(id: str, title: str, category: str, *, acts: Actor | str, requires: str | None = None, fixes: Iterable[str] = (),
          sysctls: Iterable[str] | None = None, needs: Iterable[str] = (),
          applies: Callable[[Facts], str | None] | None = None, env: Iterable[str] = (),
          flags: Iterable[re.Pattern[str]] = (), reads: Reads | None = None) -> Callable[[CheckFunc], Check]:
    """Decorator turning ``def fn(facts) -> Iterable[Finding]`` into a :class:`Check`.

    ``requires`` names an optional input attribute of the facts (``baseline``); such a check runs
    whenever that input was given, whatever ``--only`` says, and never otherwise. ``fixes`` names
    the fix builders the check's fixes use and ``sysctls`` the keys its ``sysctl`` fixes set
    (per-interface keys as ``net.ipv4.conf.*.rp_filter``); ``gnd fix-script`` refuses any other.
    ``env`` and ``flags`` name the variables and flags (patterns) it judges: a fix may unset, set or
    remove only those (:class:`doctor.fixes.base.Fact`).
    ``needs`` names the inputs the verdict rests on and ``applies`` says why the check does not
    apply (see :class:`Check`). ``reads`` names the values of options, environment variables,
    kernel parameters and config keys the check reads: every other such value is masked.
    ``acts`` says who acts on the findings (:class:`~doctor.findings.Actor`: ``hardware`` for the
    hardware or its firmware, ``os`` for the operating system as the node's admin sets it up,
    ``application`` for the workload and its deployment), decided by what the fixes change; a
    finding of another owner says so itself (``Finding(acts=...)``).
    """
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r} for check {id}")
    actor = Actor.parse(acts)
    if actor is None:
        raise ValueError(f"check {id}: acts={acts!r} is none of {', '.join(ACTORS)}")
    from doctor.inputs import validate

    builders, keys, inputs = tuple(fixes), None if sysctls is None else tuple(sysctls), validate(needs, id)

    def wrap(func: CheckFunc) -> Check:
        return Check(id=id, title=title, category=category, func=func, acts=actor, requires=requires, fixes=builders,
                     sysctls=keys, needs=inputs, applies=applies, env=tuple(env), flags=tuple(flags), reads=reads or Reads(), description=(func.__doc__ or "").strip().split("\n\n")[0].replace("\n", " "))

    return wrap


@record
class LoadError:
    """A plugin that could not be loaded; reported as an ``unknown`` finding, the run goes on."""

    plugin: str
    error: str


def _from_object(obj: object, seen: set[str]) -> Iterable[Check]:
    if isinstance(obj, Check):
        yield obj
        return
    if isinstance(obj, types.ModuleType):
        for value in list(vars(obj).values()):
            if isinstance(value, Check) and value.id not in seen:
                seen.add(value.id)
                yield value
        if hasattr(obj, "__path__"):
            for info in sorted(pkgutil.iter_modules(obj.__path__), key=lambda i: i.name):
                if info.name.startswith("_"):
                    continue
                module = importlib.import_module(f"{obj.__name__}.{info.name}")
                yield from _from_object(module, seen)


def _entry_points() -> list[tuple[str, Callable[[], object]]]:
    from doctor.entrypoints import entry_points

    return [(name if value != "checks" else "builtin", load) for name, value, load in entry_points(ENTRY_POINT_GROUP)]


def load_checks() -> tuple[list[Check], list[LoadError]]:
    """All checks from entry points (the built-in package too, even when not installed)."""
    checks: dict[str, Check] = {}
    errors: list[LoadError] = []
    loaders = _entry_points()
    if not any(name == "builtin" for name, _ in loaders):
        loaders.insert(0, ("builtin", lambda: importlib.import_module("checks")))
    for name, load in loaders:
        seen: set[str] = set()
        try:
            found = list(_from_object(load(), seen))
        except Exception as exc:
            errors.append(LoadError(name, f"{type(exc).__name__}: {exc}"))
            continue
        undeclared = [item.id for item in found if Actor.parse(item.acts) is None]
        if undeclared:
            errors.append(LoadError(name, f"check {undeclared[0]} declares no acts= (one of {', '.join(ACTORS)})"))
            found = [item for item in found if item.id not in undeclared]
        for item in found:
            if item.id in checks:
                continue
            checks[item.id] = item if name == "builtin" else Check(**{**item.__dict__, "plugin": name})
    return sorted(checks.values(), key=lambda c: c.id), errors
