"""Module-level regular expressions compiled on first use.

Compiling a pattern costs 0.05-1 ms and a ``gnd check`` of a plain host uses a fraction of the
doctor's ~250 patterns, so modules write ``NAME = lazy(r"...")`` instead of ``re.compile``. The
result behaves as the compiled pattern (``search``, ``match``, ``fullmatch``, ``sub``, ``subn``,
``split``, ``findall``, ``finditer``, ``pattern``, ``flags``, ``groups``, ``groupindex``); it is not
an instance of ``re.Pattern`` and cannot be passed to ``re.sub()`` and friends (call its methods).
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast

from doctor import PLAIN

__all__ = ["lazy"]

_METHODS = ("search", "match", "fullmatch", "sub", "subn", "split", "findall", "finditer", "scanner")


class _LazyPattern:
    """Compiles on the first attribute it is asked for, then keeps the compiled methods as its own."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern  # readable without compiling (patterns built from patterns)
        self._flags = flags

    def __getattr__(self, name: str) -> Any:  # only called for what is not set yet
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self._flags)
        for attr in _METHODS:
            setattr(self, attr, getattr(compiled, attr))
        self.flags, self.groups, self.groupindex = compiled.flags, compiled.groups, compiled.groupindex
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self._flags!r})"


def lazy(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """``re.compile(pattern, flags)``, done the first time the pattern is used (at once with ``GND_PLAIN=1``)."""
    if PLAIN:
        return re.compile(pattern, flags)
    return cast("re.Pattern[AnyStr]", _LazyPattern(pattern, int(flags)))
