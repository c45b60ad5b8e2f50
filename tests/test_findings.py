"""Findings: severity enum, stable subject ids, structured fixes, and reading 1.x results."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from doctor.findings import CRITICAL, PASS, Finding, Fix, FixStep, Severity, at_least, rank
from doctor.fixes import Context, FixRejected, load_builders, make, rebuild
from doctor.registry import load_checks
from doctor.result_io import to_result
from doctor.runner import Result
from reports.view import build_view
from tests.helpers import HEALTHY, SICK, facts
from tests.helpers import run as run_facts


def run(fixture: Path) -> Result:
    return run_facts(facts(base=fixture))


OLD = Path(__file__).parent / "data" / "result-1.0-sick.json"
#: PCI address, interface, RDMA port, pid:N, sysctl, environment variable, cpuN, a file, node
SUBJECT_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|[a-z][a-z0-9]{1,14}|mlx5_\d+/\d+|pid:\d+"
                        r"|[a-z]+(\.[a-z0-9_]+)+|[A-Z][A-Z0-9_]+|cpu\d+|node|transparent_hugepage|hugepages-\d+kB|[a-z0-9_./-]+")


def test_severity_is_an_enum_with_the_json_strings() -> None:
    assert [s.value for s in Severity] == ["critical", "high", "medium", "low", "unknown", "info", "pass"]
    assert CRITICAL is Severity.CRITICAL and CRITICAL == "critical" and f"{CRITICAL}" == "critical"
    assert Finding("high", "x", "t").severity is Severity.HIGH
    assert Finding("bogus", "x", "t").severity is Severity.UNKNOWN
    assert json.dumps(Finding(PASS, "x", "t").to_dict()["severity"]) == '"pass"'
    assert at_least(Severity.HIGH, "medium") and not at_least(Severity.LOW, "medium")


@pytest.mark.parametrize("fixture", [SICK, HEALTHY])
def test_every_finding_has_a_stable_subject_id(fixture: str) -> None:
    result = run(fixture)
    assert result.findings
    for f in result.findings:
        assert f.subject_id and SUBJECT_ID.fullmatch(f.subject_id), (f.check, f.subject, f.subject_id)
        assert " " not in f.subject_id and "(" not in f.subject_id


def test_display_subject_keeps_its_text_and_id_is_the_address() -> None:
    by_check = {(f.check, f.subject): f for f in run(SICK).findings}
    gpu = by_check[("pcie.link_downgrade", "GPU 5 (0000:9c:00.0)")]
    assert gpu.subject_id == "0000:9c:00.0"
    assert by_check[("numa.process_affinity", "VLLM::Worker_TP2 (pid 4336)")].subject_id == "pid:4336"
    env = by_check[("nccl.transport", "NCCL_IB_DISABLE in vllm api_server (pid 4242)")]
    assert env.subject_id == "NCCL_IB_DISABLE"
    assert by_check[("pcie.acs_redirect", "PCIe switch 0000:98:00.0 above GPU 4, GPU 5")].subject_id == "0000:98:00.0"
    assert by_check[("net.link", "enp189s0np0")].subject_id == "enp189s0np0"
    assert by_check[("rdma.port_state", "mlx5_7/1")].subject_id == "mlx5_7/1"


def test_fixes_round_trip_through_json_and_rebuild_identically() -> None:
    data = json.loads(json.dumps(run(SICK).to_dict()))
    assert data["schema_version"] == "2.2"
    back = Result.from_dict(data)
    ctx = Context.from_inventory(data["inventory"])
    declared = {c.id: c.fixes for c in load_checks()[0]}
    rebuilt = 0
    for f in back.findings:
        if f.fix.builder:
            assert rebuild(f.fix, ctx).steps == f.fix.steps, f.check
            assert f.fix.builder in declared[f.check]
            rebuilt += 1
        for step in f.fix.steps:  # argv xor file write xor manual text
            assert sum(map(bool, (step.argv, step.heredoc, step.manual))) == 1, (f.check, step)
    assert rebuilt >= 12
    assert [f.to_dict() for f in back.findings] == data["findings"]


def test_every_check_fix_uses_a_builder() -> None:
    """No check writes command text: every fix with steps names a builder its check declares."""
    declared = {c.id: c.fixes for c in load_checks()[0]}
    for fixture in (SICK, HEALTHY):
        for f in run(fixture).findings:
            assert not f.fix.steps or f.fix.builder in declared.get(f.check, ()), (f.check, f.fix.builder)
    assert {b for fixes in declared.values() for b in fixes} <= set(load_builders())


def test_builders_refuse_what_no_check_produces() -> None:
    assert make("module_load", module="dummy").steps == ()
    core = make("sysctl", set={"kernel.core_pattern": "|/bin/sh -c id"}, previous={}, conf="90-gnd-x.conf")
    assert core.steps == () and "not one a check sets" in core.notes
    assert "No commands" in make("module_load", module="dummy").notes
    with pytest.raises(FixRejected, match="'eth0' is not an interface of this host"):
        rebuild(make("link_mtu", netdev="eth0", mtu=9000, previous=1500), Context(netdevs=frozenset({"eth1"})))
    fix = make("link_mtu", netdev="eth0", mtu=9000, previous=1500)
    assert [s.text for s in fix.steps] == ["ip link set dev eth0 mtu 9000", "ip link set dev eth0 mtu 1500"]
    assert make("link_mtu", netdev="eth0;reboot", mtu=9000, previous=1500).steps == ()
    assert make("link_mtu", netdev="eth0", mtu=10**6, previous=1500).steps == ()


def test_write_steps_render_quoted() -> None:
    step = FixStep("runtime", heredoc=("/etc/x y", "a = 1\nb = 2\n"))
    assert step.text == "printf '%s\\n' 'a = 1' 'b = 2' > '/etc/x y'" and step.kind == "write"
    assert FixStep("runtime", heredoc=("/proc/irq/5/smp_affinity_list", "0-3")).text == \
        "echo 0-3 > /proc/irq/5/smp_affinity_list"


def test_reads_a_saved_1_0_result() -> None:
    data = json.loads(OLD.read_text())
    assert data["schema_version"] == "1.0"
    result = Result.from_dict(data)
    assert len(result.findings) == len(data["findings"])
    for f, raw in zip(result.findings, data["findings"]):
        assert f.severity == raw["severity"] and f.subject == raw["subject"]
        assert f.subject_id  # derived from the subject
        assert f.fix.runtime == tuple(raw["fix"]["runtime"]) and f.fix.rollback == tuple(raw["fix"]["rollback"])
        assert f.fix.builder == "" and all(s.kind == "manual" and not s.unattended for s in f.fix.steps)
    gpu = next(f for f in result.findings if f.subject == "GPU 5 (0000:9c:00.0)")
    assert gpu.subject_id == "0000:9c:00.0"
    view = build_view(to_result(data))  # reports render old results
    assert view.problems and rank(list(view.problems))[0].rank == 1
    assert Fix.from_dict({"runtime": "not a list", "steps": "nor this"}).steps == ()


def test_persistent_files_are_not_shared_between_findings() -> None:
    """Two findings writing the same sysctl.d file would each overwrite the other's setting."""
    sick = run(SICK).findings
    overlay = run_facts(facts({"proc/sys/vm/zone_reclaim_mode": "1\n", "proc/sys/net/core/somaxconn": "128\n"},
                              base=SICK)).findings
    for findings in (sick, overlay):
        paths = [s.heredoc[0] for f in findings for s in f.fix.phase("persistent") if s.heredoc]
        assert len(paths) >= 3 and len(paths) == len(set(paths)), paths


