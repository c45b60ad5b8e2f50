"""Facts that a fleet worker reuses from node to node when what they were built from is the same.

Fact builders are pure functions of what they read through the :class:`~doctor.sources.Source`
(and of other facts). :class:`MemoFacts` builds each fact family with the source's tree traced:
the paths whose entry or children any primitive looked at (link resolution included), and the
other facts it used. The next node read from the same kept first gzip member (see
``doctor.sources.tree._Prefix``) differs from the recording node only in the paths of the two
trees' deltas; when none of the traced paths among those has a different entry or children, and
every fact used is the very same object, the recorded value is returned: exactly what building
it again would give. Anything else (another source kind, a tree that shares nothing, the live
host) builds as :class:`~doctor.facts.Facts` does. A few entries per family are kept, so memory
stays flat however many nodes a worker analyses.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from doctor.facts import Facts
from doctor.sources.tree import TarTree

#: families never reused: per-run caches or readers holding the source itself
NEVER = frozenset(("derived", "proc_files"))
#: recorded builds kept per family (a worker meets a few configurations in turn)
KEEP = 6


class _Recorded:
    __slots__ = ("base", "kind", "looked", "own", "delta", "uses", "value")

    def __init__(self, base: object, kind: type, looked: frozenset[str], own: dict[str, object],
                 delta: frozenset[str], uses: tuple[tuple[str, object], ...], value: object) -> None:
        self.base, self.kind, self.looked, self.own = base, kind, looked, own
        self.delta, self.uses, self.value = delta, uses, value


#: family -> recorded builds, most recent first (per process: each fleet worker has its own)
_MEMO: dict[str, list[_Recorded]] = {}
_MISSING = object()


class _Family:
    """A data descriptor standing in for one of :class:`Facts`'s cached properties."""

    def __init__(self, name: str, build: Any) -> None:
        self.name = name
        self.build = build

    def __get__(self, facts: MemoFacts | None, owner: type | None = None) -> Any:
        if facts is None:
            return self
        name = self.name
        values = facts._values
        value = values.get(name, _MISSING)
        if value is _MISSING:
            value = values[name] = facts._build(name, self.build)
        stack = facts._stack
        if stack and name != "derived":  # a derived value notes the facts it used (see _Derived)
            stack[-1].append((name, value))
        return value

    def __set__(self, facts: MemoFacts, value: Any) -> None:
        facts._values[self.name] = value


class MemoFacts(Facts):
    """:class:`Facts` whose families are reused across a worker's nodes when provably unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {}
        self._stack: list[list[tuple[str, object]]] = []
        super().__init__(*args, **kwargs)

    def _build(self, name: str, build: Any) -> Any:
        if name == "derived":
            return _Derived(self)
        tree = self.source.tree
        if name in NEVER or not isinstance(tree, TarTree) or tree._base is None or tree._delta is None \
                or (name == "deploy_files" and self.deploy_paths):
            return build(self)
        base, delta, kind = tree._base, tree._delta, type(self.source)
        memo = _MEMO.setdefault(name, [])
        for rec in memo:
            if rec.base is base and rec.kind is kind and self._still(rec, tree, delta):
                return rec.value
        uses: list[tuple[str, object]] = []
        self._stack.append(uses)
        try:
            value, looked = tree.traced(lambda: build(self))
        finally:
            self._stack.pop()
        own = {path: tree.state(path) for path in looked & delta}
        rec = _Recorded(base, kind, frozenset(looked), own, frozenset(delta),
                        tuple({n: v for n, v in uses}.items()), value)
        memo[:] = [rec, *[r for r in memo if r.base is not base][:KEEP - 1]]
        return value

    def _still(self, rec: _Recorded, tree: TarTree, delta: set[str]) -> bool:
        """Whether ``rec`` is what building again on this node would give."""
        if not _same(self, rec.uses):
            return False
        base = rec.base
        for path in rec.looked & (delta | rec.delta):
            before = rec.own[path] if path in rec.own else base.state(path)  # type: ignore[attr-defined]
            if tree.state(path) != before:
                return False
        return True


def _same(facts: MemoFacts, uses: tuple[tuple[str, object], ...]) -> bool:
    """Whether each fact in ``uses`` is the very object noted (a fact that fails to build: no)."""
    try:
        return all(getattr(facts, name) is value for name, value in uses)
    except Exception:  # building it again will raise where the plain run raises
        return False


def _families() -> dict[str, _Family]:
    out = {}
    for klass in reversed(Facts.__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, cached_property):
                out[name] = _Family(name, attr.func)
    return out


for _name, _family in _families().items():
    setattr(MemoFacts, _name, _family)


class _Derived(dict):  # type: ignore[type-arg]
    """``facts.derived`` of :class:`MemoFacts`: each value remembers the facts its build used, and
    whoever reads it later (a check) is noted as using them too."""

    def __init__(self, facts: MemoFacts) -> None:
        super().__init__()
        self._facts = facts
        self._uses: dict[object, list[tuple[str, object]]] = {}

    def compute(self, key: object, build: Any) -> Any:
        stack = self._facts._stack
        if key in self:
            if stack:
                stack[-1].extend(self._uses[key])
            return self[key]
        uses: list[tuple[str, object]] = []
        stack.append(uses)
        try:
            value = build()
        finally:
            stack.pop()
        self[key] = value
        self._uses[key] = uses
        if stack:
            stack[-1].extend(uses)
        return value


class _CheckRun:
    __slots__ = ("uses", "findings")

    def __init__(self, uses: tuple[tuple[str, object], ...], findings: list[Any]) -> None:
        self.uses, self.findings = uses, findings


class MemoCheck:
    """A check whose findings are reused when every fact it used (directly or through derived facts)
    is the very same object as on an earlier node: checks are pure functions of the facts."""

    def __init__(self, check: Any) -> None:
        self.check = check
        self.id, self.title, self.category = check.id, check.title, check.category
        self.plugin, self.requires, self.description = check.plugin, check.requires, check.description
        self._runs: list[_CheckRun] = []

    def __call__(self, facts: Facts) -> list[Any]:
        if not isinstance(facts, MemoFacts) or facts.baseline is not None or facts.deploy_paths:
            return list(self.check(facts))
        for run in self._runs:
            if _same(facts, run.uses):
                return run.findings
        uses: list[tuple[str, object]] = []
        facts._stack.append(uses)
        try:
            findings = list(self.check(facts))
        finally:
            facts._stack.pop()
        self._runs = [_CheckRun(tuple({name: value for name, value in uses}.items()), findings),
                      *self._runs[:KEEP - 1]]
        return findings
