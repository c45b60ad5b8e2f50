"""Translations: the chrome (headings, labels, summaries, check titles) and the prose checks write.

Checks write prose as :class:`Msg` (``N_("link runs at {what}", what=...)``): a ``str`` that reads as
the English text (what the JSON result, ids and tests see) and remembers its catalog msgid and named
parameters, so that a renderer translates it at render time (:func:`tr`, :func:`localise`) in the
language asked for. Commands, evidence values and file contents are plain strings and never translated.

Standard library only: :mod:`gettext` reads the compiled catalogs shipped in ``doctor/locale``
(``<lang>/LC_MESSAGES/gnd.mo``); Babel is a development tool and Jinja2 is loaded only by the
HTML/PDF renderers, which install these same translations into Jinja2's i18n extension.

The language is ``--lang`` when given, else the first supported entry of ``LANGUAGE``, ``LC_ALL``,
``LC_MESSAGES`` and ``LANG`` (in that order, as GNU gettext reads them), else English. Check ids,
commands, evidence and the JSON result are never translated.
"""

from __future__ import annotations

import gettext
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from doctor.lazyre import lazy

_T = TypeVar("_T")

DOMAIN = "gnd"
LOCALEDIR = Path(__file__).resolve().parent / "locale"
#: Languages ``--lang`` accepts (BCP 47 tags), English first
LANGUAGES = ("en", "zh-CN")
#: Environment variables read for the language, in order
ENV_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_GETTEXT_NAMES = {"zh-CN": "zh_CN"}

_state: dict[str, gettext.NullTranslations | str] = {"lang": "en", "tr": gettext.NullTranslations()}


def normalise(tag: str | None) -> str | None:
    """``zh_CN.UTF-8``, ``zh-cn``, ``zh`` -> ``zh-CN``; ``en_US``, ``C``, ``POSIX`` -> ``en``; else None."""
    if not tag:
        return None
    base = tag.split(".", 1)[0].split("@", 1)[0].replace("_", "-").strip().lower()
    if base in ("c", "posix") or base == "en" or base.startswith("en-"):
        return "en"
    if base in ("zh", "zh-cn", "zh-sg", "zh-hans") or base.startswith("zh-hans-"):
        return "zh-CN"
    return None