def test_irq_writes_read_as_one_line_but_stay_separate_steps() -> None:
    (f,) = [x for x in run(SICK).findings if x.check == "numa.irq_affinity"]
    writes = [s for s in f.fix.phase("runtime") if s.kind == "write"]
    assert len(writes) == 8 and all(s.unattended for s in writes)
    assert f.fix.runtime[1] == ("for irq in 217 218 219 220 221 222 223 224; do echo 0-47 > "
                                "/proc/irq/$irq/smp_affinity_list; done")
    assert f.fix.rollback[0] == "echo 56 > /proc/irq/217/smp_affinity_list"  # differing values stay apart
    assert "systemctl enable --now irqbalance" in f.fix.rollback  # shown for a human, keyed to the persistent step


def test_every_sick_problem_says_where_its_impact_comes_from() -> None:
    """Issue 14: a number without a basis is not a finding a vendor can check."""
    from doctor.findings import LOW, Severity, severity_order
    from tests.helpers import facts, run, sick

    problems = [f for f in run(facts(base=sick())).findings
                if severity_order(f.severity) <= severity_order(LOW) and f.severity != Severity.UNKNOWN]
    assert problems
    for f in problems:
        assert f.impact.basis, (f.check, f.title)
        assert f.impact.basis in f.impact.line and f.impact.text.rstrip(".") in f.impact.line


