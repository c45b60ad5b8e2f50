"""Outlier nodes: every node with a finding at or above --fail-on that most nodes (more than half) lack."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.fleet.fleet import analyse_fleet, expand_paths, is_outlier_finding
from fixtures.tools.make_node import HEALTHY
from tests.fleet.fleetgen import json_variant, result_dict

X8 = replace(HEALTHY, gpu_links={3: (2.5, 8)})  # pcie.link_downgrade, high
LOW = replace(HEALTHY, sysctl_overrides={"net.ipv4.tcp_slow_start_after_idle": "1"})  # two low findings only


def _name(i: int) -> str:
    return f"node-{i:02d}"


@pytest.fixture(scope="module")
def templates() -> dict[str, str]:
    return {k: json.dumps(result_dict(replace(spec, hostname="t", node_id=700 + n)))
            for n, (k, spec) in enumerate({"ok": HEALTHY, "x8": X8, "low": LOW}.items())}


def _fleet(folder: Path, templates: dict[str, str], kinds: dict[int, str], size: int = 10) -> list[str]:
    folder.mkdir()
    for i in range(size):
        (folder / f"{_name(i)}.json").write_text(json_variant(templates[kinds.get(i, "ok")], _name(i), 3000 + i))
    return expand_paths([str(folder)])


def _names(report: object, nodes: list[int]) -> set[str]:
    return {report.rows[i].name for i in nodes}  # type: ignore[attr-defined]


def test_a_fault_two_of_ten_nodes_share_lists_both_and_a_low_finding_lists_none(
        tmp_path: Path, templates: dict[str, str]) -> None:
    paths = _fleet(tmp_path / "f", templates, {2: "x8", 7: "x8", 5: "low"})
    report = analyse_fleet(paths, jobs=1)
    assert _names(report, report.outlier_nodes) == {_name(2), _name(7)}
    assert {(f.check, f.severity, len(f.nodes)) for f in report.outlier_findings} == {("pcie.link_downgrade", "high", 2)}
    # the low node is configuration drift (its sysctl), its findings are "on some nodes", it is no outlier
    assert _name(5) in _names(report, report.drift_nodes)
    assert {f.check for f in report.partial if _name(5) in _names(report, list(f.nodes))} == \
        {"net.tcp_tuning", "sysctl.persistence"}
    # at --fail-on low the same low findings are at the level, and most nodes lack them: listed
    low = analyse_fleet(paths, jobs=1, fail_on="low")
    assert _names(low, low.outlier_nodes) == {_name(2), _name(5), _name(7)}


@pytest.mark.parametrize(("share", "outliers"), [(4, True), (5, False)])
def test_most_means_more_than_half_lack_it(tmp_path: Path, templates: dict[str, str], share: int,
                                           outliers: bool) -> None:
    paths = _fleet(tmp_path / "f", templates, dict.fromkeys(range(share), "x8"))
    report = analyse_fleet(paths, jobs=1)
    assert _names(report, report.outlier_nodes) == ({_name(i) for i in range(share)} if outliers else set())
    assert len(report.failing("high")) == share  # listed or not, they fail the run


def test_the_rule_at_its_edges() -> None:
    assert is_outlier_finding("high", 1, 3, "high")
    assert not is_outlier_finding("high", 2, 4, "high")  # half: no majority lacks it
    assert is_outlier_finding("critical", 49, 100, "high") and not is_outlier_finding("critical", 50, 100, "high")
    assert not is_outlier_finding("medium", 1, 100, "high")
    assert is_outlier_finding("medium", 1, 100, "medium")
    assert not is_outlier_finding("high", 1, 2, "high")  # two nodes never outvote each other
    assert not is_outlier_finding("high", 0, 10, "high")


def test_cli_lists_outliers_and_says_the_rule(tmp_path: Path, templates: dict[str, str]) -> None:
    paths = _fleet(tmp_path / "f", templates, {2: "x8", 7: "x8", 5: "low"})
    out = tmp_path / "r.json"
    assert main(["fleet", str(tmp_path / "f"), "-j", "1", "--format", "json", "-o", str(out)]) == 1
    data = json.loads(out.read_text())
    assert [n["name"] for n in data["outlier_nodes"]] == [_name(2), _name(7)]
    assert data["summary"]["fail_on"] == "high" and data["summary"]["outlier_nodes"] == 2
    text = tmp_path / "r.txt"
    assert main(["fleet", *paths, "-j", "1", "-o", str(text)]) == 1
    body = text.read_text()
    assert "Outlier nodes (2; a finding at or above high that fewer than half of the nodes have):" in body
    assert "Configuration drift, no outlier finding (1;" in body
    # only the low node: nothing at or above high anywhere, so exit 0 although it drifts
    assert main(["fleet", *[p for p in paths if _name(2) not in p and _name(7) not in p], "-j", "1",
                 "-o", str(text)]) == 0
    assert "Outlier nodes: none" in text.read_text()
    helptext = subprocess.run([sys.executable, "-m", "doctor", "fleet", "--help"], capture_output=True, text=True,
                              check=True).stdout
    assert "fewer than half of the analysed nodes" in " ".join(helptext.split())
