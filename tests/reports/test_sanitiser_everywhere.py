"""Every field of a saved result reaches every output through the one sanitiser (issue 23, class 7).

A generated corpus of characters that render as nothing or change what is shown (every format
character, C0 and C1 controls, bidi controls, fillers, variation selectors, tag characters, line
separators) is planted in every string of a saved result, keys included; every command and every
renderer then writes text in which none of them is left, and a check id spelt with a Cyrillic
letter reads as its code point.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from doctor import cli
from doctor.runner import Result
from doctor.textsafe import is_clean

#: the corpus: the class (every Cf character and every control), not a list of examples
CORPUS = "".join(
    [chr(c) for c in range(0x20) if chr(c) not in "\t\n"] + [chr(c) for c in range(0x7F, 0xA0)]
    + [chr(c) for c in range(0x30000) if unicodedata.category(chr(c)) == "Cf"]
    + ["\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f", "\u17b4", "\u180b", "\u2028", "\u2029"]
    + [chr(c) for c in range(0xFE00, 0xFE10)] + ["\U000e0100", "\U000e01ef", "\ue000", "\U000f0000"])
LOOKALIKE = "pcie.link_downgr\u0430de"  # a Cyrillic а


def _planted(value: Any, key: str = "") -> Any:
    if isinstance(value, str):
        return LOOKALIKE if key == "check" else f"{value}{CORPUS}x"
    if isinstance(value, list):
        return [_planted(v, key) for v in value]
    if isinstance(value, dict):
        return {(_planted(k) if key == "digest" else k): _planted(v, k) for k, v in value.items()}
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [*_strings(k), *_strings(v)]]
    return []


def _assert_clean(name: str, text: str) -> None:
    if name.endswith("json"):
        bad = [s for s in _strings(json.loads(text)) if not is_clean(s, multiline=True)]
        assert not bad, f"{name}: {bad[0]!r}"
        return
    bad = sorted({f"U+{ord(ch):04X}" for ch in text if not is_clean(ch, multiline=True)})
    assert not bad, f"{name} shows {bad[:10]}"


@pytest.fixture(scope="module")
def saved(sick_data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = _planted(sick_data)
    data["schema_version"], data["tool"] = sick_data["schema_version"], sick_data["tool"]
    path = tmp_path_factory.mktemp("corpus") / "planted.json"
    path.write_text(json.dumps(data))
    return path


def test_every_command_writes_the_planted_result_clean(saved: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    s = str(saved)
    for fmt in ("md", "html", "json"):
        out = tmp_path / f"r.{fmt}"
        assert cli.main(["report", "--from-json", s, "--format", fmt, "-o", str(out)]) in (0, 1)
        _assert_clean(f"report {fmt}", out.read_text(encoding="utf-8"))
        if fmt != "json":
            assert "\\u{0430}" in out.read_text(encoding="utf-8"), f"report {fmt}: the look-alike is not shown"
    script = tmp_path / "fix.sh"
    assert cli.main(["fix-script", "--from-json", s, "-o", str(script)]) in (0, 1, 2)
    if script.exists():
        _assert_clean("fix-script", script.read_text(encoding="utf-8"))
        _assert_clean("rollback", Path(str(script)[:-3] + ".rollback.sh").read_text(encoding="utf-8"))
    for command in ("diff", "fleet"):
        for fmt in ("text", "json", "html"):
            extra = ["--cross-host"] if command == "diff" else []
            assert cli.main([command, s, s, "--format", fmt, *extra]) in (0, 1)
            _assert_clean(f"{command} {fmt}", capsys.readouterr().out)
    capsys.readouterr()


def test_every_renderer_sanitises_a_result_it_is_given_raw(saved: Path) -> None:
    """The boundary is the renderer interface itself: a Result built without the loader's sanitising
    (``Result.from_dict`` of the planted data) still renders clean in every format."""
    from reports.formats import FORMATS

    raw = Result.from_dict(json.loads(saved.read_text()))
    assert not is_clean(raw.findings[0].title)  # the planted characters are really there
    for name, fmt in FORMATS.items():
        if name == "pdf":
            continue  # binary; it renders the sanitised view through the same HTML (test below)
        _assert_clean(name, str(fmt.render(raw)))


def test_pdf_text_of_the_planted_result_is_clean(saved: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    pytest.importorskip("weasyprint")
    import io

    from reports.formats import FORMATS

    raw = Result.from_dict(json.loads(saved.read_text()))
    raw.findings = raw.findings[:3]
    pdf = FORMATS["pdf"].render(raw)
    assert isinstance(pdf, bytes)
    text = "".join(p.extract_text() or "" for p in pypdf.PdfReader(io.BytesIO(pdf)).pages)
    _assert_clean("pdf", text)


def test_the_tui_draws_the_planted_result_clean(saved: Path) -> None:
    pytest.importorskip("rich")
    from doctor.result_io import load_result
    from doctor.tui.render import Palette, finding_text, header_text

    result = load_result(str(saved))
    raw = Result.from_dict(json.loads(saved.read_text()))  # the TUI's own drawing sanitises too
    pal = Palette({})
    for r in (result, raw):
        texts = [header_text(r.source, r.inventory, r.findings, pal).plain]
        texts += [finding_text(f, pal, full=True).plain for f in r.findings[:20]]
        for text in texts:
            _assert_clean("tui", text)


def test_prometheus_label_values_and_text_report_show_the_lookalike_escaped(saved: Path) -> None:
    from doctor.result_io import load_result
    from reports.formats import FORMATS

    result = load_result(str(saved))
    assert all(f.check == "pcie.link_downgr\\u{0430}de" for f in result.findings)
    for name in ("text", "prometheus"):
        out = str(FORMATS[name].render(result))
        assert "\u0430" not in out and "\\u{0430}" in out.replace("\\\\", "\\"), name