def test_impact_basis_round_trips_and_is_optional() -> None:
    from doctor.findings import Finding, Impact

    f = Finding("high", "eth0", "t", impact=Impact(40, "one rail fewer", "a port that is down carries nothing"))
    assert Finding.from_dict(f.to_dict()).impact == f.impact
    old = f.to_dict()
    del old["impact"]["basis"]
    assert Finding.from_dict(old).impact == Impact(40, "one rail fewer")
    assert Impact(1, "t").line == "t" and Impact(1, "t.", "b").line == "t (basis: b)."


def test_a_file_write_reads_as_one_line_that_writes_exactly_the_content(tmp_path: Path) -> None:
    """A here-document step shown as text stays on one line (no newline for a terminal to neutralise) and,
    pasted into bash, writes exactly the builder's content."""
    import subprocess

    from doctor.findings import FixStep

    for i, content in enumerate(["# gnd\n[Service]\nUnsetEnvironment=NCCL_DEBUG\n", "a\nb", "x'y\n$(touch z)\n", "one\n"]):
        path = tmp_path / f"f{i}"
        text = FixStep("runtime", heredoc=(str(path), content)).text
        assert "\n" not in text
        subprocess.run(["bash", "-c", text], check=True, cwd=tmp_path)
        assert path.read_text() == content
    assert not (tmp_path / "z").exists()


def test_to_dict_is_the_field_by_field_json_form() -> None:
    """to_dict (hand-rolled for speed) gives exactly what dataclasses.asdict gave, key order included."""
    from dataclasses import asdict

    from doctor.findings import Evidence, Finding, Fix, Impact

    f = Finding(severity=CRITICAL, subject="GPU 3 (0000:3c:00.0)", title="t", detail="d",
                evidence=(Evidence("lspci", "LnkSta: 8GT/s x8"), Evidence("sysfs", "x")), expected="x16",
                observed="x8", impact=Impact(40, "one rail fewer", "measured"), fix=Fix.from_text("reseat"),
                references=("https://example.com",), related=("0000:39:02.0",), confidence=0.5,
                check="pcie.link", category="pcie", rank=2)
    old = {k: v for k, v in asdict(f).items() if k != "fix"}
    old |= {"severity": Severity.parse(CRITICAL).value, "evidence": [asdict(e) for e in f.evidence], "references": ["https://example.com"],
            "related": ["0000:39:02.0"], "fix": f.fix.to_dict()}
    assert f.to_dict() == old and list(f.to_dict()) == list(old)


@pytest.mark.parametrize("severity", ["info", "pass"])
def test_info_and_pass_findings_carry_no_fix_steps(severity: str) -> None:
    """"This setting is fine" never comes with a FIX NOW block (a restart, a reset), however built or loaded."""
    fix = make("link_up", "a note", netdev="eth0")
    assert fix.steps
    f = Finding(severity, "eth0", "fine", fix=fix)
    assert f.fix.steps == () and f.fix.notes == "a note"
    back = Finding.from_dict({**Finding("high", "eth0", "x", fix=fix).to_dict(), "severity": severity})
    assert back.fix.steps == ()
