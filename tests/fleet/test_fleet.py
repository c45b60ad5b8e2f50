"""gnd fleet: 200 generated nodes with three planted outliers; unreadable sources; small fleets."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.fleet.fleet import FleetReport, analyse_fleet, expand_paths
from fixtures.tools.make_node import HEALTHY
from reports.fleet import render_html, render_text
from tests.fleet.conftest import BEFORE_FIX, BUFFERS, GPU3, GPU3_PORT
from tests.fleet.fleetgen import FleetWriter, json_variant, result_dict, spec_tarball

NODES = 200
X8, BUFFERS_NODE, CMDLINE_NODE = 17, 88, 150
SNAPSHOT_NODE = 42  # one healthy node as a snapshot tarball, the rest of the healthy ones as saved results
BROKEN = "broken<b>.tar.gz"


def _name(i: int) -> str:
    return f"gpu-node-{i:03d}"


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fleet")
    # three healthy templates with different identities (MACs, GIDs, serials)
    templates = [json.dumps(result_dict(replace(HEALTHY, hostname=f"base-{b}", node_id=900 + b))) for b in range(3)]
    planted = {
        X8: replace(HEALTHY, gpu_links={3: (2.5, 8)}),
        BUFFERS_NODE: replace(HEALTHY, sysctl_overrides=dict(BEFORE_FIX.sysctl_overrides)),
        CMDLINE_NODE: replace(HEALTHY, extra_cmdline=("pcie_aspm=force",)),
    }
    for i in range(NODES):
        if i in planted:
            spec_tarball(d / f"{_name(i)}.tar.gz", replace(planted[i], hostname=_name(i), node_id=1000 + i))
        elif i == SNAPSHOT_NODE:
            FleetWriter(replace(HEALTHY, node_id=1000 + i)).write(d / f"{_name(i)}.tar.gz", _name(i), 1000 + i)
        else:
            (d / f"{_name(i)}.json").write_text(json_variant(templates[i % 3], _name(i), 1000 + i))
    (d / BROKEN).write_bytes(b"\x1f\x8b this is not a gzip stream")
    (d / "README.txt").write_text("not a source; skipped")
    return d


@pytest.fixture(scope="module")
def report(fleet_dir: Path) -> FleetReport:
    return analyse_fleet(expand_paths([str(fleet_dir)]), jobs=2)


def _names(report: FleetReport, nodes: list[int]) -> set[str]:
    return {report.rows[i].name for i in nodes}


def test_finds_exactly_the_three_planted_outliers(report: FleetReport) -> None:
    # the x8 GPU is a high finding most nodes lack; the socket buffers (below high) and pcie_aspm (no
    # finding) are configuration drift, shown with their facts but not outlier nodes at --fail-on high
    assert _names(report, report.outlier_nodes) == {_name(X8)}
    assert _names(report, report.drift_nodes) == {_name(X8), _name(BUFFERS_NODE), _name(CMDLINE_NODE)}
    by_node: dict[str, set[str]] = {}
    for o in report.fact_outliers:
        for i in o.nodes:
            by_node.setdefault(report.rows[i].name, set()).add(o.key)
    assert by_node == {
        _name(X8): {f"pci.{GPU3}.width", f"pci.{GPU3_PORT}.width"},
        _name(BUFFERS_NODE): {f"sysctl.{k}" for k in BUFFERS},
        _name(CMDLINE_NODE): {"cmdline.pcie_aspm"},
    }
    x8 = next(o for o in report.fact_outliers if o.key == f"pci.{GPU3}.width")
    assert (x8.value, x8.majority, x8.majority_nodes) == ("x8 (max x16)", "x16 (max x16)", NODES - 1)
    # the x8 GPU also fails its check on that node only
    assert any(f.check == "pcie.link_downgrade" and GPU3 in f.subject and _names(report, list(f.nodes)) == {_name(X8)}
               for f in report.outlier_findings)


def test_groups_the_rest_together(report: FleetReport) -> None:
    sizes = sorted(len(nodes) for _, nodes, _ in report.groups)
    assert sizes == [1, 1, 1, NODES - 3]
    label, majority, keys = report.groups[0]
    assert keys == [] and _name(SNAPSHOT_NODE) in _names(report, majority)  # snapshot and saved results agree
    assert {report.rows[i].name for _, nodes, _ in report.groups[1:] for i in nodes} == \
        {_name(X8), _name(BUFFERS_NODE), _name(CMDLINE_NODE)}


def test_unreadable_source_is_listed_and_the_run_goes_on(report: FleetReport) -> None:
    assert len(report.ok) == NODES
    bad = report.unreadable
    assert [Path(r.path).name for r in bad] == [BROKEN]
    assert bad[0].error and "\n" not in bad[0].error and "tarball" in bad[0].error


def test_fleet_wide_findings_are_on_every_node(report: FleetReport) -> None:
    for f in report.common:
        assert len(f.nodes) == NODES
    outlier_keys = {(f.check, f.subject) for f in report.outlier_findings}
    assert not outlier_keys & {(f.check, f.subject) for f in report.common}


def test_text_report_fits_and_names_the_outliers(report: FleetReport) -> None:

    text = render_text(report)
    assert "Outlier nodes (1; a finding at or above high that fewer than half of the nodes have):" in text
    assert f"pci.{GPU3}.width = x8 (max x16)" in text
    assert "Configuration drift, no outlier finding (2;" in text and _name(CMDLINE_NODE) in text
    assert "Check matrix" in text and "pcie.link_downgrade" in text
    # one screen-ish for 200 nodes (the check matrix has a row per check; the drift section two lines)
    assert len(text.splitlines()) < 92


def test_html_report_escapes_paths(report: FleetReport) -> None:
    html = render_html(report)
    assert html.startswith("<!DOCTYPE html>") and "broken&lt;b&gt;" in html and "<b>.tar" not in html
    assert html.count("<tr>") > NODES  # node-by-check matrix rows


def test_cli_json_and_exit_status(fleet_dir: Path, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    for i in (1, 2, 3, X8):
        suffix = ".tar.gz" if i == X8 else ".json"
        (small / f"{_name(i)}{suffix}").write_bytes((fleet_dir / f"{_name(i)}{suffix}").read_bytes())
    out = tmp_path / "r.json"
    assert main(["fleet", str(small / "*.json"), str(small / "*.tar.gz"), "-j", "1", "--format", "json",
                 "-o", str(out)]) == 1
    data = json.loads(out.read_text())
    assert data["summary"]["analysed"] == 4
    assert [n["name"] for n in data["outlier_nodes"]] == [_name(X8)]
    matrix = {n["name"]: n["statuses"] for n in data["nodes"]}
    assert matrix[_name(X8)]["pcie.link_downgrade"] == "high" and matrix[_name(1)]["pcie.link_downgrade"] != "high"
    (small / f"{_name(X8)}.tar.gz").unlink()
    assert main(["fleet", str(small), "--format", "json", "-o", str(out)]) == 0  # 3 identical nodes


def test_two_nodes_cannot_outvote_each_other(fleet_dir: Path) -> None:
    report = analyse_fleet([str(fleet_dir / f"{_name(1)}.json"), str(fleet_dir / f"{_name(X8)}.tar.gz")], jobs=1)
    assert report.outlier_nodes == [] and len(report.groups) == 2


def test_nothing_readable_exits_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "x.json").write_text("[]")
    assert main(["fleet", str(tmp_path / "x.json"), str(tmp_path / "missing.tar.gz")]) == 2
    out = capsys.readouterr().out
    assert "missing.tar.gz: " in out and "not a gnd result" in out


def test_a_finding_on_every_node_is_fleet_wide_whatever_pid_its_server_runs_under(tmp_path: Path) -> None:
    """Real nodes run the same server under different pids: that must not split one fleet-wide
    finding into one outlier per node."""
    from fixtures.tools.make_node import SICK

    writer = FleetWriter(replace(SICK, node_id=700))
    for i in range(6):
        writer.write(tmp_path / f"{_name(i)}.tar.gz", _name(i), 2000 + i, renumber=True)
    report = analyse_fleet(expand_paths([str(tmp_path)]), jobs=1)
    eager = [f for f in report.common if f.check == "runtime.cuda_graphs"]
    assert len(eager) == 1 and len(eager[0].nodes) == 6 and "pid" not in eager[0].subject
    assert not [f for f in report.outlier_findings if f.check == "runtime.cuda_graphs"]


def test_digests_sent_as_changes_fold_into_the_report_whole_digests_give(fleet_dir: Path, report: FleetReport) -> None:
    """Workers send a digest as its changes from the last one they sent whole (doctor/fleet/fleet.py
    ``_sent``); the report is the one folding every node's whole digest gives."""
    from doctor.fleet.fleet import Aggregate, NodeRow, analyse, finish

    paths = expand_paths([str(fleet_dir)])
    whole = Aggregate([NodeRow(p) for p in paths])
    for i, path in enumerate(paths):
        whole.add(i, analyse(path))
    sent: list[str] = []
    alone = analyse_fleet(paths, jobs=1, progress=lambda done, total, s: sent.extend(k for k in s if k.startswith("digest")))
    assert sent.count("digest_delta") > NODES // 2 and sent.count("digest_base") >= 1  # both ways were taken
    want = finish(whole).to_dict()
    for got in (report.to_dict(), alone.to_dict()):
        for d in (want, got):
            d["summary"].pop("duration_s", None)
            d["summary"].pop("jobs", None)
        assert got == want


