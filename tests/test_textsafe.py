"""The one sanitiser: nothing invisible or controlling reaches a reader; visible text is kept."""

from __future__ import annotations

import random
import sys
import unicodedata
from dataclasses import fields, is_dataclass, replace
from typing import Any

import pytest

from doctor.findings import Evidence, Finding, Fix, FixStep, Impact
from doctor.i18n import N_
from doctor.textsafe import ID_FIELDS, REPLACEMENT, clean, ident, is_clean, sanitised

#: one of each kind that renders as nothing or changes what is shown
INVISIBLE = ["\x1b", "\x07", "\x85", "\u00ad", "\u061c", "\u200b", "\u200d", "\u200e", "\u202e", "\u2066",
             "\u2061", "\u2064", "\ufeff", "\ufff9", "\U000e0041", "\U000e007f", "\u115f", "\u1160", "\u3164",
             "\uffa0", "\u2800", "\ufe0f", "\U000e0100", "\u180e", "\u034f", "\u2028", "\u2029", "\ue000", "\U000f0000"]


@pytest.mark.parametrize("ch", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_invisible_and_control_characters_are_made_visible(ch: str) -> None:
    text = f"gpu{ch}0"
    assert clean(text) == f"gpu{REPLACEMENT}0"
    assert clean(text, multiline=True) == f"gpu{REPLACEMENT}0"
    assert not is_clean(text)


def test_every_format_character_is_replaced() -> None:
    """The class, not a list: every Unicode format (Cf) character this Python knows."""
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        if unicodedata.category(ch) == "Cf":
            assert clean(f"a{ch}b") == f"a{REPLACEMENT}b", f"U+{code:04X}"


def test_visible_text_in_any_script_is_kept() -> None:
    for text in ("GPU 0 链路降级 (x8)", "Ошибка PCIe", "café — naïve", "NVIDIA H100 80GB HBM3", "tab\tok", "😀 ok"):
        assert clean(text) == text
    assert clean("line\nbreak") == f"line{REPLACEMENT}break"
    assert clean("line\nbreak", multiline=True) == "line\nbreak"


def test_identifiers_show_look_alike_letters_for_what_they_are() -> None:
    assert ident("eth0") == "eth0"
    assert ident("\u0435th0") == "\\u{0435}th0"  # Cyrillic e
    assert ident("0000:17:00.0") == "0000:17:00.0"
    assert ident("mlx5\u200b_0") == "mlx5\\u{200B}_0"


def _every_string(value: Any, name: str = "") -> Any:
    """The sanitiser's rule written out plainly: every string rebuilt, identifiers through ident()."""
    if isinstance(value, str) and not hasattr(value, "value"):  # not an Enum (a Severity)
        return ident(value) if name in ID_FIELDS else clean(value, multiline=True)
    if isinstance(value, (list, tuple)):
        return type(value)(_every_string(v, name) for v in value)
    if isinstance(value, dict):
        return {_every_string(k) if isinstance(k, str) else k: _every_string(v, k) for k, v in value.items()}
    if is_dataclass(value) and not isinstance(value, type):
        as_id = value.subject == value.subject_id if isinstance(value, Finding) else False
        return replace(value, **{f.name: _every_string(getattr(value, f.name), "subject_id" if as_id and
                                                       f.name == "subject" else f.name)
                                 for f in fields(value) if f.init})
    return value


#: clean ASCII, text in other scripts, and each kind of character the sanitiser replaces
TEXTS = ["GPU 3", "0000:17:00.0", "mlx5_0", "tab\tok", "two\nlines", "链路降级", "\u0435th0", "a\x1b]52;c;x\x07",
         "bidi\u202e", "zero\u200bwidth", "nul\x00", "\x7fdel", "", "x" * 300]


def _finding(rng: random.Random) -> Finding:
    def text() -> str:
        return rng.choice(TEXTS)

    subject = text()
    return Finding(severity=rng.choice(["high", "pass", "info"]), subject=subject,
                   subject_id=subject if rng.random() < 0.5 else text(), title=N_("GPU {n}", n=text()),
                   detail=text(), evidence=tuple(Evidence(text(), text()) for _ in range(rng.randrange(3))),
                   impact=Impact(1.0, text(), text()), related=(text(), text()), check=text(),
                   fix=Fix(steps=(FixStep("runtime", argv=("ip", text()), description=text()),), notes=text()))


def test_the_walk_equals_rebuilding_every_string_and_copies_only_what_changed() -> None:
    rng = random.Random(20261202)
    for _ in range(300):
        value: Any = {"findings": [_finding(rng) for _ in range(rng.randrange(4))],
                      rng.choice(TEXTS): {"netdevs": [rng.choice(TEXTS)], "n": 3, "t": (rng.choice(TEXTS), 1.5)}}
        out = sanitised(value)
        assert out == _every_string(value)
        for before, after in zip(value["findings"], out["findings"]):  # printable ASCII costs no copy
            if all(e.source.isprintable() and e.source.isascii() and e.value.isprintable() and e.value.isascii()
                   for e in before.evidence):
                assert after.evidence is before.evidence
    clean_value = {"findings": [Finding("high", "GPU 3", "x", evidence=(Evidence("a", "b"),))], "k": ["v", 1]}
    assert sanitised(clean_value) is clean_value


def test_a_clean_message_that_is_not_ascii_keeps_its_translation() -> None:
    """The sanitising walk gives a clean value back as itself: a message with a non-ASCII character
    (" … +{n} more") stays a message, so ``--lang`` still translates it."""
    from doctor import i18n
    from doctor.findings import Finding
    from doctor.textsafe import sanitised

    title = i18n.N_("{n} more", n=3) + " …"
    finding = Finding("low", "node", title, detail=i18n.N_("{n} more", n=2) + " … \u202e")
    out = sanitised(finding)
    assert isinstance(out.title, i18n.Msg) and out.title is finding.title
    assert "\u202e" not in out.detail  # a changed value is the cleaned text