def from_environment(env: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for (``LANGUAGE`` may list several, colon-separated)."""
    env = os.environ if env is None else env
    for var in ENV_VARS:
        value = env.get(var, "")
        if not value:
            continue
        for entry in value.split(":") if var == "LANGUAGE" else (value,):
            lang = normalise(entry)
            if lang:
                return lang
        if var != "LANGUAGE":
            return "en"  # the first set locale variable decides, as in setlocale(3)
    return "en"


def load(lang: str) -> gettext.NullTranslations:
    """The translations for ``lang`` (English: the identity)."""
    if lang == "en":
        return gettext.NullTranslations()
    try:
        return gettext.translation(DOMAIN, str(LOCALEDIR), languages=[_GETTEXT_NAMES.get(lang, lang)])
    except OSError:  # catalog missing from a broken install: English rather than a traceback
        return gettext.NullTranslations()


def set_language(lang: str | None = None) -> str:
    """Use ``lang`` (or the environment's choice when None) from now on; returns the tag used."""
    chosen = normalise(lang) if lang else from_environment()
    chosen = chosen or "en"
    _state["lang"], _state["tr"] = chosen, load(chosen)
    return chosen


def language() -> str:
    """The current language tag (``en`` or ``zh-CN``)."""
    return str(_state["lang"])


def translations() -> gettext.NullTranslations:
    """The current translations object (for Jinja2's ``install_gettext_translations``)."""
    tr = _state["tr"]
    assert isinstance(tr, gettext.NullTranslations)
    return tr


def _(message: str) -> str:
    """``message`` in the current language."""
    return translations().gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n``, in the current language."""
    return translations().ngettext(singular, plural, n)


#: Parameter values kept as they are; any other (an exception, a path) is kept as its text, so a finding's
#: ``i18n`` parameters always serialise
_PLAIN_PARAM = (str, int, float, bool, type(None), list, tuple, dict)


class Msg(str):
    """English text built from a catalog ``msgid`` and named ``params`` (or the concatenation of ``parts``).

    Its value is the English text, so it compares, hashes, serialises and prints as that text; ``+`` with
    another string keeps the parts (``detail += N_(...)`` stays translatable). A method that makes a new
    string (``.strip()``, an f-string) gives a plain ``str``: English, and :func:`tr` leaves it as it is.
    """

    msgid: str
    params: dict[str, object]
    parts: tuple[str, ...] | None
    plural: tuple[str, int] | None

    cap: bool

    def __new__(cls, msgid: str, params: Mapping[str, object] | None = None,
                parts: tuple[str, ...] | None = None, plural: tuple[str, int] | None = None,
                cap: bool = False) -> Msg:
        if parts is not None:
            text = "".join(parts)
        else:
            source = msgid if plural is None or plural[1] == 1 else plural[0]
            text = source.format(**params) if params else source
        if cap:
            text = text[:1].upper() + text[1:]
        obj = super().__new__(cls, text)
        kept: dict[str, object] = {k: v if isinstance(v, _PLAIN_PARAM) else str(v) for k, v in (params or {}).items()}
        obj.msgid, obj.params, obj.parts, obj.plural, obj.cap = msgid, kept, parts, plural, cap
        return obj

    def __add__(self, other: str) -> str:  # type: ignore[override]
        if not isinstance(other, str):
            return NotImplemented
        return Msg("", parts=(*_parts(self), *_parts(other))) if other else self

    def __radd__(self, other: str) -> str:
        if not isinstance(other, str):
            return NotImplemented
        return Msg("", parts=(*_parts(other), *_parts(self))) if other else self

    def __reduce__(self) -> tuple[object, ...]:
        return (Msg, (self.msgid, self.params, self.parts, self.plural, self.cap))


def capitalised(text: str) -> str:
    """``text`` with its first letter upper-case (in English; a translation keeps its own form)."""
    return Msg("{text}", {"text": text}, cap=True)


def _parts(text: str) -> tuple[str, ...]:
    if isinstance(text, Msg) and text.parts is not None:
        return text.parts
    return (text,)


def N_(message: str, **params: object) -> str:
    """Mark ``message`` for extraction: a :class:`Msg` formatting ``params`` into its ``{name}``
    placeholders, translated when rendered (:func:`tr`); it reads as the English text until then."""
    return Msg(message, params)


def Nn_(singular: str, plural: str, n: int, **params: object) -> str:
    """A :class:`Msg` with a singular and a plural form chosen by ``n`` (``{n}`` is available too)."""
    return Msg(singular, {"n": n, **params}, plural=(plural, n))


def join(sep: str, items: Iterable[str]) -> str:
    """``sep.join(items)`` that keeps translatable parts (a :class:`Msg` when any item is one)."""
    items = list(items)
    if not any(isinstance(i, Msg) or isinstance(sep, Msg) for i in items):
        return sep.join(items)
    if sep in _PROSE_SEPARATORS:  # between translated clauses: the language's own punctuation (zh-CN "；")
        sep = Msg(sep)
    parts: list[str] = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.extend(_parts(item))
    return Msg("", parts=tuple(parts)) if parts else ""


#: Spaces between two Chinese characters, and next to full-width punctuation, left where English parts were
#: joined with a space ("。 启动参数", "网卡 下", "距离 PIX。 GPU 1"): Chinese sets no space there
_CJK_GAP = lazy(r"(?<=[\u3000-\u303f\uff01-\uff60]) +| +(?=[\u3000-\u303f\uff01-\uff60])"
                      r"|(?<=[\u4e00-\u9fff]) +(?=[\u4e00-\u9fff])")

#: Separators :func:`join` translates when it joins translated prose (a list of ids or values keeps ASCII)
_PROSE_SEPARATORS = frozenset({"; ", ", "})
N_("; ")
N_(", ")


def tr(text: str) -> str:
    """``text`` in the current language: a :class:`Msg` translated (its parameters too), a plain ``str``
    as it is (commands, evidence, values)."""
    if not isinstance(text, Msg):
        return text
    if text.parts is not None:
        joined = "".join(tr(p) for p in text.parts)
        return _CJK_GAP.sub("", joined) if language() == "zh-CN" else joined
    if not text.msgid:
        return str.__str__(text)
    if text.plural is not None:
        pattern = ngettext(text.msgid, text.plural[0], text.plural[1])
    else:
        pattern = _(text.msgid)
    if not text.params:
        return pattern
    params = {k: tr(v) if isinstance(v, str) else v for k, v in text.params.items()}
    try:
        done = pattern.format(**params)
        return _CJK_GAP.sub("", done) if language() == "zh-CN" else done
    except (KeyError, IndexError, ValueError):  # a broken translation: the English text rather than a traceback
        return str.__str__(text)


def localise(obj: _T) -> _T:
    """``obj`` (a dataclass, list, tuple or dict, nested) with every :class:`Msg` in it translated into
    the current language; the same object in English. Plain strings (commands, evidence) stay as they are."""
    if language() == "en":
        return obj
    return _localise(obj, 0)  # type: ignore[return-value]


#: fields never translated: commands, file contents, evidence, ids and fix parameters
_VERBATIM = frozenset({"argv", "heredoc", "evidence", "params", "references", "related", "subject_id", "check",
                       "category", "builder", "key", "phase", "id", "source"})


def _localise(obj: object, depth: int) -> object:
    import dataclasses

    if isinstance(obj, Msg):
        return tr(obj)
    if isinstance(obj, str) or depth > 40:
        return obj
    if isinstance(obj, (list, tuple)):
        items = [_localise(v, depth + 1) for v in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)  # type: ignore[arg-type]
    if isinstance(obj, dict):
        new = {k: v if k in _VERBATIM else _localise(v, depth + 1) for k, v in obj.items()}
        return obj if all(new[k] is v for k, v in obj.items()) else type(obj)(new) if type(obj) is dict else new
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {}
        for f in dataclasses.fields(obj):
            if not f.init or f.name in _VERBATIM:
                continue
            value = getattr(obj, f.name)
            if f.name == "subject" and value == WHOLE_HOST and not isinstance(value, Msg):
                value = Msg(WHOLE_HOST)  # the subject of host-wide findings, a plain "node" in the checks
            new_value = _localise(value, depth + 1)
            if new_value is not value:
                changes[f.name] = new_value
        return dataclasses.replace(obj, **changes) if changes else obj
    return obj


def encode(text: str) -> object:
    """A :class:`Msg` as JSON (``{"id": msgid, "args": {...}}`` or ``{"cat": [...]}``); a plain string as it is."""
    if not isinstance(text, Msg):
        return str.__str__(text) if isinstance(text, str) else text
    if text.parts is not None:
        return {"cat": [encode(p) for p in text.parts]}
    out: dict[str, object] = {"id": text.msgid}
    if text.params:
        out["args"] = {k: encode(v) if isinstance(v, str) else v for k, v in text.params.items()}
    if text.plural is not None:
        out["plural"] = [text.plural[0], text.plural[1]]
    if text.cap:
        out["cap"] = True
    return out


def decode(data: object, depth: int = 0) -> str | None:
    """The :class:`Msg` :func:`encode` wrote (None when ``data`` is not one: a hand-edited result)."""
    if isinstance(data, str):
        return data
    if not isinstance(data, dict) or depth > 20:
        return None
    if isinstance(data.get("cat"), list):
        parts = [decode(p, depth + 1) for p in data["cat"]]
        return None if any(p is None for p in parts) else Msg("", parts=tuple(p for p in parts if p is not None))
    msgid = data.get("id")
    if not isinstance(msgid, str):
        return None
    args = data.get("args") or {}
    if not isinstance(args, dict):
        return None
    params: dict[str, object] = {}
    for k, v in args.items():
        if isinstance(v, (dict, str)):
            value = decode(v, depth + 1)
            if value is None:
                return None
            params[str(k)] = value
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            params[str(k)] = v
        else:
            return None
    plural = data.get("plural")
    pl = None
    if plural is not None:
        if not (isinstance(plural, list) and len(plural) == 2 and isinstance(plural[0], str)
                and isinstance(plural[1], int)):
            return None
        pl = (plural[0], plural[1])
    try:
        return Msg(msgid, params, plural=pl, cap=data.get("cap") is True)
    except (KeyError, IndexError, ValueError, AttributeError):
        return None


def restore(value: str, data: object) -> str:
    """``value`` as the :class:`Msg` ``data`` encodes when that reads exactly as ``value`` (a result
    edited or redacted since keeps its own text, English)."""
    msg = decode(data)
    return msg if isinstance(msg, Msg) and str.__str__(msg) == value else value


@contextmanager
def use(lang: str | None) -> Iterator[str]:
    """Render in ``lang`` inside the block, then restore the previous language."""
    saved = (_state["lang"], _state["tr"])
    try:
        yield set_language(lang)
    finally:
        _state["lang"], _state["tr"] = saved


def lang_argument(text: str) -> str:
    """argparse ``type=`` for ``--lang``: a supported tag, else a usage error."""
    import argparse

    lang = normalise(text)
    if lang is None:
        raise argparse.ArgumentTypeError(f"unsupported language {text!r}; choose from {', '.join(LANGUAGES)}")
    return lang


#: The subject of a finding about the whole host (the checks write it as a plain string)
WHOLE_HOST = "node"
N_("node")

#: Severity names as shown (the JSON keeps the English keys)
SEVERITY_NAMES = {"critical": N_("critical"), "high": N_("high"), "medium": N_("medium"), "low": N_("low"),
                  "info": N_("info"), "unknown": N_("unknown"), "pass": N_("pass")}


def severity_name(severity: str) -> str:
    """A severity key (``high``) in the current language (``high`` / ``高``)."""
    return _(SEVERITY_NAMES[severity]) if severity in SEVERITY_NAMES else severity


#: A GPU's activity as a word in prose (``busy`` / ``处于负载中``); ``derived.relations.gpu_activity`` gives the key
ACTIVITY_NAMES = {"busy": N_("busy"), "idle": N_("idle"), "unknown": N_("in an unknown state")}


def activity_name(activity: str) -> str:
    """A GPU activity key as translatable prose (``busy``, ``idle``, ``in an unknown state``)."""
    return ACTIVITY_NAMES.get(activity, activity)


def severity_counts(counts: Iterable[tuple[str, int]]) -> str:
    """``1 critical, 10 high`` / ``严重 1，高 10``: each non-zero count with its severity name."""
    return _(", ").join(_("{n} {severity}").format(n=n, severity=severity_name(s)) for s, n in counts if n)


#: Who acts on a finding, as shown (the JSON keeps the keys of :class:`doctor.findings.Actor`)
ACTOR_NAMES = {"hardware": N_("hardware/firmware"), "os": N_("operating system"), "application": N_("application")}


def actor_name(acts: object) -> str:
    """Who acts (``hardware``) in the current language (``hardware/firmware`` / ``硬件/固件``); ``?`` when
    the finding does not say (a result older than the field)."""
    key = getattr(acts, "value", acts)
    return _(ACTOR_NAMES[key]) if isinstance(key, str) and key in ACTOR_NAMES else "?"


def width(text: str) -> int:
    """Terminal columns ``text`` takes (CJK wide and full-width characters count two)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded with spaces to ``columns`` terminal columns."""
    return text + " " * max(0, columns - width(text))
