"""Languages: the zh-CN catalog is complete, the language is chosen as documented, and only chrome changes."""

from __future__ import annotations

import gettext
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doctor import i18n
from doctor.cli import main
from doctor.registry import load_checks
from tests.helpers import SICK

PO = i18n.LOCALEDIR / "zh_CN" / "LC_MESSAGES" / "gnd.po"
MO = PO.with_suffix(".mo")


@pytest.fixture(autouse=True)
def _english_after() -> Any:
    yield
    i18n.set_language("en")


def test_catalog_covers_every_marked_string_and_is_compiled() -> None:
    """Every _()/ngettext()/N_() string in doctor/ and reports/, every template string and every
    built-in check title has a non-empty, non-fuzzy zh_CN translation, and gnd.mo is compiled from gnd.po."""
    pytest.importorskip("babel", reason="babel (test extra) extracts the messages")
    from fixtures.tools.i18n_catalog import problems

    found = problems()
    assert not found, ("catalog out of date; run `.venv/bin/python -m fixtures.tools.i18n_catalog`, "
                       "translate the new entries in doctor/locale/zh_CN/LC_MESSAGES/gnd.po, run it again:\n"
                       + "\n".join(found[:40]))


def _placeholders(text: str) -> list[str]:
    return sorted(re.findall(r"\{\w+\}|%\(\w+\)[sd]|%%", text))


def test_translations_keep_every_placeholder() -> None:
    """A msgstr that drops or renames {n} / %(host)s would raise or show the wrong value at run time."""
    with MO.open("rb") as fh:
        catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
    assert len(catalog) > 100
    for key, msgstr in catalog.items():
        msgid = key[0] if isinstance(key, tuple) else key
        if not msgid:
            continue  # the header
        assert msgstr, f"empty translation of {msgid!r}"
        assert _placeholders(msgstr) == _placeholders(msgid), msgid


def test_every_builtin_check_title_is_translated() -> None:
    checks, _errors = load_checks()
    with i18n.use("zh-CN"):
        for c in checks:
            if c.plugin == "builtin":
                assert i18n._(c.title) != c.title, c.id
                assert re.search(r"[\u4e00-\u9fff]", i18n._(c.title)), c.id


@pytest.mark.parametrize(("env", "expected"), [
    ({}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}, "en"),              # LC_ALL outranks LANG
    ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LANGUAGE": "fr:zh_CN:en", "LANG": "en_US.UTF-8"}, "zh-CN"),  # first supported entry of the list
    ({"LANGUAGE": "de", "LANG": "zh_CN.UTF-8"}, "zh-CN"),       # nothing supported in LANGUAGE: go on
    ({"LANG": "de_DE.UTF-8"}, "en"),                            # unsupported: English
    ({"LANG": "zh_TW.UTF-8"}, "en"),                            # traditional Chinese is not zh-CN
])
def test_language_from_environment(env: dict[str, str], expected: str) -> None:
    assert i18n.from_environment(env) == expected


