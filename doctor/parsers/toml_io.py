"""Just enough TOML: quoting for the baseline writer, reading through tomllib/tomli, and line lookup.

Python 3.11+ has ``tomllib``; 3.10 needs the ``tomli`` backport (a dependency there).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from doctor.errors import DoctorError
from doctor.lazyre import lazy
from doctor.textsafe import clean

_BARE = lazy(r"^[A-Za-z0-9_-]+$")
#: Characters JSON leaves raw but a terminal or TOML must not see (DEL, C1 controls, bidi and separators)
_RAW_UNSAFE = lazy("[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def key(name: str) -> str:
    """A TOML key: bare when it can be, else a basic string."""
    return name if _BARE.match(name) else json.dumps(name)


def value(v: object) -> str:
    """A TOML value for str, bool, int, float and lists of those (JSON strings are valid TOML strings)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    return _RAW_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json.dumps(str(v), ensure_ascii=False))


def comment(text: object) -> str:
    """Text for a ``#`` comment: one line, control characters neutralised (a name cannot forge a key)."""
    return clean(text)


def loads(text: str, where: str) -> dict[str, Any]:
    """Parse TOML; a syntax error becomes one DoctorError line naming the file and position."""
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ModuleNotFoundError:
            raise DoctorError("reading a baseline on Python 3.10 needs the 'tomli' package "
                              "(pip install tomli)") from None
    try:
        return dict(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise DoctorError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise DoctorError(f"{where}: invalid TOML: nested too deeply") from None


def _split_dotted(text: str) -> list[str]:
    """``pci."0000:18:00.0"`` -> ``["pci", "0000:18:00.0"]`` (quotes respected, spaces dropped)."""
    parts: list[str] = []
    cur, quote = "", ""
    for ch in text.strip():
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur += ch
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    parts.append(cur.strip())
    return parts


def line_of(text: str, table: tuple[str, ...], name: str | None = None) -> int | None:
    """The 1-based line of table header ``table`` (``name`` None) or of key ``name`` inside it."""
    return _line_index(text).get((table, name))


@functools.lru_cache(maxsize=4)
def _line_index(text: str) -> dict[tuple[tuple[str, ...], str | None], int]:
    """The first line of each table header and of each plain key in each table, read once per text:
    a baseline with many entries asks for each one's line (a lookup each, not a scan of the file)."""
    index: dict[tuple[tuple[str, ...], str | None], int] = {}
    current: tuple[str, ...] = ()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            inner = line.lstrip("[").split("]", 1)[0]
            current = tuple(_split_dotted(inner))
            index.setdefault((current, None), n)
            continue
        if "=" not in line or line.startswith("#"):
            continue
        parts = _split_dotted(line.split("=", 1)[0])
        if len(parts) == 1:
            index.setdefault((current, parts[0]), n)
    return index
