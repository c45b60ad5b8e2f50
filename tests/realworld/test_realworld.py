"""Replay real recordings of real machines (tests/realworld/cases/*) and hold the doctor to an expert's reading.

Each case folder is laid out like a snapshot holding the single recorded file (``commands/nvidia-smi_-q_-x``,
``sos_commands/nvidia/nvidia-smi_-q``, ``commands/lspci_-nnvvv`` ...). ``cases.toml`` names where the file
comes from and what must be reported (``fires``), what must stay quiet (``quiet``, the false-alarm traps) and what
the file records, so that a check must not call it unknown (``known``: check and subject, or an address the
unknown finding relates to).
"""

from __future__ import annotations

from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from doctor.facts import Facts
from doctor.findings import Finding
from doctor.sources import open_source
from tests.helpers import facts, run

HERE = Path(__file__).resolve().parent
CASES = tomllib.loads((HERE / "cases.toml").read_text(encoding="utf-8"))["case"]
ALARMS = {"low", "medium", "high"}


def _findings(name: str) -> list[Finding]:
    folder = HERE / "cases" / name
    assert folder.is_dir(), f"case folder {folder} missing"
    reports = sorted(folder.glob("nvidia-bug-report.log*"))
    if reports:  # a ticket folder holding the published log: `gnd check <folder>` reads the log
        return list(run(Facts(open_source(str(folder)))).findings)
    return list(run(facts(base=folder)).findings)


def _show(findings: list[Finding]) -> str:
    return "\n".join(f"  {f.check} {f.severity} {f.subject}: {f.title}" for f in findings)


def test_corpus_is_large_and_documented() -> None:
    assert len(CASES) >= 50
    beyond_xml = [c for c in CASES if not (HERE / "cases" / c["name"] / "commands" / "nvidia-smi_-q_-x").exists()]
    assert len(beyond_xml) >= 25, "most real inputs are not nvidia-smi -q -x: keep the other kinds covered"
    names = {c["name"] for c in CASES}
    assert names == {p.name for p in (HERE / "cases").iterdir() if p.is_dir()}
    provenance = (HERE / "PROVENANCE.md").read_text(encoding="utf-8")
    for case in CASES:
        assert case["license"] in ("MIT", "Apache-2.0", "BSD-3-Clause", "BSD-2-Clause", "ISC", "MPL-2.0")
        assert len(case["commit"]) == 40 and case["repository"] in provenance
    assert any(not c["fires"] for c in CASES) and any(c["fires"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict) -> None:  # type: ignore[type-arg]
    findings = _findings(case["name"])
    for want in case["fires"]:
        ok = [f for f in findings if f.check == want["check"] and f.severity in want["severity"].split("|")
              and want["subject"] in f.subject and want.get("title", "") in f.title]
        assert ok, f"{case['name']}: expected {want}, got\n{_show(findings)}"
    for want in case.get("known", []):
        unknown = [f for f in findings if f.check == want["check"] and f.severity == "unknown"
                   and (want["subject"] in f.subject or want["subject"] in f.related)]
        assert not unknown, f"{case['name']}: the log holds this, yet\n{_show(unknown)}"
    for check_id in case["quiet"]:
        alarms = [f for f in findings if f.check == check_id and f.severity in ALARMS]
        assert not alarms, f"{case['name']}: false alarm\n{_show(alarms)}"