def test_lang_option_overrides_environment(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    assert main(["checks"]) == 0
    assert "CPU 调频策略与能耗偏好" in capsys.readouterr().out
    assert main(["checks", "--lang", "en"]) == 0
    assert "CPU frequency governor and energy preference" in capsys.readouterr().out


def test_unsupported_lang_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", "--lang", "klingon"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unsupported language 'klingon'" in err and "zh-CN" in err


def _sick() -> str:
    if not SICK.exists():
        pytest.skip("sick fixture not generated yet")
    return str(SICK)


def test_check_text_in_chinese_keeps_ids_commands_and_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    src = _sick()
    main(["check", src, "--lang", "zh-CN", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    main(["check", src, "--lang", "zh-CN"])
    text = capsys.readouterr().out
    assert "摘要：" in text and "证据：" in text and "预期：" in text
    for english in ("Summary:", "evidence:", "expected:", "Checked, nothing found"):
        assert english not in text
    problems = [f for f in data["findings"] if f["severity"] in ("critical", "high", "medium", "low")]
    assert problems
    from doctor.findings import Finding

    with i18n.use("zh-CN"):
        for f in problems:  # ids as they are, finding titles in Chinese (the JSON keeps them in English)
            title = i18n.tr(Finding.from_dict(f).title)
            assert f["check"] in text and title in text and title != f["title"]
    first = problems[0]
    for step in first["fix"]["steps"]:
        if step.get("argv") and step["phase"] == "runtime":
            assert " ".join(step["argv"]) in text or step["argv"][0] in text


def test_json_is_the_same_in_every_language(capsys: pytest.CaptureFixture[str]) -> None:
    src = _sick()
    main(["check", src, "--format", "json", "--lang", "en"])
    en = json.loads(capsys.readouterr().out)
    main(["check", src, "--format", "json", "--lang", "zh-CN"])
    zh = json.loads(capsys.readouterr().out)
    for d in (en, zh):
        d.pop("duration_s", None)
        d.pop("generated_at", None)
        for c in d.get("checks", []):
            c.pop("duration_ms", None)
    assert en == zh


def test_chinese_check_path_imports_neither_babel_nor_jinja2(tmp_path: Path) -> None:
    """Runtime translation is the standard library's gettext over the shipped .mo file."""
    out = tmp_path / "out.txt"
    code = ("import sys; from doctor.cli import main; main(['check', '--lang', 'zh-CN', '-o', sys.argv[1]]);"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('babel', 'jinja2', 'textual', 'weasyprint', 'rich')];"
            "print(','.join(bad))")
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.strip() == ""
    assert "摘要：" in out.read_text(encoding="utf-8")


def test_missing_catalog_falls_back_to_english(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(i18n, "LOCALEDIR", tmp_path)
    with i18n.use("zh-CN"):
        assert i18n._("Summary") == "Summary"


def test_wide_characters_are_padded_by_columns() -> None:
    assert i18n.width("严重") == 4 and i18n.ljust("严重", 8) == "严重    "
    assert i18n.ljust("HIGH", 8) == "HIGH    "


def test_tui_keys_help_and_detail_pane_in_chinese() -> None:
    """``gnd tui --lang zh-CN`` sets the language before the app module (and its key bindings) is imported."""
    pytest.importorskip("textual")
    code = ("from doctor.i18n import set_language; set_language('zh-CN');"
            "from doctor.tui.app import DoctorApp; from doctor.tui.screens import HELP, HelpScreen;"
            "from doctor.i18n import _;"
            "print('|'.join(str(b.description) for b in DoctorApp.BINDINGS)); print(_(HELP).splitlines()[0])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    keys, help_first = done.stdout.splitlines()[:2]
    assert keys.split("|")[:2] == ["详情", "复制修复命令"] and "退出" in keys
    assert help_first == "快速上手"


def test_tui_detail_pane_labels_in_chinese() -> None:
    pytest.importorskip("textual")
    from doctor.findings import Evidence, Finding, Fix, FixStep
    from doctor.tui.render import Palette, finding_text

    f = Finding(severity="high", subject="0000:18:00.0", title="link at Gen4 x8", check="pcie.link_downgrade",
                category="pcie", expected="Gen5 x16", observed="Gen4 x8",
                evidence=(Evidence("sys/bus/pci/devices/0000:18:00.0/current_link_speed", "16.0 GT/s PCIe"),),
                fix=Fix(steps=(FixStep("runtime", argv=("setpci", "-s", "0000:18:00.0", "CAP_EXP+10.w")),)))
    with i18n.use("zh-CN"):
        text = finding_text(f, Palette({})).plain
    assert "预期" in text and "证据" in text and "立即修复" in text and " 高 " in text
    assert "pcie.link_downgrade" in text and "setpci -s 0000:18:00.0" in text and "Gen4 x8" in text
