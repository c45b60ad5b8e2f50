"""Fix script: valid bash, dry run by default, only safe runtime commands, quoted values stay inert."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reports.fixscript import classify, expand, fix_scripts
from tests.reports.conftest import EVIL

BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sick_scripts_parse_and_dry_run_changes_nothing(sick_data: dict[str, Any], tmp_path: Path) -> None:
    scripts = fix_scripts(sick_data)
    fix = _write(tmp_path, "fix.sh", scripts.fix)
    back = _write(tmp_path, "fix.rollback.sh", scripts.rollback)
    for p in (fix, back):
        subprocess.run([BASH, "-n", str(p)], check=True)
    assert scripts.fix.index("backup") < scripts.fix.index("run '")
    assert "set -euo pipefail" in scripts.fix
    out = subprocess.run([BASH, str(fix)], capture_output=True, text=True, check=True,
                         env={**os.environ, "GND_BACKUP_DIR": str(tmp_path / "bk")}).stdout
    assert "[dry-run] sysctl -w kernel.numa_balancing=0" in out
    assert "[dry-run] echo 0-47 > /proc/irq/217/smp_affinity_list" in out  # the IRQ loop, expanded
    assert not (tmp_path / "bk").exists()
    assert "nothing changed" in out
    # firmware/BIOS/grub steps are comments only
    for line in scripts.fix.splitlines():
        if "update-grub" in line or "setpci" in line:
            assert line.startswith("#"), line
    assert "run 'sysctl -w kernel.numa_balancing=1'" in scripts.rollback


def test_hostile_values_never_execute(hostile_data: dict[str, Any], tmp_path: Path) -> None:
    scripts = fix_scripts(hostile_data)
    fix = _write(tmp_path, "fix.sh", scripts.fix)
    subprocess.run([BASH, "-n", str(fix)], check=True)
    marker = Path("/tmp/gnd-pwned")
    if marker.exists():
        marker.unlink()
    out = subprocess.run([BASH, str(fix)], capture_output=True, text=True, check=True,
                         env={**os.environ, "GND_BACKUP_DIR": str(tmp_path / "bk")}).stdout
    assert not marker.exists()
    assert f"[dry-run] ip link set dev {EVIL!s}" not in out  # printed quoted, not raw
    assert "[dry-run] ip link set dev '<script>" in out


@pytest.mark.parametrize("command,kind", [
    ("sysctl -w net.core.rmem_max=1", "run"),
    ("sysctl -w 'net.ipv4.tcp_rmem=4096 87380 1'", "run"),
    ("echo 0-47 > /proc/irq/12/smp_affinity_list", "run"),
    ("echo 0-47 > /etc/passwd", "comment"),
    ("modprobe nvidia_peermem", "run"),
    ("systemctl enable --now nvidia-persistenced", "run"),
    ("systemctl restart vllm.service", "comment"),
    ("ethtool -G eth0 rx 8192", "run"),
    ("ip link set dev eth0 mtu 9000", "run"),
    ("ip link set dev $(reboot) up", "comment"),
    ("sysctl -w a=1; reboot", "comment"),
    ("sysctl -w a=`id`", "comment"),
    ("update-grub", "comment"),
    ("setpci -s 0000:99:00.0 ECAP_ACS+0x6.w=0000", "comment"),
    ("kubectl drain node", "comment"),
    ("sysctl -a > /var/tmp/gnd-sysctl-backup.conf 2>/dev/null", "skip"),
])
def test_classify(command: str, kind: str) -> None:
    assert classify(command) == kind


def test_rollback_allows_undo_only_there() -> None:
    assert classify("rm -f /etc/sysctl.d/90-gnd-numa.conf") == "comment"
    assert classify("rm -f /etc/sysctl.d/90-gnd-numa.conf", rollback=True) == "run"
    assert classify("rm -f /etc/sysctl.d/../passwd", rollback=True) == "comment"


def test_irq_loop_expands_only_exact_shape() -> None:
    assert expand("for irq in 1 2; do echo 0-3 > /proc/irq/$irq/smp_affinity_list; done") == [
        "echo 0-3 > /proc/irq/1/smp_affinity_list", "echo 0-3 > /proc/irq/2/smp_affinity_list"]
    odd = "for irq in 1 2; do rm -rf /; done"
    assert expand(odd) == [odd] and classify(odd) == "comment"
