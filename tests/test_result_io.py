"""Saved results: one loader and one validation for --from-json, diff, fleet and the fleet cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.result_io import MAX_JSON_BYTES, is_json_result, load_result, read_result
from tests.helpers import SICK, facts, run

GOOD = {"schema_version": "1.0", "tool": {"name": "gpu-node-doctor", "version": "0"}, "findings": []}


def test_a_saved_check_result_round_trips(tmp_path: Path) -> None:
    result = run(facts(base=SICK))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result.to_dict()))
    loaded = load_result(str(path))
    assert [(f.check, f.subject, f.severity) for f in loaded.findings] == \
        [(f.check, f.subject, f.severity) for f in result.findings]


@pytest.mark.parametrize("base", ["sick", "healthy"])
def test_loading_a_saved_result_changes_nothing_in_it(base: str, tmp_path: Path) -> None:
    """The result is masked once, when it is made: loading what `gnd check` wrote masks it again (a saved
    file may come from anywhere), and that second pass finds nothing to change (an evidence value that
    reads like a command line but is none was once re-masked)."""
    from doctor.cli import main
    from tests.helpers import HEALTHY

    path = tmp_path / "r.json"
    main(["check", str(SICK if base == "sick" else HEALTHY), "--format", "json", "-o", str(path)])
    assert load_result(str(path)).to_dict() == json.loads(path.read_text())


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("[]", "not a gnd result"),
    (json.dumps({"schema_version": "1.0", "findings": []}), "not a gnd result"),  # no tool name
    (json.dumps({**GOOD, "schema_version": "3.0"}), "not supported"),
    (json.dumps({**GOOD, "findings": {}}), "'findings' is not a list"),
    (json.dumps({**GOOD, "source": []}), "'source' is not an object"),
    ("[" * 100000, "not valid JSON"),
])
def test_what_is_not_a_result_is_one_line(tmp_path: Path, content: str | bytes, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DoctorError) as err:
        read_result(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    assert not is_json_result(str(fifo))
    with pytest.raises(DoctorError, match="not a regular file"):
        read_result(str(fifo))


def test_a_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_JSON_BYTES + 1)  # sparse: no disk used
    with pytest.raises(DoctorError, match="larger than the 64 MiB limit"):
        read_result(str(big))


def test_recognised_by_suffix_or_by_content(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("x")
    (tmp_path / "b.out").write_text('  {"schema_version": "1.0"}')
    (tmp_path / "c.tar.gz").write_bytes(b"\x1f\x8b")
    assert [is_json_result(str(tmp_path / n)) for n in ("a.json", "b.out", "c.tar.gz", "missing")] == \
        [True, True, False, False]
