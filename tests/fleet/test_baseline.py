"""Baselines: written as editable TOML, deviations reported as baseline.deviation with evidence."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from checks.baseline_deviation import CHECK_ID, compare
from doctor.cli import main
from doctor.errors import DoctorError
from doctor.facts import Facts
from doctor.facts.baseline import load_baseline
from doctor.fleet.baseline import write_baseline
from doctor.runner import run_checks
from doctor.sources import SnapshotSource
from doctor.sources.tree import Link, OverlayTree
from fixtures.tools.make_node import HEALTHY, NodeSpec, render
from tests.fleet.conftest import BEFORE_FIX, GPU3
from tests.helpers import empty_tree


def memory_facts(spec: NodeSpec) -> Facts:
    tree = render(spec)
    changes: dict[str, bytes | str | Link | None] = dict(tree.files)
    changes.update({k: Link(v) for k, v in tree.links.items()})
    return Facts(SnapshotSource(OverlayTree(empty_tree(), changes), spec.hostname))


@pytest.fixture(scope="module")
def baseline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("baseline") / "expected.toml"
    path.write_text(write_baseline(memory_facts(HEALTHY), "fixture"))
    return path


def test_written_baseline_is_commented_and_matches_its_node(baseline_file: Path) -> None:
    text = baseline_file.read_text()
    assert text.startswith("# gpu-node-doctor baseline") and f'[pci."{GPU3}"]  # GPU 3' in text
    found = compare(load_baseline(str(baseline_file)), memory_facts(HEALTHY))
    assert [(f.severity, f.check) for f in found] == [("pass", CHECK_ID)]


def test_x8_gpu_and_default_buffers_deviate_with_evidence(baseline_file: Path) -> None:
    found = {f.subject: f for f in compare(load_baseline(str(baseline_file)), memory_facts(BEFORE_FIX))}
    link = found[GPU3]
    assert (link.severity, link.expected, link.observed) == ("high", "x16", "x8")
    assert link.evidence[0].source == f"sys/bus/pci/devices/{GPU3}/current_link_width"
    where = link.evidence[1].value  # file:line of the slot's table
    line = int(where.rsplit(":", 1)[1])
    assert baseline_file.read_text().splitlines()[line - 1].startswith(f'[pci."{GPU3}"]')
    rmem = found["sysctl net.core.rmem_max"]
    assert rmem.severity == "medium" and rmem.fix.runtime == ("sysctl -w net.core.rmem_max=2147483647",)
    assert set(found) == {GPU3, "sysctl net.core.rmem_max", "sysctl net.core.wmem_max",
                          "sysctl net.ipv4.tcp_rmem", "sysctl net.ipv4.tcp_wmem"}


def test_driver_binding_and_kernel_parameter_deviations(baseline_file: Path) -> None:
    facts = memory_facts(replace(HEALTHY, vfio_gpus=(2,), iommu_mode="dma-fq"))
    found = compare(load_baseline(str(baseline_file)), facts)
    gpu2 = facts.gpus.gpus[2].address
    driver = [f for f in found if f.subject == gpu2 and "bound to" in f.title]
    assert driver and driver[0].severity == "high" and driver[0].observed == "vfio-pci"
    cmdline = [f for f in found if f.subject == "cmdline iommu"]
    assert cmdline and cmdline[0].expected == "iommu=pt" and cmdline[0].observed == "absent"


def test_unknown_key_names_the_line(baseline_file: Path, tmp_path: Path) -> None:
    lines = baseline_file.read_text().splitlines()
    at = lines.index(f'[pci."{GPU3}"]  # GPU 3: NVIDIA H100 80GB HBM3') + 1
    lines.insert(at, "widht = 16")
    bad = tmp_path / "bad.toml"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(DoctorError, match=rf"bad.toml:{at + 1}: unknown key 'widht'"):
        load_baseline(str(bad))
    bad.write_text('version = 1\n[gpus]\ncount = "eight"\n')
    with pytest.raises(DoctorError, match=r"bad.toml:3: count in \[gpus\] must be an integer"):
        load_baseline(str(bad))
    bad.write_text("[gpus\n")
    with pytest.raises(DoctorError, match="invalid TOML"):
        load_baseline(str(bad))


def test_baseline_check_ranks_with_the_others_and_records_its_status(baseline_file: Path) -> None:
    facts = memory_facts(BEFORE_FIX)
    facts.baseline = load_baseline(str(baseline_file))
    result = run_checks(facts)
    status = [c for c in result.checks if c["id"] == CHECK_ID]
    assert status and status[0]["status"] == "high" and status[0]["findings"] == 5
    assert [f.rank for f in result.findings] == list(range(1, len(result.findings) + 1))
    assert result.findings[0].severity == "high"


def test_cli_baseline_then_check(node_pair: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    before, after = node_pair
    out = tmp_path / "expected.toml"
    assert main(["baseline", str(after), "-o", str(out)]) == 0
    assert main(["check", "--baseline", str(out), "--format", "json", str(after)]) == 0
    capsys.readouterr()
    assert main(["check", "--baseline", str(out), "--only", "gpu.inventory", str(before)]) == 1
    assert "baseline.deviation" in capsys.readouterr().out
    assert main(["check", "--baseline", str(tmp_path / "none.toml"), str(after)]) == 2
