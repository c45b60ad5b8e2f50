"""Neutralise control characters in host data before it reaches a terminal, Markdown, TOML or text file.

A hostname, NIC, process or GPU name may hold ``ESC ] 52 ; c ; ... BEL`` (sets the clipboard),
other escape sequences, C1 controls, bidi overrides (reorder what the reader sees) or newlines
(forge output lines). :func:`clean` replaces each with U+FFFD so the value stays visible but inert.
"""

from __future__ import annotations

from doctor.lazyre import lazy

REPLACEMENT = "\ufffd"
#: C0 controls except TAB/LF, DEL, C1 controls, bidi embeddings/overrides/isolates and marks,
#: line/paragraph separators, zero-width and BOM characters
_UNSAFE_MULTILINE = lazy("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_UNSAFE_LINE = lazy("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def clean(value: object, multiline: bool = False) -> str:
    """``value`` as text with every control character replaced by U+FFFD.

    Single-line fields (the default) also lose LF and CR, so a name cannot start a forged line;
    TAB survives.
    """
    text = value if isinstance(value, str) else str(value)
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE_LINE
    return pattern.sub(REPLACEMENT, text)


def is_clean(text: str, multiline: bool = True) -> bool:
    """Whether ``text`` holds no character :func:`clean` would replace."""
    return not (_UNSAFE_MULTILINE if multiline else _UNSAFE_LINE).search(text)
