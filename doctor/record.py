"""``@record``: a frozen dataclass that is cheap to define.

``@dataclass(frozen=True)`` compiles six generated methods per class (about 1 ms each class, some
80 ms of every ``gnd check`` start-up). ``@record`` lets the standard library do the field
processing (``dataclass(init=False, repr=False, eq=False)``, no compiling) and then attaches
``__eq__``, ``__hash__``, ``__repr__``, ``__setattr__`` and ``__delattr__`` that need no compiling
(closures over the class's field names) and an ``__init__`` that binds its arguments in a loop for
the class's first :data:`WARM_CALLS` instantiations and is then compiled as the stdlib's would be,
so a class instantiated a few times in a run (most of them in ``gnd check``) compiles nothing and
one instantiated thousands of times (``gnd fleet``) runs the compiled ``__init__``.

To every caller the result is a frozen dataclass: ``dataclasses.is_dataclass/fields/replace/asdict``
work, assigning or deleting a field raises ``FrozenInstanceError``, equality, hash and repr are
those the standard library generates, ``__post_init__``, ``field(default_factory=...)``,
``field(compare=False, repr=False, hash=..., init=False, kw_only=...)`` are honoured and instances
pickle. A class whose body defines one of those methods, ``__slots__``, an ``InitVar`` or that
inherits from a dataclass gets plain ``@dataclass(frozen=True)`` (same behaviour, full price).
"""

from __future__ import annotations

import contextlib
import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar

from doctor import PLAIN

__all__ = ["record"]

_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform  # the checker's view; not needed at run time
else:
    def dataclass_transform(**_kwargs: Any) -> Callable[[_T], _T]:
        return lambda func: func

#: what the standard library generates itself when the class body defines it: leave those to it
_OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__slots__")


class _Factory:
    """Default of a ``default_factory`` parameter in the generated ``__init__`` (as in the stdlib)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
_MISSING: Any = dataclasses.MISSING

#: instantiations of a class before its ``__init__`` is compiled: compiling costs about 0.25 ms, the
#: loop-bound one about twice the compiled one's time (0.7-3 us more a call for 2-20 fields)
WARM_CALLS = 64


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: type[_T]) -> type[_T]:
    """Make ``cls`` a frozen dataclass, like ``@dataclass(frozen=True)`` but without compiling."""
    if PLAIN or _needs_stdlib(cls):
        return dataclasses.dataclass(frozen=True)(cls)
    doc = cls.__dict__.get("__doc__")
    if not doc:
        cls.__doc__ = "-"  # else the stdlib builds one from inspect.signature (a tenth of the cost)
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not doc:
        cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in fields if f.init)})"
    params = getattr(cls, "__dataclass_params__", None)
    for flag in ("init", "repr", "eq", "frozen"):  # what the class now behaves as (a subclass checks frozen)
        with contextlib.suppress(AttributeError, TypeError):  # read-only elsewhere? then cosmetic only
            setattr(params, flag, True)
    _check_order(fields)
    names = frozenset(f.name for f in fields)
    compare = _tuple_of([f.name for f in fields if f.compare])
    hashed = _tuple_of([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
    shown = tuple(f.name for f in fields if f.repr)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return compare(self) == compare(other)
        return NotImplemented

    def __hash__(self: Any) -> int:
        return hash(hashed(self))

    def __repr__(self: Any) -> str:
        return f"{self.__class__.__qualname__}({', '.join([f'{n}={getattr(self, n)!r}' for n in shown])})"

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[misc, arg-type]

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[misc, arg-type]

    repr_ = reprlib.recursive_repr()(__repr__)
    for func in (__eq__, __hash__, repr_, __setattr__, __delattr__, _warm_init(cls, fields)):
        name = "__repr__" if func is repr_ else func.__name__
        func.__qualname__ = f"{cls.__qualname__}.{name}"
        type.__setattr__(cls, name, func)
    return cls


def _needs_stdlib(cls: type) -> bool:
    if any(name in cls.__dict__ for name in _OWN):
        return True
    if any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]):
        return True
    annotations = cls.__dict__.get("__annotations__", {})
    return any(isinstance(a, dataclasses.InitVar) or a is dataclasses.InitVar or "InitVar" in str(a)
               for a in annotations.values())


def _tuple_of(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """obj -> tuple of those attributes (what the stdlib's generated methods compare and hash)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return attrgetter(*names)


def _check_order(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """The stdlib's definition-time check, which ``init=False`` skips."""
    seen_default = False
    for f in fields:
        if not f.init or f.kw_only:
            continue
        if f.default is not _MISSING or f.default_factory is not _MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


def _warm_init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """An ``__init__`` that binds arguments in a loop for the class's first :data:`WARM_CALLS`
    instantiations, then compiles the stdlib's ``__init__`` and installs it in the class. A call it
    does not handle plainly (an unknown, missing or doubled argument) goes to the compiled one, which
    raises the stdlib's error."""
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    accepted = frozenset(f.name for f in fields if f.init)
    #: (name, position or -1, passed to __init__, default or _MISSING, factory or None)
    plan: tuple[tuple[str, int, bool, Any, Any], ...] = tuple(
        (f.name, positional.index(f.name) if f.name in positional else -1, f.init, f.default,
         None if f.default_factory is _MISSING else f.default_factory) for f in fields)
    post_init = hasattr(cls, "__post_init__")
    setter = object.__setattr__
    calls = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        nargs = len(args)
        if calls <= WARM_CALLS and nargs <= len(positional) and (
                not kwargs or (kwargs.keys() <= accepted and not any(n in kwargs for n in positional[:nargs]))):
            for name, index, in_init, default, factory in plan:
                if 0 <= index < nargs:
                    value = args[index]
                elif in_init and name in kwargs:
                    value = kwargs[name]
                elif factory is not None:
                    value = factory()
                elif not in_init:
                    continue  # the class attribute holds its default, if any
                elif default is not _MISSING:
                    value = default
                else:
                    break  # a required argument is missing: let the compiled one say so
                setter(self, name, value)
            else:
                if post_init:
                    self.__post_init__()
                return
        compiled = _compile_init(cls, fields)
        type.__setattr__(cls, "__init__", compiled)  # from now on the compiled one runs directly
        compiled(self, *args, **kwargs)

    return __init__


def _compile_init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The ``__init__`` the stdlib would generate for a frozen dataclass."""
    self_name = "__record_self__" if any(f.name == "self" for f in fields) else "self"
    ns: dict[str, Any] = {"__record_set__": object.__setattr__, "__record_factory__": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    annotations: dict[str, Any] = {}
    for i, f in enumerate(fields):
        dflt = f"__record_d{i}__"
        if f.default_factory is not _MISSING:
            ns[dflt] = f.default_factory
            param = f"{f.name}=__record_factory__"
            value = f"{dflt}() if {f.name} is __record_factory__ else {f.name}" if f.init else f"{dflt}()"
        elif not f.init:
            continue  # the class attribute holds its default, if any (as in the stdlib)
        elif f.default is not _MISSING:
            ns[dflt] = f.default
            param = f"{f.name}={dflt}"
            value = f.name
        else:
            param = value = f.name
        if f.init:
            (keyword if f.kw_only else positional).append(param)
            annotations[f.name] = f.type
        body.append(f"  __record_set__({self_name}, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append(f"  {self_name}.__post_init__()")
    params = [self_name, *positional, *(["*", *keyword] if keyword else [])]
    src = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(src, ns)  # noqa: S102 - source built above from field names, which are identifiers
    init: Callable[..., None] = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**annotations, "return": None}
    return init
