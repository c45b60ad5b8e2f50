"""``lazy`` patterns compile on first use and then answer as the compiled pattern does."""

from __future__ import annotations

import re

import pytest

from doctor import PLAIN, lazyre
from doctor.lazyre import lazy


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_nothing_is_compiled_until_the_pattern_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    real = re.compile
    monkeypatch.setattr(lazyre.re, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    word = lazy(r"(?P<w>tok)en", re.IGNORECASE)
    assert word.pattern == r"(?P<w>tok)en" and compiled == []  # readable without compiling
    assert word.search("a TOKEN").group("w") == "TOK"
    assert word.sub("x", "token Token") == "x x"
    assert compiled == [r"(?P<w>tok)en"]  # once


@pytest.mark.parametrize(("pattern", "flags", "text"), [
    (r"(\d+) ([^=]+)=", 0, "12 path=/x 7 k=v"),
    (r"^[ \t]*(\w+)[ \t]*:[ \t]*(true|false)\b", re.IGNORECASE | re.MULTILINE, "a: TRUE\n  b : false\nc:x"),
    (r"x*", 0, "axxb"),
])
def test_every_method_answers_as_the_compiled_pattern(pattern: str, flags: int, text: str) -> None:
    lazy_p, real = lazy(pattern, flags), re.compile(pattern, flags)
    assert [m.span() for m in lazy_p.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy_p.findall(text) == real.findall(text)
    assert lazy_p.split(text) == real.split(text)
    assert lazy_p.subn("-", text) == real.subn("-", text)
    for method in ("search", "match", "fullmatch"):
        got, want = getattr(lazy_p, method)(text), getattr(real, method)(text)
        assert (got and got.span()) == (want and want.span())
    assert (lazy_p.flags, lazy_p.groups, lazy_p.groupindex) == (real.flags, real.groups, real.groupindex)


def test_bytes_patterns_and_unknown_attributes() -> None:
    record = lazy(rb"(\d+) ([^=]+)=")
    assert record.match(b"30 mtime=1").groups() == (b"30", b"mtime")
    with pytest.raises(AttributeError):
        record.no_such_method  # noqa: B018
    with pytest.raises(re.error):
        lazy(r"(unclosed").search("x")  # a bad pattern fails where it is used


@pytest.mark.skipif(PLAIN, reason="tests a start-up shortcut that GND_PLAIN=1 turns off")
def test_every_lazy_pattern_of_the_doctor_compiles() -> None:
    """A typo in a pattern would otherwise show only on the run that first uses it."""
    import gc
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    modules = [".".join(p.relative_to(root).with_suffix("").parts) for top in ("doctor", "checks", "reports")
               for p in sorted((root / top).rglob("*.py")) if "lazy(" in p.read_text(encoding="utf-8")]
    assert len(modules) > 30
    for name in modules:
        importlib.import_module(name.removesuffix(".__init__"))
    patterns = [o for o in gc.get_objects() if type(o) is lazyre._LazyPattern]
    assert len(patterns) > 150
    for p in patterns:
        assert re.compile(p.pattern, p._flags).pattern == p.pattern
