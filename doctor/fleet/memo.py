"""Facts that a fleet worker reuses from node to node when what they were built from is the same.

Fact builders are pure functions of what they read through the :class:`~doctor.sources.Source`
(and of other facts). :class:`MemoFacts` builds each fact family with the source's tree traced:
the paths whose entry or children any primitive looked at (link resolution included), and the
other facts it used. Each tarball's tree is compared with a few trees read before (see
``doctor.sources.tree._Reference``); the next node matched to the same reference differs from the
recording node only in the paths of the two trees' deltas; when none of the traced paths among
those has a different entry or children, and every fact used is the very same object, the
recorded value is returned: exactly what building it again would give. Anything else (another source kind, a tree that shares nothing, the live
host) builds as :class:`~doctor.facts.Facts` does. A few entries per family are kept, so memory
stays flat however many nodes a worker analyses.
"""

from __future__ import annotations

import inspect
import weakref
from dataclasses import fields, is_dataclass, replace
from functools import cached_property
from math import copysign
from operator import attrgetter
from typing import Any

from doctor.facts import Facts
from doctor.sources.tree import TarTree

#: families never reused: per-run caches or readers holding the source itself
NEVER = frozenset(("derived", "proc_files"))
#: recorded builds kept per family (a worker meets a few configurations in turn)
KEEP = 6
#: families that differ from node to node in a field or two (the host name is in both): a build or a
#: check that reads them notes each field read and method call with its result, not the whole value,
#: and is reused when those results are equal on the next node
FIELDS = frozenset(("host", "sysctls", "proc_files"))
_NOT_WHOLE = FIELDS | {"derived"}


class _Recorded:
    """One build of a fact family: the paths it looked at, their states where the recording tree
    differed from its reference, that tree's changed paths, the facts it used, the collector's
    reasons it read from the manifest, and the value."""

    __slots__ = ("looked", "own", "delta", "uses", "reasons", "value")

    def __init__(self, looked: frozenset[str], own: dict[str, object], delta: frozenset[str],
                 uses: tuple[tuple[str, object], ...], reasons: tuple[tuple[str, str | None], ...],
                 value: object) -> None:
        self.looked, self.own, self.delta, self.uses, self.value = looked, own, delta, uses, value
        self.reasons = reasons


#: a traced read of the manifest's entry for one spec (``Source.manifest_reason``) is noted in the
#: tree's trace as this prefix plus the spec's name, not as the manifest file (which differs on
#: every node: its host name and collection time), so what reads one spec's reason is reused while
#: that reason is the same
_REASON = "\0manifest\0"


_MISSING = object()


def _noted_reasons(source: Any) -> Any:
    """``source.manifest_reason``, once per spec, traced as :data:`_REASON` plus the spec's name
    (the source is held weakly: no cycle keeps a node's tree alive after it)."""
    ref = weakref.ref(source)
    reasons: dict[str, str | None] = {}

    def manifest_reason(spec_name: str) -> str | None:
        src: Any = ref()
        tree = src.tree
        trace = tree._trace
        reason = reasons.get(spec_name, _MISSING)
        if reason is _MISSING:
            tree._trace = None
            try:
                reason = reasons[spec_name] = type(src).manifest_reason(src, spec_name)
            finally:
                tree._trace = trace
        if trace is not None:
            trace.add(_REASON + spec_name)
        return reason  # type: ignore[return-value]

    return manifest_reason


class _Builds(list):  # type: ignore[type-arg]
    """The use list of a fact family's build (its reads of the source are traced in the tree)."""


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
        if stack and name not in _NOT_WHOLE:  # see _Derived and FIELDS
            stack[-1].append((name, value))
        return value

    def __set__(self, facts: MemoFacts, value: Any) -> None:
        facts._values[self.name] = value


