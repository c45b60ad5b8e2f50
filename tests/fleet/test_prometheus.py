"""--format prometheus: node_exporter textfile format that prometheus_client's parser accepts."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.cli import main
from doctor.runner import Result
from reports.prometheus import escape_label, render_prometheus

parser = pytest.importorskip("prometheus_client.parser")

NASTY = 'GPU "3" \\ path\nnext'


def _families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    return {fam.name: [(s.labels, s.value) for s in fam.samples] for fam in parser.text_string_to_metric_families(text)}


def test_labels_escaped_and_values_parsed() -> None:
    data = {"generated_at": "2025-01-02T03:04:05+00:00", "duration_s": 0.25,
            "tool": {"version": "0.1.0"}, "source": {"kind": "snapshot"},
            "checks": [{"id": "pcie.link_downgrade", "status": "high"}, {"id": "net.link", "status": "pass"}],
            "findings": [{"check": "pcie.link_downgrade", "severity": "high", "subject": NASTY},
                         {"check": "net.link", "severity": "pass", "subject": "node"}]}
    text = render_prometheus(Result.from_dict(data))
    fams = _families(text)
    assert fams["gnd_finding"] == [({"check": "pcie.link_downgrade", "severity": "high", "subject": NASTY}, 1.0)]
    counts = {labels["severity"]: v for labels, v in fams["gnd_findings"]}
    assert counts["high"] == 1 and counts["pass"] == 1 and counts["critical"] == 0
    assert fams["gnd_run_duration_seconds"] == [({}, 0.25)]
    assert fams["gnd_run_timestamp_seconds"] == [({}, 1735787045.0)]
    assert ({"check": "net.link", "status": "pass"}, 1.0) in fams["gnd_check_status"]
    assert escape_label(NASTY) == 'GPU \\"3\\" \\\\ path\\nnext'


def test_real_run_parses(node_pair: tuple[Path, Path], tmp_path: Path) -> None:
    before, _ = node_pair
    out = tmp_path / "gnd.prom"
    assert main(["check", "--format", "prometheus", "-o", str(out), str(before)]) == 1
    fams = _families(out.read_text())
    assert any(labels["check"] == "pcie.link_downgrade" and labels["severity"] == "high"
               for labels, _ in fams["gnd_finding"])
    assert "gnd_check_status" in fams and "gnd_run_info" in fams


#: the series `--format prometheus` writes: name -> label names. A rename is a breaking change for every
#: dashboard and alert built on them; change this only with a release note.
CONTRACT = {
    "gnd_finding": ("check", "severity", "subject"),
    "gnd_findings": ("severity",),
    "gnd_check_status": ("check", "status"),
    "gnd_run_duration_seconds": (),
    "gnd_run_timestamp_seconds": (),
    "gnd_run_info": ("version", "source_kind"),
}


def test_metric_names_and_labels_are_the_documented_contract() -> None:
    from doctor.pipeline import analyse
    from tests.helpers import SICK

    fams = _families(render_prometheus(analyse(str(SICK))))
    assert {name: {tuple(sorted(labels)) for labels, _ in samples} for name, samples in fams.items()} == \
        {name: {tuple(sorted(labels))} for name, labels in CONTRACT.items()}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "fleet.md").read_text()
    import re

    table = dict(re.findall(r"^\| `(gnd_\w+)` \|\s*([^|]*?)\s*\|", docs, re.M))
    assert {name: tuple(re.findall(r"`(\w+)`", labels)) for name, labels in table.items()} == CONTRACT
