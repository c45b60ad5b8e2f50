"""The PDF carries the fix script, its rollback and the JSON result as embedded files, each exactly what
`gnd fix-script` and `gnd check --format json` write for the same result; the same result gives the same PDF."""

from __future__ import annotations

import io
import json
import time
import types
from pathlib import Path
from typing import Any

import pytest

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from doctor import i18n  # noqa: E402
from doctor.cli import main  # noqa: E402
from tests.helpers import SICK  # noqa: E402


def _attachments(pdf: Path) -> dict[str, bytes]:
    reader = pypdf.PdfReader(io.BytesIO(pdf.read_bytes()))
    files = reader.attachments
    assert all(len(v) == 1 for v in files.values()), files.keys()  # one file per name
    return {name: data[0] for name, data in files.items()}


@pytest.fixture()
def still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's clock stopped, so that three runs of the checks write the same times and durations."""
    import doctor.runner

    moment = time.gmtime(1_800_000_000)
    monkeypatch.setattr(doctor.runner, "time", types.SimpleNamespace(monotonic=lambda: 0.0, strftime=time.strftime,
                                                                     gmtime=lambda *_: moment))


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_pdf_of_a_source_carries_what_fix_script_and_check_write(lang: str, still_clock: None, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if not SICK.exists():
        pytest.skip("sick fixture not generated yet")
    monkeypatch.chdir(tmp_path)
    main(["check", str(SICK), "--format", "json", "-o", "check.json", "--lang", lang])
    main(["fix-script", str(SICK), "-o", "fix.sh", "--lang", lang])
    assert main(["report", str(SICK), "-o", "report.pdf", "--lang", lang]) == 0
    files = _attachments(tmp_path / "report.pdf")
    assert sorted(files) == ["gnd-fix.rollback.sh", "gnd-fix.sh", "result.json"]
    assert files["gnd-fix.sh"] == (tmp_path / "fix.sh").read_bytes()
    assert files["gnd-fix.rollback.sh"] == (tmp_path / "fix.rollback.sh").read_bytes()
    assert files["result.json"] == (tmp_path / "check.json").read_bytes()
    assert b"REVIEW_ONLY=0" in files["gnd-fix.sh"]  # made from the host's own facts: the runnable script
    if lang == "zh-CN":
        with i18n.use("zh-CN"):
            assert i18n._("Left to do by hand").encode() in files["gnd-fix.sh"]


def test_pdf_of_a_saved_result_carries_the_review_script_and_the_result(sick_data: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(sick_data))
    pdf, again = tmp_path / "r.pdf", tmp_path / "again.pdf"
    assert main(["report", "--from-json", str(saved), "-o", str(pdf)]) == 0
    main(["fix-script", "--from-json", str(saved), "-o", str(tmp_path / "fix.sh")])
    main(["report", "--from-json", str(saved), "-o", str(tmp_path / "r.json")])
    files = _attachments(pdf)
    assert files["gnd-fix.sh"] == (tmp_path / "fix.sh").read_bytes()
    assert b"REVIEW_ONLY=1" in files["gnd-fix.sh"]
    assert files["gnd-fix.rollback.sh"] == (tmp_path / "fix.rollback.sh").read_bytes()
    assert files["result.json"] == (tmp_path / "r.json").read_bytes()  # the result as loaded (and masked)
    assert json.loads(files["result.json"])["findings"][0]["title"] == sick_data["findings"][0]["title"]
    main(["report", "--from-json", str(saved), "-o", str(again)])
    assert again.read_bytes() == pdf.read_bytes()  # reproducible: the files' dates are the result's


def test_redacted_pdf_carries_the_redacted_result_and_a_review_script(sick_data: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(sick_data))
    main(["report", "--from-json", str(saved), "-o", str(tmp_path / "r.pdf"), "--redact"])
    files = _attachments(tmp_path / "r.pdf")
    assert files and all(b"gpu-node-13" not in data for data in files.values())
    assert json.loads(files["result.json"])["redacted"] is True
    assert b"REVIEW_ONLY=1" in files["gnd-fix.sh"]
