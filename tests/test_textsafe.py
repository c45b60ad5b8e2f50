"""The one sanitiser: nothing invisible or controlling reaches a reader; visible text is kept."""

from __future__ import annotations

import sys
import unicodedata

import pytest

from doctor.textsafe import REPLACEMENT, clean, ident, is_clean

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


def test_a_tower_of_combining_marks_is_cut_to_what_a_script_writes() -> None:
    """Issue 23 class 7: a host or process name of one letter under dozens of combining marks draws
    over the report lines around it on a terminal; marks past the fourth on one letter become one
    U+FFFD, while the two or three marks real scripts stack (Vietnamese) stay."""
    from doctor.textsafe import MAX_MARKS, REPLACEMENT, clean, is_clean

    tower = "gpu" + "\u0301\u0316" * 20 + "-node"
    out = clean(tower)
    assert out == "gpu" + ("\u0301\u0316" * 2)[:MAX_MARKS] + REPLACEMENT + "-node" and not is_clean(tower)
    assert clean("Vi\u1ec7\u0301t") == "Vi\u1ec7\u0301t" and is_clean("ti\u1ebfng")
