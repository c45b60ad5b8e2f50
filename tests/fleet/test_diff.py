"""gnd diff: a fix shows as exactly the fixed findings and facts; different hosts are refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.diff import BETTER, FIXED, NEW, WORSE, compare_findings, diff_nodes
from doctor.findings import Finding
from doctor.fleet.load import load_node
from fixtures.tools.make_node import HEALTHY
from tests.fleet.conftest import BUFFERS, GPU3, GPU3_PORT
from tests.fleet.fleetgen import json_variant, result_dict


@pytest.fixture(scope="module")
def fix_diff(node_pair: tuple[Path, Path]):  # type: ignore[no-untyped-def]
    before, after = node_pair
    return diff_nodes(load_node(str(before)), load_node(str(after)))


def test_fix_changes_exactly_the_link_and_buffer_facts(fix_diff) -> None:  # type: ignore[no-untyped-def]
    changed = {f.key: (f.before, f.after) for f in fix_diff.facts}
    expected = {f"pci.{GPU3}.width": ("x8 (max x16)", "x16 (max x16)"),
                f"pci.{GPU3_PORT}.width": ("x8 (max x16)", "x16 (max x16)")}
    assert {k: v for k, v in changed.items() if k.startswith("pci.")} == expected
    assert {k for k in changed if not k.startswith("pci.")} == {f"sysctl.{k}" for k in BUFFERS}
    assert changed["sysctl.net.core.rmem_max"] == ("212992", "2147483647")


def test_fix_shows_fixed_findings_and_no_regression(fix_diff) -> None:  # type: ignore[no-untyped-def]
    assert fix_diff.of(NEW) == [] and fix_diff.of(WORSE) == []
    improved = fix_diff.of(FIXED) + fix_diff.of(BETTER)
    assert "net.socket_buffers" in {f.check for f in fix_diff.of(FIXED)}
    link = [f for f in improved if f.check == "pcie.link_downgrade" and GPU3 in f.subject]
    assert link and link[0].before == "high" and f"pci.{GPU3}.width" in link[0].related_facts
    # nothing else moved: every improved finding is about GPU 3's link or the socket buffers (whose running
    # values also differed from the boot files: sysctl.persistence)
    for f in improved:
        assert GPU3 in f.subject or GPU3_PORT in f.subject or f.check.startswith(("net.", "sysctl.")), f


def test_reverse_diff_is_a_regression_and_exits_1(node_pair: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    before, after = node_pair
    assert main(["diff", str(after), str(before)]) == 1
    out = capsys.readouterr().out
    assert "NEW" in out or "WORSE" in out
    assert f"pci.{GPU3}.width" in out and "x16 (max x16)  ->  x8 (max x16)" in out
    assert main(["diff", str(before), str(after)]) == 0


def test_saved_json_result_diffs_like_the_snapshot(node_pair: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    before, after = node_pair
    saved = tmp_path / "before.json"
    assert main(["check", "--format", "json", "-o", str(saved), str(before)]) == 1
    assert main(["diff", "--format", "json", str(saved), str(after)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {f["key"] for f in data["facts"]} == {f"pci.{GPU3}.width", f"pci.{GPU3_PORT}.width",
                                               *(f"sysctl.{k}" for k in BUFFERS)}
    assert data["before"]["kind"] == "json" and data["after"]["kind"] == "snapshot"
    assert data["counts"]["new"] == 0 and data["counts"]["fixed"] >= 1


def test_different_hosts_refused_unless_cross_host(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    template = json.dumps(result_dict(HEALTHY))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json_variant(template, "gpu-node-01", 1))
    b.write_text(json_variant(template, "gpu-node-02", 2))
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "different hosts" in err and "--cross-host" in err
    assert main(["diff", "--cross-host", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "different hosts" in out and "host.hostname" in out


def test_html_is_self_contained_and_escaped(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    before = result_dict(replace(HEALTHY, extra_args=("--enforce-eager", "--api-key", "sk-FAKE-not-a-real-key-000",
                                                      "--served-model-name", "<script>x</script>")))
    after = result_dict(HEALTHY)
    (tmp_path / "b.json").write_text(json.dumps(before))
    (tmp_path / "a.json").write_text(json.dumps(after))
    assert main(["diff", "--format", "html", str(tmp_path / "b.json"), str(tmp_path / "a.json")]) == 0
    html = capsys.readouterr().out
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    # the option's value is masked (no check reads it); the placeholder's own brackets show the escaping
    assert "&lt;redacted&gt;" in html and "<redacted>" not in html
    assert "sk-FAKE" not in html  # argv secrets stay masked in the fact changes
    assert "proc.vllm.entrypoints.openai.api_server.args" in html


def test_repeated_subject_keeps_both_findings() -> None:
    one = Finding("high", "node", "first", check="x.y")
    two = Finding("low", "node", "second", check="x.y")
    changes = compare_findings([one, two], [one])
    assert [(c.change, c.subject) for c in changes] == [("fixed", "node [second]"), ("unchanged", "node")]


def test_missing_source_is_one_line_error(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["diff", str(bad), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid JSON" in err


def test_a_server_restarted_under_another_pid_is_the_same_server() -> None:
    """The usual fix restarts the server: its findings must not read as fixed plus new."""
    eager = Finding("high", "vllm api_server (pid 4242)", "CUDA Graphs disabled", check="runtime.cuda_graphs")
    blocking = Finding("critical", "vllm api_server (pid 4242)", "CUDA_LAUNCH_BLOCKING=1", check="runtime.debug_env")
    gid = Finding("high", "NCCL_IB_GID_INDEX in vllm api_server (pid 4242)", "GID 0", check="rdma.gid_index")
    restarted = [replace(eager, subject="vllm api_server (pid 5120)"),
                 replace(gid, subject="NCCL_IB_GID_INDEX in vllm api_server (pid 5120)")]
    changes = {(c.check, c.change, c.subject) for c in compare_findings([eager, blocking, gid], restarted)}
    assert changes == {("runtime.debug_env", "fixed", "vllm api_server"),
                       ("runtime.cuda_graphs", "unchanged", "vllm api_server"),
                       ("rdma.gid_index", "unchanged", "NCCL_IB_GID_INDEX in vllm api_server")}


def test_two_servers_of_one_name_stay_two_findings() -> None:
    one = Finding("high", "vllm serve (pid 100)", "CUDA Graphs disabled", check="runtime.cuda_graphs")
    two = replace(one, subject="vllm serve (pid 200)")
    changes = compare_findings([one, two], [one])
    assert sorted(c.change for c in changes) == ["fixed", "unchanged"]