class MemoFacts(Facts):
    """:class:`Facts` whose families are reused across a worker's nodes when provably unchanged."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {}
        #: the use lists of what is being built or checked now, innermost last
        self._stack: list[list[Any]] = []
        #: this node's verdict on each field read or call noted with a given result (many checks
        #: note the same ones): (family, field or call, id of the result) -> (that result, equal now)
        self._checked: dict[tuple[str, Any, int], tuple[Any, bool]] = {}
        super().__init__(*args, **kwargs)
        tree = self._source.tree
        if isinstance(tree, TarTree):
            tree.match_reference()  # what differs from a tree read before, if any is alike
            self._source.manifest_reason = _noted_reasons(self._source)  # reads of it noted per spec

    def _manifest_reason(self, spec_name: str) -> str | None:
        return self._source.manifest_reason(spec_name)  # type: ignore[no-any-return]

    @property
    def source(self) -> Any:  # type: ignore[override]
        """The source; a check (a plugin's, say) that reads it directly is never reused."""
        stack = self._stack
        if stack and type(stack[-1]) is list:  # not a fact family's build (_Builds), which is traced
            stack[-1].append(("source", _MISSING))
        return self._source

    @source.setter
    def source(self, value: Any) -> None:
        self._source = value

    def _build(self, name: str, build: Any) -> Any:
        if name == "derived":
            return _Derived(self)
        if name in FIELDS:
            return _traced(name, self._build_family(name, build), self._stack)
        return self._build_family(name, build)

    def _build_family(self, name: str, build: Any) -> Any:
        tree = self._source.tree
        if name in NEVER or not isinstance(tree, TarTree) or tree._base is None or tree._delta is None \
                or (name == "deploy_files" and self.deploy_paths):
            self._stack.append(_Builds())  # whoever asked notes the fact, not the build's reads
            try:
                return build(self)
            finally:
                self._stack.pop()
        base, delta, kind = tree._base, tree._delta, type(self._source)
        key = ("fact", name, kind)
        memo: list[_Recorded] = base.memo.get(key) or []
        for rec in memo:
            if self._still(rec, tree):
                return rec.value
        uses = _Builds()
        self._stack.append(uses)
        try:
            value, looked = tree.traced(lambda: build(self))
        finally:
            self._stack.pop()
        reasons = tuple((p[len(_REASON):], self._manifest_reason(p[len(_REASON):]))
                        for p in looked if p.startswith(_REASON))
        if reasons:
            looked = {p for p in looked if not p.startswith(_REASON)}
        if name not in FIELDS:  # equal to an earlier build (a file changed in what it does not keep):
            for earlier in memo:  # that very object, so what uses it is reused too
                if _equal(value, earlier.value):
                    value = earlier.value
                    break
        own = {path: tree.state(path) for path in looked & delta}
        rec = _Recorded(frozenset(looked), own, frozenset(delta), _dedup(uses), reasons, value)
        # kept with the reference (and let go with it): KEEP builds of each family, most recent first
        base.memo[key] = [rec, *memo[:KEEP - 1]]
        return value

    def _still(self, rec: _Recorded, tree: TarTree) -> bool:
        """Whether ``rec`` is what building again on this node would give."""
        return _same(self, rec.uses) and tree.unchanged(rec.looked, rec.own, rec.delta) \
            and all(self._manifest_reason(spec) == reason for spec, reason in rec.reasons)

    def ranked(self, findings: list[Any]) -> list[Any]:
        """``rank(group_findings(findings, self))``, reused when the findings are the very ones of an
        earlier node (reused checks) and the facts grouping read are unchanged."""
        from doctor.findings import rank
        from doctor.grouping import group_findings

        for prev in _RANKED:
            if len(prev[0]) == len(findings) and all(a is b for a, b in zip(prev[0], findings)) \
                    and _same(self, prev[1]):
                return list(prev[2])
        uses: list[Any] = []
        self._stack.append(uses)
        try:
            out = rank(group_findings(findings, self))
        finally:
            self._stack.pop()
        _RANKED[:] = [(tuple(findings), _dedup(uses), tuple(out)), *_RANKED[:KEEP - 1]]
        return out


def _same(facts: MemoFacts, uses: tuple[Any, ...]) -> bool:
    """Whether each fact in ``uses`` is the very object noted, and each field read or call noted on a
    :data:`FIELDS` value gives an equal result now (a fact that fails to build: no)."""
    values = facts._values
    checked = facts._checked
    facts._stack.append([])  # checking is not using: what it reads is noted nowhere
    try:
        for use in uses:
            if len(use) == 2:
                current = values.get(use[0], _MISSING)
                if current is _MISSING:  # not built yet on this node (or the source itself)
                    current = getattr(facts, use[0])
                if current is not use[1]:
                    return False
                continue
            what, noted = use[1], use[2]
            key = (use[0], what, id(noted))
            hit = checked.get(key)
            if hit is None or hit[0] is not noted:
                current = values.get(use[0], _MISSING)
                if current is _MISSING:
                    current = getattr(facts, use[0])
                got = getattr(current, what[0])(*what[1]) if type(what) is tuple else getattr(current, what)
                hit = checked[key] = (noted, _equal(got, noted))
            if not hit[1]:
                return False
        return True
    except Exception:  # building it again will raise where the plain run raises
        return False
    finally:
        facts._stack.pop()


def _dedup(uses: list[Any]) -> tuple[Any, ...]:
    """Each use once (the first time it was noted); the facts used whole first (one ``is`` each: where
    nodes of other configurations take turns, a check's earlier runs mostly differ there)."""
    out: dict[Any, Any] = {}
    for use in uses:
        out.setdefault(use[0] if len(use) == 2 else (use[0], use[1]), use)
    return tuple(out.values())


_SCALARS = (str, int, float, bool, bytes, type(None))
_PLAIN = frozenset(_SCALARS)
#: the fields of each dataclass compared, as a tuple (None: not a dataclass)
_FIELDS_OF: dict[type, Any] = {}


def _equal(a: Any, b: Any) -> bool:
    """Equal, in order too (dicts), made of plain values; anything else only if it is the same object."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _PLAIN:
        if kind is float and a == 0.0:  # 0.0 and -0.0 are equal but print otherwise
            return b == 0.0 and copysign(1.0, a) == copysign(1.0, b)
        return a == b  # type: ignore[no-any-return]
    if kind is tuple or kind is list:
        return len(a) == len(b) and all(map(_equal, a, b))
    if kind is dict:
        return len(a) == len(b) and all(map(_equal, a, b)) and all(map(_equal, a.values(), b.values()))
    get = _FIELDS_OF.get(kind, _MISSING)
    if get is _MISSING:
        names = tuple(f.name for f in fields(a)) if is_dataclass(a) else None
        get = _FIELDS_OF[kind] = None if names is None else attrgetter(*names) if len(names) > 1 else \
            (lambda o, n=names[0]: (getattr(o, n),)) if names else (lambda o: ())
    if get is not None:
        return all(map(_equal, get(a), get(b)))
    if isinstance(a, _SCALARS):  # a str or int subclass (an enum)
        return a == b
    if isinstance(a, (tuple, list)):  # a named tuple
        return len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(map(_equal, a, b)) and all(map(_equal, a.values(), b.values()))
    if isinstance(a, frozenset):  # module names, CPU sets
        return a == b and all(type(x) is str or type(x) is int for x in (*a, *b))
    return False


_TRACED: dict[type, type] = {}


def _traced(family: str, value: Any, stack: list[list[Any]]) -> Any:
    """A copy of the dataclass (or plain object) ``value`` whose public field reads and method calls
    note themselves (family, field or (method, args), result) in the innermost use list of ``stack``."""
    cls = type(value)
    if cls in _TRACED.values() or not (is_dataclass(value) or hasattr(value, "__dict__")):
        return value
    tcls = _TRACED.get(cls)
    if tcls is None:
        tcls = _TRACED[cls] = _traced_class(family, cls)
    copy: Any = object.__new__(tcls)
    object.__setattr__(copy, "_gnd_stack", stack)
    if is_dataclass(value):
        for f in fields(value):
            object.__setattr__(copy, f.name, object.__getattribute__(value, f.name))
    else:  # a reader such as ProcFiles: same state, methods noted
        copy.__dict__.update(value.__dict__)
    return copy


def _traced_class(family: str, cls: type) -> type:
    def __getattribute__(self: Any, attr: str) -> Any:
        value = object.__getattribute__(self, attr)
        if attr[0] != "_" and not callable(value):
            stack = object.__getattribute__(self, "_gnd_stack")
            if stack:
                stack[-1].append((family, attr, value))
        return value

    def method(name: str, func: Any) -> Any:
        def call(self: Any, *args: Any) -> Any:
            stack = object.__getattribute__(self, "_gnd_stack")
            object.__setattr__(self, "_gnd_stack", None)  # the call is noted, not the fields it reads
            try:
                result = func(self, *args)
            finally:
                object.__setattr__(self, "_gnd_stack", stack)
            if stack and all(isinstance(a, _SCALARS) for a in args):
                stack[-1].append((family, (name, args), result))
            elif stack:
                stack[-1].append((family, name, _MISSING))  # unusual arguments: never reused
            return result
        return call

    body: dict[str, Any] = {"__slots__": ("_gnd_stack",), "__getattribute__": __getattribute__}
    for klass in cls.__mro__[:-1]:
        for name, attr in vars(klass).items():
            if not name.startswith("_") and inspect.isfunction(attr) and name not in body:
                body[name] = method(name, attr)
    return type(cls.__name__, (cls,), body)


def _families() -> dict[str, _Family]:
    out = {}
    for klass in reversed(Facts.__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, cached_property):
                out[name] = _Family(name, attr.func)
    return out


for _name, _family in _families().items():
    setattr(MemoFacts, _name, _family)


#: the last findings :meth:`MemoFacts.ranked` ordered: (findings, uses, ranked), most recent first
_RANKED: list[tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]] = []


class _Derived(dict):  # type: ignore[type-arg]
    """``facts.derived`` of :class:`MemoFacts`: each value remembers the facts its build used, and
    whoever reads it later (a check) is noted as using them too."""

    def __init__(self, facts: MemoFacts) -> None:
        super().__init__()
        # held weakly: the facts hold this dict, and a cycle would keep the node's facts and tree
        # (thousands of objects) alive until the garbage collector walks them
        self._ref = weakref.ref(facts)
        self._uses: dict[object, list[tuple[str, object]]] = {}

    @property
    def _facts(self) -> MemoFacts:
        facts = self._ref()
        assert facts is not None  # only the facts themselves reach this dict
        return facts

    def across(self, key: object, build: Any) -> Any:
        """:func:`doctor.derived.shared`: the value of an earlier node whose every use is unchanged."""
        facts = self._facts
        if facts.baseline is not None or facts.deploy_paths:
            return build()
        stack = facts._stack
        runs = _SHARED.get(key, [])
        for run in runs:
            if _same(facts, run.uses):
                if stack:
                    stack[-1].extend(run.uses)
                return run.findings
        uses: list[Any] = []
        stack.append(uses)
        try:
            value = build()
        finally:
            stack.pop()
        _SHARED[key] = [_CheckRun(_dedup(uses), value), *runs[:KEEP - 1]]
        if stack:
            stack[-1].extend(uses)
        return value

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


#: values of :func:`doctor.derived.shared`, per key: (uses, value), most recent first
_SHARED: dict[object, list[_CheckRun]] = {}


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
        uses: list[Any] = []
        facts._stack.append(uses)
        try:
            findings = [f if f.check and f.category else replace(f, check=f.check or self.id,
                                                                 category=f.category or self.category)
                        for f in self.check(facts)]
        finally:
            facts._stack.pop()
        for run in self._runs:  # the findings an earlier node got (a reading changed that it ignores):
            if _equal(findings, run.findings):  # those very objects, so grouping and summary are reused
                findings = run.findings
                break
        self._runs = [_CheckRun(_dedup(uses), findings),
                      *self._runs[:KEEP - 1]]
        return findings
