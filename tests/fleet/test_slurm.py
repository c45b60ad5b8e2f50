"""contrib/slurm/gnd-healthcheck.sh with stub gnd and scontrol on PATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "contrib" / "slurm" / "gnd-healthcheck.sh"
PROLOG = SCRIPT.with_name("gnd-prolog.sh")

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

RESULT = {"schema_version": "1.0", "findings": [
    {"rank": 1, "severity": "high", "check": "pcie.link_downgrade", "subject": "GPU 3 (0000:3c:00.0)",
     "title": "GPU link runs at x8 of x16"},
    {"rank": 2, "severity": "medium", "check": "net.socket_buffers", "subject": "node", "title": "small buffers"},
    {"rank": 3, "severity": "pass", "check": "net.link", "subject": "node", "title": "ok"}]}


def _run(tmp_path: Path, result: dict[str, object], severity: str, show_node: str = "",
         script: Path = SCRIPT, **settings: str) -> tuple[int, list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "result.json").write_text(json.dumps(result))
    log = tmp_path / "scontrol.log"
    log.write_text("")
    (bin_dir / "gnd").write_text(f'#!/bin/sh\necho "$@" > {tmp_path / "gnd.args"}\n'
                                 f'cat {tmp_path / "result.json"}\nexit 1\n')
    (bin_dir / "scontrol").write_text(
        f'#!/bin/sh\nif [ "$1" = show ]; then printf "%s\\n" "{show_node}"; exit 0; fi\n'
        f'for a in "$@"; do printf "%s\\n" "$a"; done >> {log}\necho --- >> {log}\n')
    for f in ("gnd", "scontrol"):
        (bin_dir / f).chmod(0o755)
    (bin_dir / "python3").symlink_to(sys.executable) if not (bin_dir / "python3").exists() else None
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}", "GND_SEVERITY": severity,
           "GND_NODE": "gpu-node-07", "TMPDIR": str(tmp_path),
           "GND_HEALTHCHECK_CONF": "/dev/null", **settings}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False)
    calls = [c.strip("\n").splitlines() for c in log.read_text().split("---") if c.strip()]
    return proc.returncode, [" | ".join(c) for c in calls]


def test_drains_with_the_top_finding_at_or_above_severity(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, RESULT, "medium")
    assert rc == 1
    assert calls == ["update | NodeName=gpu-node-07 | State=DRAIN | Reason=gnd: high pcie.link_downgrade "
                     "GPU 3 (0000:3c:00.0): GPU link runs at x8 of x16 (+1 more)"]


def test_does_nothing_below_the_severity(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, RESULT, "critical")
    assert (rc, calls) == (0, [])


def test_resumes_only_a_node_gnd_drained(tmp_path: Path) -> None:
    healthy = {"schema_version": "1.0", "findings": []}
    rc, calls = _run(tmp_path, healthy, "high", show_node="NodeName=gpu-node-07 State=IDLE+DRAIN Reason=gnd: old")
    assert (rc, calls) == (0, ["update | NodeName=gpu-node-07 | State=RESUME"])
    rc, calls = _run(tmp_path, healthy, "high", show_node="NodeName=gpu-node-07 State=DRAIN Reason=admin: RMA")
    assert (rc, calls) == (0, [])


def test_bad_severity_and_broken_gnd_leave_the_node_alone(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, RESULT, "urgent")
    assert (rc, calls) == (2, [])
    (tmp_path / "bin").mkdir(exist_ok=True)
    rc, calls = _run(tmp_path, {"findings": "x"}, "high")  # stub gnd output parses but is nonsense
    assert calls == [] and rc in (0, 2)


def test_an_administrators_drain_reason_is_kept_when_gnd_finds_a_problem(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, RESULT, "high", show_node="NodeName=gpu-node-07 State=IDLE+DRAIN Reason=admin: RMA")
    assert (rc, calls) == (1, [])
    rc, calls = _run(tmp_path, RESULT, "high", show_node="NodeName=gpu-node-07 State=IDLE+DRAIN Reason=gnd: old")
    assert rc == 1 and calls[0].endswith("Reason=gnd: high pcie.link_downgrade GPU 3 (0000:3c:00.0): "
                                          "GPU link runs at x8 of x16")


def test_a_run_the_deadline_cut_never_resumes(tmp_path: Path) -> None:
    cut = {"findings": [{"rank": 1, "severity": "unknown", "check": "doctor.deadline", "subject": "node",
                         "title": "dmesg: did not finish before the deadline"}]}
    rc, calls = _run(tmp_path, cut, "high", show_node="NodeName=gpu-node-07 State=IDLE+DRAIN Reason=gnd: old")
    assert (rc, calls) == (0, [])


def test_gnd_gets_a_deadline_inside_slurmds_60_seconds(tmp_path: Path) -> None:
    """slurmd kills a health check at 60 s: gnd is given 45 s by default, a setting above 50 is refused."""
    _run(tmp_path, RESULT, "high", GND_SOURCE="/srv/snap.tar.gz")
    args = (tmp_path / "gnd.args").read_text().split()
    assert args[:2] == ["check", "/srv/snap.tar.gz"] and args[args.index("--deadline") + 1] == "45"
    assert 'timeout -s KILL "$((DEADLINE + 8))"' in SCRIPT.read_text()  # the backstop: 53 s at most
    for bad in ("55", "0", "soon"):
        rc, calls = _run(tmp_path, RESULT, "high", GND_DEADLINE=bad)
        assert (rc, calls) == (2, [])


CRITICAL = {"findings": [{"rank": 1, "severity": "critical", "check": "gpu.recovery", "subject": "GPU 1",
                          "title": "the driver asks for a GPU reset"}]}


def test_prolog_drains_on_a_gpu_fault_and_requeues_the_job(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, CRITICAL, "", script=PROLOG)
    assert rc == 1 and calls == ["update | NodeName=gpu-node-07 | State=DRAIN | "
                                 "Reason=gnd: critical gpu.recovery GPU 1: the driver asks for a GPU reset"]
    args = (tmp_path / "gnd.args").read_text().split()
    assert args[args.index("--deadline") + 1] == "20" and args[args.index("--only") + 1].startswith("gpu.recovery")
    rc, calls = _run(tmp_path, RESULT, "", script=PROLOG)  # a high PCIe finding does not hold jobs back
    assert (rc, calls) == (0, [])


def test_epilog_drains_but_never_fails_the_finished_job(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, CRITICAL, "", script=PROLOG, SLURM_SCRIPT_CONTEXT="epilog_slurmd")
    assert rc == 0 and len(calls) == 1 and "State=DRAIN" in calls[0]
