"""Neutralise control and invisible characters in host data before it reaches a reader.

A hostname, NIC, process or GPU name may hold ``ESC ] 52 ; c ; ... BEL`` (sets the clipboard),
other escape sequences, C1 controls, bidi overrides (reorder what the reader sees), newlines
(forge output lines) or characters that render as nothing (zero-width joiners, soft hyphens,
Hangul fillers, variation selectors, tag characters). :func:`clean` replaces each with U+FFFD so
the value stays visible but inert. What is kept is an allowlist: printable characters of the
letter, mark, number, punctuation, symbol and space categories, minus the invisible ones.
"""

from __future__ import annotations

import re
from dataclasses import fields, is_dataclass, replace
from enum import Enum
from operator import is_
from typing import Any

from doctor.lazyre import lazy

REPLACEMENT = "\ufffd"
#: ASCII text's only unsafe characters: C0 controls but TAB (and LF where lines are allowed) and DEL
_ASCII_MULTILINE = lazy("[\x00-\x08\x0b-\x1f\x7f]")
_ASCII_LINE = lazy("[\x00-\x08\x0a-\x1f\x7f]")
#: Unicode categories never shown: controls, format characters (bidi controls, zero-width, soft
#: hyphen, tags), surrogates, private use, unassigned, line and paragraph separators
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
#: Characters of visible categories that render as nothing (fillers, joiners, variation selectors)
_BLANK = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180f\u2800\u3164\uffa0"
                   + "".join(chr(c) for c in range(0xFE00, 0xFE10))
                   + "".join(chr(c) for c in range(0xE0100, 0xE01F0)))


def _unsafe(ch: str, multiline: bool) -> bool:
    import unicodedata

    if ch == "\t" or (multiline and ch == "\n"):
        return False
    return ch in _BLANK or unicodedata.category(ch) in _HIDDEN_CATEGORIES


def clean(value: object, multiline: bool = False) -> str:
    """``value`` as text with every control and invisible character replaced by U+FFFD.

    Single-line fields (the default) also lose LF and CR, so a name cannot start a forged line;
    TAB survives.
    """
    text = value if isinstance(value, str) else str(value)
    if text.isascii():
        return (_ASCII_MULTILINE if multiline else _ASCII_LINE).sub(REPLACEMENT, text)
    text = "".join(REPLACEMENT if _unsafe(ch, multiline) else ch for ch in text)
    return _STACKED.sub(_one_stack, text) if _STACKED.search(text) else text


#: More combining marks on one letter than any script writes (``Zalgo`` text towers over the lines
#: above and below it on a terminal, hiding them): the marks past the fourth become one U+FFFD
MAX_MARKS = 4
_STACKED = lazy(r"[\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u0610-\u061a\u064b-\u065f\u0e31-\u0e3a"
                r"\u0e47-\u0e4e\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]" + f"{{{MAX_MARKS + 1},}}")


def _one_stack(m: re.Match[str]) -> str:
    return m.group(0)[:MAX_MARKS] + REPLACEMENT


def is_clean(text: str, multiline: bool = True) -> bool:
    """Whether ``text`` holds no character :func:`clean` would replace."""
    if text.isascii():
        return not (_ASCII_MULTILINE if multiline else _ASCII_LINE).search(text)
    return not any(_unsafe(ch, multiline) for ch in text) and not _STACKED.search(text)


def ident(value: object) -> str:
    """An identifier (interface, device, host, unit name) shown for what it is: printable ASCII as
    it is, every other character as ``\\u{XXXX}``, so ``еth0`` with a Cyrillic ``е`` cannot pass for
    ``eth0``."""
    text = value if isinstance(value, str) else str(value)
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch if ch.isascii() and ch.isprintable() else f"\\u{{{ord(ch):04X}}}" for ch in text)


#: Fields that hold identifiers (check ids, PCI addresses, interface and RDMA names, UUIDs): shown by
#: :func:`ident`, so a look-alike letter reads as its code point
ID_FIELDS = frozenset({"check", "category", "subject_id", "related", "id", "address", "netdevs", "netdev", "rdma",
                       "uuid", "interface", "bus_id", "pci_address", "source_id"})
#: Fix fields a live result keeps byte for byte (they name the host's real objects; the fix script
#: quotes them): :func:`sanitised` with ``exact_fixes``
_EXACT = frozenset({"argv", "heredoc", "params"})


def sanitised(value: Any, exact_fixes: bool = False) -> Any:
    """``value`` (a result, diff, fleet report, finding, or any dict/list/str inside one) with every
    string through the one sanitiser: controls and invisible characters replaced (:func:`clean`,
    line breaks kept, each renderer keeps its own line rules), identifiers through :func:`ident`
    (a subject equal to its ``subject_id`` is one). The very object comes back when nothing
    changed, so a clean result costs no copy. ``exact_fixes``: fix steps' argv, files and
    parameters stay as they are (a live result's fix names the host's real interfaces)."""
    return _walk(value, "", exact_fixes)


def _walk(value: Any, name: str, exact: bool) -> Any:
    """One linear pass: each object is visited once and copied only when something below it changed."""
    cls = type(value)
    if cls is str or (isinstance(value, str) and not isinstance(value, Enum)):
        if name in ID_FIELDS:
            return ident(value)
        if value.isascii() and (value.isprintable() or not _ASCII_MULTILINE.search(value)):
            return value  # printable ASCII (the common case): nothing to look at per character
        cleaned = clean(value, multiline=True)
        # a clean value comes back as itself: a message (doctor.i18n.Msg, a str) keeps its translation
        return value if cleaned == value else cleaned
    if cls in _SCALARS or isinstance(value, Enum):
        return value
    if isinstance(value, (list, tuple)):
        items = [_walk(v, name, exact) for v in value]
        if all(map(is_, items, value)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return _walk_dict(value, exact)
    names = _FIELDS.get(cls)
    if names is None:
        if not is_dataclass(value) or isinstance(value, type):
            return value
        names = _FIELDS[cls] = tuple(f.name for f in fields(value) if f.init)
    changed = {}
    subject = getattr(value, "subject", None)
    as_id = subject is not None and subject == getattr(value, "subject_id", None)
    for field_name in names:
        if exact and field_name in _EXACT:
            continue
        old = getattr(value, field_name)
        new = _walk(old, "subject_id" if as_id and field_name == "subject" else field_name, exact)
        if new is not old:
            changed[field_name] = new
    return replace(value, **changed) if changed else value


def _walk_dict(value: dict[Any, Any], exact: bool) -> dict[Any, Any]:
    pairs = []
    changed = False
    for k, v in value.items():
        # what _walk gives a printable ASCII key or value and a scalar (the most of a result), without the call
        nk = k if type(k) is str and k.isascii() and k.isprintable() else _walk(k, "", exact) \
            if isinstance(k, str) else k
        t = type(v)
        if t in _SCALARS or (exact and k in _EXACT) \
                or (t is str and v.isascii() and v.isprintable() and k not in ID_FIELDS):
            nv = v
        else:
            nv = _walk(v, k, exact)
        pairs.append((nk, nv))
        changed = changed or nk is not k or nv is not v
    if not changed:
        return value
    out = dict(pairs)
    return value if len(out) == len(value) and all(out.get(k) is v for k, v in value.items()) else out


#: types whose values hold no text
_SCALARS = frozenset({int, float, bool, type(None), bytes})
#: a dataclass type -> the names of its ``__init__`` fields (what :func:`_walk` visits and ``replace`` takes)
_FIELDS: dict[type, tuple[str, ...]] = {}
