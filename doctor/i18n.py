"""Translations of the user-visible chrome (headings, labels, summaries, check titles).

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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

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


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it now."""
    return message


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


#: Severity names as shown (the JSON keeps the English keys)
SEVERITY_NAMES = {"critical": N_("critical"), "high": N_("high"), "medium": N_("medium"), "low": N_("low"),
                  "info": N_("info"), "unknown": N_("unknown"), "pass": N_("pass")}


def severity_name(severity: str) -> str:
    """A severity key (``high``) in the current language (``high`` / ``高``)."""
    return _(SEVERITY_NAMES[severity]) if severity in SEVERITY_NAMES else severity


def width(text: str) -> int:
    """Terminal columns ``text`` takes (CJK wide and full-width characters count two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def ljust(text: str, columns: int) -> str:
    """``text`` padded with spaces to ``columns`` terminal columns."""
    return text + " " * max(0, columns - width(text))
