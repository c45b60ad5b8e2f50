"""The one way from a source to a result: open it, build the facts, run the checks.

``gnd check``, ``report``, ``fix-script``, ``tui``, ``diff``, ``fleet`` and ``baseline`` all call
:func:`analyse` (or :func:`open_facts`), so a source, ``--only``, ``--deploy`` and ``--baseline``
mean the same thing everywhere. The baseline is a fact: loaded here, attached to the facts and
judged by the ordinary check ``baseline.deviation``. The result comes back with secrets masked
and every string through the one sanitiser (:func:`doctor.textsafe.sanitised`; a saved result
gets the same in :func:`doctor.result_io.to_result`, and every format again where it renders).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from doctor import PLAIN

if TYPE_CHECKING:
    from doctor.deadline import Deadline
    from doctor.facts import Facts
    from doctor.facts.watch import WatchRecord
    from doctor.registry import Check
    from doctor.runner import Result
    from doctor.sources import Source


#: Commands every full run reads (the PCI tree, the Xid check), started before the checks are loaded
PREFETCH = ("dmesg", "lspci_vvv")


def open_facts(source: str | Source | None, *, deploy: Sequence[str] = (), baseline: str | None = None,
               watch: WatchRecord | None = None) -> Facts:
    """Facts of ``source`` (a path, ``None`` for the live host, or an opened :class:`Source`).

    A bad source or baseline raises :class:`~doctor.errors.DoctorError` with one line.
    """
    from doctor.facts import Facts
    from doctor.sources import Source, open_source

    src = source if isinstance(source, Source) else open_source(source)
    known_good = None
    if baseline:
        from doctor.facts.baseline import load_baseline

        known_good = load_baseline(baseline)
    return Facts(src, deploy_paths=tuple(deploy), baseline=known_good, watch=watch)


def analyse(source: str | Source | None, *, only: Sequence[str] | None = None, deploy: Sequence[str] = (),
            baseline: str | None = None, checks: list[Check] | None = None, watch: WatchRecord | None = None,
            deadline: Deadline | None = None) -> Result:
    """Run the (selected) checks on ``source`` and return the ranked result (see :func:`analyse_facts`)."""
    return analyse_facts(source, only=only, deploy=deploy, baseline=baseline, checks=checks, watch=watch,
                         deadline=deadline)[0]


def analyse_facts(source: str | Source | None, *, only: Sequence[str] | None = None, deploy: Sequence[str] = (),
                  baseline: str | None = None, checks: list[Check] | None = None,
                  watch: WatchRecord | None = None, deadline: Deadline | None = None) -> tuple[Result, Facts]:
    """Run the (selected) checks on ``source``: the ranked result and the facts it was computed from
    (what ``gnd fix-script`` binds its fixes to).

    ``only``: check ids or prefixes (``pcie``); ``deploy``: extra deployment files to inspect;
    ``baseline``: a ``gnd baseline`` TOML file whose deviations check ``baseline.deviation`` reports;
    ``checks``: the loaded checks (fleet workers load them once), default all installed ones;
    ``watch``: what ``gnd watch`` sampled (judged by the ``watch.*`` checks).
    ``deadline``: the time limit of the whole run (:mod:`doctor.deadline`), commands and checks together.
    """
    from doctor.sources import Source, open_source

    src = source if isinstance(source, Source) else open_source(source)
    src.deadline = deadline
    full = only is None and checks is None and not PLAIN
    if full:  # the live host starts these now; they run while the checks load (about 20 ms of dmesg here)
        src.prefetch(PREFETCH)
    from doctor.runner import run_checks

    try:
        facts = open_facts(src, deploy=deploy, baseline=baseline, watch=watch)
        result = run_checks(facts, only=list(only) if only is not None else None, checks=checks,
                            deadline=deadline)
    except Exception:  # a bad --deploy or --baseline file: still reap what was started
        if full:
            _read_prefetched(src)
        raise
    if full:
        _read_prefetched(src)
    from doctor.textsafe import sanitised

    return sanitised(masked(result), exact_fixes=True), facts


def _read_prefetched(src: Source) -> None:
    """Wait for the prefetched commands (normally the checks read them already): no child is left unwaited."""
    for name in PREFETCH:
        src.command(name)


def masked(result: Result) -> Result:
    """``result`` with every secret-shaped string masked, on the objects themselves (secrets never leave
    the host, whatever the output). Done once, here: no renderer masks again."""
    return _Masker().walk(result)  # type: ignore[no-any-return]


class _Masker:
    """One linear pass over a result: each string masked once (:func:`doctor.secrets.mask_text`), however
    often it repeats (20,000 PCI addresses recur in the topology, the digest and the findings), and every
    object that holds nothing to mask kept as the very object, so nothing is copied or compared."""

    def __init__(self) -> None:
        from doctor.secrets import mask_text

        self.mask = mask_text  # what mask_data does to a string, without its bounded cache (this one is whole)
        self.seen: dict[str, str] = {}  # a string -> its masked form (the result holds them all anyway)

    def text(self, value: str) -> str:
        got = self.seen.get(value)
        if got is None:
            got = self.seen[value] = self.mask(value)
        return value if got == value else got  # the very string when clean: a message keeps its translation

    def walk(self, value: Any) -> Any:
        """``value`` with its strings masked; the very object when nothing changed."""
        cls = type(value)
        if cls is str or (isinstance(value, str) and not isinstance(value, Enum)):
            return self.text(value)
        if cls in _SCALARS or isinstance(value, Enum):
            return value
        if isinstance(value, dict):
            text, walk = self.text, self.walk
            pairs = []
            changed = False
            for k, v in value.items():
                nk = text(k) if isinstance(k, str) else k
                t = type(v)  # a scalar or plain string (most of a result) without a call to walk
                nv = v if t in _SCALARS else text(v) if t is str else walk(v)
                pairs.append((nk, nv))
                changed = changed or nk is not k or nv is not v
            return dict(pairs) if changed else value
        if isinstance(value, (list, tuple)):
            items = [self.walk(v) for v in value]
            if all(a is b for a, b in zip(items, value)):
                return value
            return type(value)(items) if isinstance(value, tuple) else items
        names = _FIELDS.get(cls)
        if names is None:
            if not is_dataclass(value) or isinstance(value, type):
                return value
            names = _FIELDS[cls] = tuple(f.name for f in fields(value) if f.init)
        news = {}
        for name in names:
            old = getattr(value, name)
            t = type(old)
            new = old if t in _SCALARS else self.text(old) if t is str else self.walk(old)
            if new is not old:
                news[name] = new
        return replace(value, **news) if news else value


#: types whose values hold no text
_SCALARS = frozenset({int, float, bool, type(None), bytes})
#: a dataclass type -> the names of its ``__init__`` fields (what the walk visits and ``replace`` takes)
_FIELDS: dict[type, tuple[str, ...]] = {}