def test_changes_against_bases_of_interleaved_workers_fold_like_whole_digests() -> None:
    from doctor.fleet.fleet import Aggregate, NodeRow

    def summary(digest: dict[str, str], **extra: object) -> dict[str, object]:
        return {"path": "p", "kind": "json", "name": "n", "error": None, "statuses": {"c": "pass"},
                "findings": [], "digest": digest, **extra}

    a = {f"k{i}": f"a{i}" for i in range(40)}
    b = {f"k{i}": f"b{i}" for i in range(30)} | {"only.b": "1"}
    a2 = {**{k: v for k, v in a.items() if k != "k3"}, "k5": "changed", "new": "x"}  # removed, changed, added
    b2 = {**b, "k7": "b-other"}
    # (worker pid, digest, how it is sent): bases whole, the rest as changes, two workers interleaved
    sends = [(1, a, ("base", (1, 1))), (2, b, ("base", (2, 1))), (1, a2, ("delta", (1, 1))), (2, b2, ("delta", (2, 1))),
             (1, b, ("base", (1, 2))), (1, b2, ("delta", (1, 2))), (2, b, ("delta", (2, 1))), (1, b, ("delta", (1, 2)))]
    whole, sent = Aggregate([NodeRow(str(i)) for i in range(len(sends))]), Aggregate([NodeRow(str(i)) for i in range(len(sends))])
    for i, (_, digest, (how, number)) in enumerate(sends):
        whole.add(i, summary(digest))
        if how == "base":
            sent.add(i, summary(digest, digest_base=number))
        else:
            base = a if number == (1, 1) else b
            changes = {k: v for k, v in digest.items() if base.get(k) != v}
            encoded = summary({}, digest_delta=(number, changes, [k for k in base if k not in digest]))
            del encoded["digest"]
            sent.add(i, encoded)
    sent.settle()

    def table(agg: Aggregate) -> dict[str, dict[str, list[int]]]:
        return {k: {v: sorted(nodes) for v, nodes in values.items()} for k, values in agg.facts.items()}

    assert table(sent) == table(whole)
    assert table(whole)["k3"]["a3"] == [0] and table(whole)["new"] == {"x": [2]}  # node 2 lost k3, gained "new"


def test_a_finding_group_takes_its_title_from_the_first_node_in_input_order_whatever_order_workers_end() -> None:
    """Nodes sharing a finding can word its title differently (the inputs one node lacked); the fleet report
    shows the first node's title in the order the nodes were given, not the first summary to arrive."""
    from doctor.fleet.fleet import Aggregate, NodeRow, finish

    def summary(title: str) -> dict[str, object]:
        return {"path": "p", "kind": "json", "name": "n", "error": None, "statuses": {"kernel.hugepages": "unknown"},
                "findings": [("kernel.hugepages", "host", "unknown", title)], "digest": {}}

    titles = {0: "input incomplete (hugepages)", 1: "input incomplete (cmdline, hugepages)",
              2: "input incomplete (cmdline, hugepages, sysctls)"}
    seen = set()
    for order in ((0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)):
        agg = Aggregate([NodeRow(str(i)) for i in range(3)])
        for i in order:
            agg.add(i, summary(titles[i]))
        report = finish(agg)
        groups = [*report.common, *report.partial, *report.outlier_findings]
        assert [(g.title, g.nodes) for g in groups] == [(titles[0], (0, 1, 2))], order
        seen.add(groups[0].title)
    assert seen == {titles[0]}
