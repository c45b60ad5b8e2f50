"""Fixes bound to the host: every builder parameter declares the fact it must come from, and a value that
fact does not hold is refused, whoever chose it (an edited result, a plugin check). A script made from a
saved result is for review only."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from doctor.facts import Facts
from doctor.fixes.base import SPECS, Context, Fact, FixRejected, build, load_builders
from doctor.result_io import to_result
from doctor.runner import Result
from reports.fixscript import fix_scripts
from tests.helpers import SICK, facts, run

BASH = shutil.which("bash") or "bash"
ACTION = re.compile(r"^(run|look|put) ", re.MULTILINE)
APISERVER = "etc/kubernetes/manifests/kube-apiserver.yaml"
APISERVER_TEXT = """apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
spec:
  containers:
    - name: kube-apiserver
      command:
        - kube-apiserver
        - --enable-admission-plugins=NodeRestriction
        - --authorization-mode=Node,RBAC
"""
COMPOSE = "etc/compose/llm.yaml"
COMPOSE_TEXT = """services:
  vllm:
    command: ["--model", "m", "--enforce-eager"]
    environment:
      - HF_TOKEN=hf_kept_out_of_every_patch
      - CUDA_LAUNCH_BLOCKING=1
      - OMP_NUM_THREADS=1
"""


@pytest.fixture(scope="module")
def host() -> Facts:
    """The sick node with a kube-apiserver manifest and a compose file among its deployment files."""
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    return facts({APISERVER: APISERVER_TEXT, COMPOSE: COMPOSE_TEXT}, base=SICK)


@pytest.fixture(scope="module")
def data(host: Facts) -> dict[str, Any]:
    return run(host).to_dict()


def _edit(data: dict[str, Any], check: str, builder: str, params: dict[str, Any]) -> Result:
    data = copy.deepcopy(data)
    f = next(x for x in data["findings"] if x["check"] == check)
    f["fix"].update(builder=builder, params=params)
    return to_result(data)


def _section(script: str, check: str) -> str:
    return script.split(f"{check}:", 1)[1].split("# ----", 1)[0]


def _refused(data: dict[str, Any], host: Facts, check: str, builder: str, params: dict[str, Any]) -> str:
    """The refusal a fix script built on ``host`` gives an edited fix; nothing of it runs."""
    scripts = fix_scripts(_edit(data, check, builder, params), host)
    section = _section(scripts.fix, check)
    assert not ACTION.search(section), section
    m = re.search(r"^# refused, nothing run: (.*)$", section, re.MULTILINE)
    assert m, section
    return m.group(1)


# --- deployment files: only the ones the checks read, only their own lines, only judged settings ---------

@pytest.mark.parametrize("params", [
    # the kube-apiserver manifest is a deployment file of this host, but no check judges that flag
    {"path": "/" + APISERVER, "kind": "manifest", "start": 9, "old": ["        - --enable-admission-plugins=NodeRestriction"],
     "drop": ""},
    {"path": "/" + APISERVER, "kind": "manifest", "start": 9,
     "old": ["        - --enable-admission-plugins=NodeRestriction"], "drop": "--enable-admission-plugins=NodeRestriction"},
    # a judged flag, but lines that are not the file's own at that line
    {"path": "/" + APISERVER, "kind": "manifest", "start": 1, "old": ["        - --enforce-eager"], "drop": ""},
    # a YAML file the checks never read
    {"path": "/srv/any/thing.yaml", "kind": "other", "start": 1, "old": ["- --enforce-eager"], "drop": ""},
    {"path": "/etc/kubernetes/manifests/etcd.yaml", "kind": "manifest", "start": 1, "old": ["- --enforce-eager"],
     "drop": ""},
])
def test_patches_touch_only_judged_lines_of_deployment_files_the_host_has(data: dict[str, Any], host: Facts,
                                                                          params: dict[str, Any]) -> None:
    why = _refused(data, host, "runtime.cuda_graphs", "file_patch", params)
    assert re.search(r"is not (a deployment file|lines of that file|a command-line flag the check judges)", why), why


def test_the_check_s_own_patch_carries_only_the_lines_it_changes(data: dict[str, Any], host: Facts) -> None:
    scripts = fix_scripts(to_result(data), host)
    patches = re.findall(r"^put '[^\n]*' (/etc/compose/llm\.yaml\.gnd\.patch) '(.*?)'$", scripts.fix,
                         re.MULTILINE | re.DOTALL)
    assert patches, "the compose file's CUDA_LAUNCH_BLOCKING and --enforce-eager fixes are patches"
    for _, body in patches:
        changed = [line for line in body.splitlines()[3:]]
        assert changed and all(line[:1] in "-+" for line in changed), body  # no context line
        assert "hf_kept_out_of_every_patch" not in body and "OMP_NUM_THREADS" not in body


# --- variables: only the ones the check judges -------------------------------------------------------

@pytest.mark.parametrize("name", ["CUDA_INJECTION64_PATH", "NCCL_NET_PLUGIN", "CUDA_VISIBLE_DEVICES",
                                  "TORCH_EXTENSIONS_DIR", "VLLM_PLUGINS", "UCX_TLS"])
@pytest.mark.parametrize("check", ["runtime.debug_env", "rdma.gid_index", "nccl.transport"])
def test_drop_ins_set_or_unset_only_variables_the_check_judges(data: dict[str, Any], host: Facts, check: str,
                                                               name: str) -> None:
    for params in ({"unit": "vllm.service", "what": "x", "unset": [], "set": {name: "/tmp/libevil.so"}},
                   {"unit": "vllm.service", "what": "x", "unset": [name], "set": {}}):
        why = _refused(data, host, check, "unit_env", params)
        assert "is not an environment variable the check judges" in why, why


def test_units_are_the_host_s_own(data: dict[str, Any], host: Facts) -> None:
    why = _refused(data, host, "runtime.debug_env", "unit_env",
                   {"unit": "sshd.service", "what": "x", "unset": ["CUDA_LAUNCH_BLOCKING"], "set": {}})
    assert "is not a systemd unit whose file the checks read on this host" in why
    why = _refused(data, host, "runtime.cuda_graphs", "unit_flag",
                   {"unit": "kubelet.service", "path": "/etc/systemd/system/kubelet.service", "flag": "--enforce-eager"})
    assert "is not a systemd unit" in why


# --- interfaces and values: the host's own inventory, physical ranges ----------------------------------

def test_mtu_on_an_interface_the_edited_result_added(data: dict[str, Any], host: Facts) -> None:
    """The result's inventory gains an interface and the fix sets MTU 68 on it: the host has no such
    interface, and 68 is below any MTU a fix sets, even on an interface the host has."""
    edited = copy.deepcopy(data)
    edited["inventory"]["nics"][0]["netdevs"].append("evil0")
    why = _refused(edited, host, "net.link", "link_mtu", {"netdev": "evil0", "mtu": 68, "previous": 1500})
    assert "'evil0' is not an interface of this host" in why
    nic = next(n.name for n in host.netdevs if n.mtu)
    for mtu in (68, 576, 1279, 9217, 65535):
        why = _refused(data, host, "net.link", "link_mtu", {"netdev": nic, "mtu": mtu, "previous": 1500})
        assert "mtu:" in why or "previous:" in why, why


@pytest.mark.parametrize("builder,params,fact", [
    ("irq_affinity", {"netdev": "enp27s0np0", "node": 0, "cpus": "0-47", "irqs": {"9999": ""}, "irqbalance": False},
     Fact.IRQS_NOW),
    ("gpu_query", {"index": 77, "query": "pcie"}, Fact.GPU_INDEX),
    ("taskset", {"pid": 31337, "cpus": "0-3", "previous": "0-95"}, Fact.PID),
    ("inspect_pci", {"address": "0000:ee:00.0", "flags": "-vvv"}, Fact.PCI),
    ("rdma_show", {"device": "mlx5_99", "port": 1}, Fact.RDMA),
])
def test_every_bound_fact_refuses_a_value_the_host_lacks(host: Facts, builder: str, params: dict[str, Any],
                                                         fact: Any) -> None:
    with pytest.raises(FixRejected, match=re.escape(fact.what)):
        build(builder, params, ctx=Context.from_facts(host))


def test_every_builder_declares_every_parameter_it_reads() -> None:
    """A builder reading a parameter it did not declare is refused (so every parameter has a declared
    fact or is declared shape-only), and each declared fact is one of :class:`Fact`."""
    facts_known = {v for k, v in vars(Fact).items() if k.isupper()}
    assert set(SPECS) == set(load_builders())
    for spec in SPECS.values():
        assert all(p.from_ is None or p.from_ in facts_known for p in spec.values())
        assert all(p.each in ("value", "items", "keys") for p in spec.values())
    with pytest.raises(FixRejected, match="unexpected parameter 'before'"):
        build("file_patch", {"path": "/etc/compose/x.yaml", "kind": "compose", "start": 1, "before": ["a"],
                             "old": ["- NCCL_DEBUG=INFO"], "drop": ""})


# --- a saved result: for review only ---------------------------------------------------------------------

def test_a_script_from_a_saved_result_runs_nothing_and_refuses_apply(data: dict[str, Any], tmp_path: Path) -> None:
    scripts = fix_scripts(to_result(data))
    assert not ACTION.search(scripts.fix) and not ACTION.search(scripts.rollback)
    assert "# would run (review only): sysctl -w kernel.numa_balancing=0" in scripts.fix
    for name, text in (("fix.sh", scripts.fix), ("back.sh", scripts.rollback)):
        path = tmp_path / name
        path.write_text(text)
        out = subprocess.run([BASH, str(path), "--apply"], capture_output=True, text=True)
        assert out.returncode == 2 and out.stdout == ""
        assert out.stderr.count("\n") == 1 and "for review only" in out.stderr
        assert subprocess.run([BASH, str(path)], capture_output=True, text=True).returncode == 0


def test_gnd_fix_script_from_json_says_review_only_and_exits_0(data: dict[str, Any], tmp_path: Path) -> None:
    import json

    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-m", "doctor", "fix-script", "--from-json", str(saved), "-o",
                          str(tmp_path / "fix.sh")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "for review only" in out.stderr
    assert not ACTION.search((tmp_path / "fix.sh").read_text())


# --- the fix script on the host ------------------------------------------------------------------------

def _fake_root(tmp_path: Path, host: Facts) -> dict[str, str]:
    """PATH where ``id`` says root and ``hostname`` the fixture's host; the diagnostics are stubs that fail."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("id", "echo 0"), ("hostname", "echo gpu-node-13"), ("ethtool", "exit 71"),
                       ("nvidia-smi", "exit 9"), ("rdma", "exit 3"), ("sysctl", "exit 0"), ("lsmod", "exit 0")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "GND_BACKUP_DIR": str(tmp_path / "bk"), "HOME": str(tmp_path)}


def test_dry_run_lists_what_is_left_by_hand(data: dict[str, Any], host: Facts, tmp_path: Path) -> None:
    path = tmp_path / "fix.sh"
    path.write_text(fix_scripts(to_result(data), host).fix)
    out = subprocess.run([BASH, str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    left = out.stdout.split("Left to do by hand", 1)[1]
    assert "systemctl daemon-reload" in left and "systemctl restart vllm.service" in left


def test_a_failed_diagnostic_does_not_stop_the_script(data: dict[str, Any], host: Facts, tmp_path: Path) -> None:
    script = fix_scripts(to_result(data), host).fix
    script = re.sub(r"^EXPECT_MACHINE_ID=.*$", "EXPECT_MACHINE_ID=\"$(cat /etc/machine-id 2>/dev/null || true)\"",
                    script, flags=re.MULTILINE)
    script = re.sub(r"^put .*?'$", ": put", script, flags=re.MULTILINE | re.DOTALL)  # change nothing here:
    script = re.sub(r"^run ", ": run ", script, flags=re.MULTILINE)  # only the diagnostics (look) run
    path = tmp_path / "fix.sh"
    path.write_text(script)
    if not os.path.exists("/etc/machine-id") or not Path("/etc/machine-id").read_text().strip():
        pytest.skip("no /etc/machine-id on this machine")
    out = subprocess.run([BASH, str(path), "--apply"], capture_output=True, text=True, env=_fake_root(tmp_path, host))
    assert "diagnostic failed with exit 71; going on" in out.stderr, out.stderr
    assert out.returncode == 0, out.stderr
    assert "done: applied" in out.stdout and "Left to do by hand" in out.stdout


def test_relative_deploy_paths_name_the_file_in_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text(COMPOSE_TEXT)
    out = subprocess.run([sys.executable, "-m", "doctor", "fix-script", str(SICK), "--deploy", "compose.yaml",
                          "-o", "fix.sh"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr  # written: exit 0 even though the node has findings
    script = (tmp_path / "fix.sh").read_text()
    assert f"{tmp_path}/compose.yaml" in script
    assert " /compose.yaml" not in script and "'/compose.yaml" not in script


# --- a copy of a host (snapshot, sosreport, bug report): for review only, like a saved result ------------

def _copies(tmp_path: Path) -> dict[str, Path]:
    """The sick node as each kind of copy ``gnd`` reads: a snapshot folder and tarball, a sosreport, a bug report."""
    import gzip
    import tarfile

    snap = tmp_path / "snap"
    shutil.copytree(SICK, snap, symlinks=True)
    tarball = tmp_path / "node.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(snap, arcname="node")
    sos = tmp_path / "sosreport-node"
    shutil.copytree(SICK, sos, symlinks=True)
    (sos / "sos_commands/kernel").mkdir(parents=True)
    (sos / "sos_commands/kernel/sysctl_-a").write_text("kernel.numa_balancing = 1\n")
    sep = "_" * 80 + "\n\n"
    log = (f"{sep}Start of NVIDIA bug report log file.\n\nnvidia-bug-report.sh Version: 35398123\n\n"
           "Date: Thu Aug 25 20:30:39 UTC 2025\nuname: Linux gpu-node-13 6.8.0 #45 SMP x86_64 GNU/Linux\n\n"
           f"{sep}*** /proc/cmdline\n*** ls: -r--r--r-- 1 root root 0 2025-08-25 /proc/cmdline\n"
           "BOOT_IMAGE=/vmlinuz ro\n\n"
           f"{sep}End of NVIDIA bug report log file.\n")
    bug = tmp_path / "nvidia-bug-report.log.gz"
    bug.write_bytes(gzip.compress(log.encode()))
    return {"snapshot folder": snap, "snapshot tarball": tarball, "sosreport": sos, "bug report": bug}


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    return _copies(tmp_path_factory.mktemp("copies"))


@pytest.mark.parametrize("kind,made_from", [("snapshot folder", "a snapshot"), ("snapshot tarball", "a snapshot"),
                                            ("sosreport", "a sosreport"), ("bug report", "an nvidia-bug-report log")])
def test_a_script_made_from_a_copy_of_a_host_runs_nothing_and_refuses_apply(
        copies: dict[str, Path], kind: str, made_from: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    from doctor import cli

    fix, back = tmp_path / "fix.sh", tmp_path / "fix.rollback.sh"
    assert cli.main(["fix-script", str(copies[kind]), "-o", str(fix)]) == 0
    assert "for review only" in capsys.readouterr().err
    script = fix.read_text()
    assert not ACTION.search(script) and not ACTION.search(back.read_text()), script
    assert "REVIEW_ONLY=1" in script and f"made from {made_from}" in script
    assert "run `gnd fix-script` on the host itself" in script
    if kind != "bug report":  # the sick node's own fixes are there to read, each a comment
        assert "# would run (review only): sysctl -w kernel.numa_balancing=0" in script
    for path in (fix, back):
        out = subprocess.run([BASH, str(path), "--apply"], capture_output=True, text=True)
        assert out.returncode == 2 and out.stdout == "", out
        assert out.stderr.count("\n") == 1 and f"made from {made_from}" in out.stderr
        assert "for review only" in out.stderr and "run gnd fix-script on that host" in out.stderr
        assert subprocess.run([BASH, str(path)], capture_output=True, text=True).returncode == 0


def test_the_same_files_handed_over_as_the_host_s_root_give_a_runnable_script() -> None:
    """What makes a script runnable is whose facts they are, not what they say: the sick tree read as a
    host root (``gnd collect --root``, the tests' fixtures) runs its steps; the same tree as a snapshot does not."""
    from doctor.pipeline import analyse_facts
    from doctor.sources import LiveSource, open_source

    result, own = analyse_facts(LiveSource(str(SICK), run_commands=False))
    runnable = fix_scripts(result, own)
    assert not runnable.review and "REVIEW_ONLY=0" in runnable.fix
    assert re.search(r"^run 'sysctl -w kernel.numa_balancing=0' -- sysctl -w kernel.numa_balancing=0$", runnable.fix,
                     re.MULTILINE), runnable.fix
    result, copy_facts = analyse_facts(open_source(str(SICK)))
    review = fix_scripts(result, copy_facts)
    assert review.review and not ACTION.search(review.fix)


# --- values the host has now: a CPU list, a NUMA node, what a rollback restores -------------------------

IRQ_FIX = {"netdev": "enp27s0np0", "node": 0, "cpus": "0-47", "irqs": {"217": "56", "218": "57"}, "irqbalance": True}


@pytest.mark.parametrize("change,why", [
    ({"cpus": "0"}, "cpus: '0' is not the CPU list of that NUMA node"),  # every vector onto CPU 0
    ({"cpus": "0-95"}, "is not the CPU list of that NUMA node"),
    ({"node": 1, "cpus": "48-95"}, "node: 1 is not the NUMA node of that interface"),  # the other socket's CPUs
    ({"irqs": {"217": "0", "218": "57"}}, "is not IRQs of this host, each with its affinity now"),  # rollback to CPU 0
    ({"irqs": {"217": "", "218": "57"}}, "is not IRQs of this host, each with its affinity now"),
])
def test_irq_affinity_sets_the_nic_s_own_node_and_restores_what_is_there(data: dict[str, Any], host: Facts,
                                                                         change: dict[str, Any], why: str) -> None:
    """An edited result cannot choose which CPUs serve a NIC's interrupts, nor what a rollback writes back:
    the node is the NIC's, the CPU list that node's, each restored affinity the IRQ's own now."""
    assert why in _refused(data, host, "numa.irq_affinity", "irq_affinity", {**IRQ_FIX, **change})


def test_the_irq_fix_the_check_made_still_runs(data: dict[str, Any], host: Facts) -> None:
    section = _section(fix_scripts(to_result(data), host).fix, "numa.irq_affinity")
    assert "put 'echo 0-47 > /proc/irq/217/smp_affinity_list' /proc/irq/217/smp_affinity_list 0-47" in section, section


@pytest.mark.parametrize("previous", [{"kernel.numa_balancing": "0"}, {"kernel.numa_balancing": " 2 "}])
def test_a_sysctl_rollback_restores_only_the_host_s_value_now(data: dict[str, Any], host: Facts,
                                                              previous: dict[str, str]) -> None:
    why = _refused(data, host, "numa.kernel_policy", "sysctl", {"set": {"kernel.numa_balancing": "0"},
                                                                "previous": previous, "conf": "90-gnd-numa-balancing.conf"})
    assert "is not this host's value of each sysctl it sets, now" in why, why


def test_a_sysctl_fix_cannot_drop_its_rollback(data: dict[str, Any], host: Facts) -> None:
    why = _refused(data, host, "numa.kernel_policy", "sysctl", {"set": {"kernel.numa_balancing": "0"}, "previous": {},
                                                                "conf": "90-gnd-numa-balancing.conf"})
    assert "is not this host's value of each sysctl it sets, now" in why, why


def test_a_patch_deletes_a_whole_line_only_when_every_setting_on_it_is_judged(data: dict[str, Any], host: Facts) -> None:
    """Deleting the line that holds a judged flag would take the other flags on it along (``--model m``)."""
    line = '    command: ["--model", "m", "--enforce-eager"]'
    why = _refused(data, host, "runtime.cuda_graphs", "file_patch",
                   {"path": "/" + COMPOSE, "kind": "compose", "start": 3, "old": [line], "drop": ""})
    assert "is not lines of that file" in why, why


@pytest.mark.parametrize("nic,previous", [
    ("enp59s0np0", {"roce_np": 1}), ("enp59s0np0", {"roce_np": 0, "roce_rp": 1}), ("enp59s0np0", {"roce_xx": 0}),
    # DCQCN is on there: a rollback writing 0 would switch it off on a healthy NIC
    ("enp155s0np0", {"roce_np": 0, "roce_rp": 0}),
])
def test_an_ecn_rollback_restores_only_the_switches_as_they_are(host: Facts, nic: str, previous: dict[str, int]) -> None:
    ctx = Context.from_facts(host)
    assert build("roce_ecn", {"netdev": "enp59s0np0", "priority": 3, "previous": {"roce_np": 0, "roce_rp": 0}},
                 ctx=ctx).steps  # the switches as they are: the fix builds
    with pytest.raises(FixRejected, match=re.escape(Fact.ECN_NOW.what)):
        build("roce_ecn", {"netdev": nic, "priority": 3, "previous": previous}, ctx=ctx)


# --- values a fix sets: what the check itself recommends on this host's facts -----------------------------

@pytest.mark.parametrize("check,conf,key,value", [
    ("numa.kernel_policy", "90-gnd-numa-balancing.conf", "kernel.numa_balancing", "1"),  # back to the bad value
    ("net.tcp_tuning", "90-gnd-tcp-backlog.conf", "net.core.netdev_max_backlog", "1000"),  # the value now
    ("net.tcp_tuning", "90-gnd-tcp-backlog.conf", "net.core.netdev_max_backlog", "1001"),  # one the check flags
    ("net.tcp_tuning", "90-gnd-tcp-backlog.conf", "net.core.netdev_max_backlog", "2147483647"),
])
def test_a_sysctl_fix_sets_only_the_value_the_check_recommends_here(data: dict[str, Any], host: Facts, check: str,
                                                                    conf: str, key: str, value: str) -> None:
    now = Context.from_facts(host).sysctl_now or {}
    why = _refused(data, host, check, "sysctl", {"set": {key: value}, "previous": {key: now[key]}, "conf": conf})
    assert Fact.SYSCTLS_WANTED.what in why, why


def test_the_sysctl_fixes_the_checks_made_still_run(data: dict[str, Any], host: Facts) -> None:
    script = fix_scripts(to_result(data), host).fix
    assert "run 'sysctl -w kernel.numa_balancing=0'" in _section(script, "numa.kernel_policy")
    assert "run 'sysctl -w net.core.rmem_max=134217728'" in _section(script, "net.socket_buffers")


def test_dcqcn_goes_on_only_for_the_priority_the_check_chose(data: dict[str, Any], host: Facts) -> None:
    """DCQCN is off on every priority of enp59s0np0; the check switches it on for NCCL's (0), an edited
    result cannot pick another one."""
    honest = _section(fix_scripts(to_result(data), host).fix, "rdma.lossless")
    assert "/sys/class/net/enp59s0np0/ecn/roce_np/enable/0" in honest and ACTION.search(honest), honest
    why = _refused(data, host, "rdma.lossless", "roce_ecn",
                   {"netdev": "enp59s0np0", "priority": 3, "previous": {"roce_np": 0, "roce_rp": 0}})
    assert Fact.ECN_PRIORITY.what in why, why


@pytest.mark.parametrize("what", ["nccl-ib-gid-index", "zz-override", "cuda"])
def test_a_drop_in_is_named_after_the_variable_it_changes(data: dict[str, Any], host: Facts, what: str) -> None:
    honest = _section(fix_scripts(to_result(data), host).fix, "runtime.debug_env")
    assert "90-gnd-cuda-launch-blocking.conf" in honest and ACTION.search(honest), honest
    why = _refused(data, host, "runtime.debug_env", "unit_env",
                   {"unit": "vllm.service", "what": what, "unset": ["CUDA_LAUNCH_BLOCKING"], "set": {}})
    assert Fact.DROPIN_NAME.what in why, why


@pytest.mark.parametrize("check,builder,params", [
    ("net.drops", "rdma_counters_show", {"device": "mlx5_4", "port": 2, "netdev": "enp155s0np0"}),
    ("net.drops", "rdma_counters_show", {"device": "mlx5_4", "port": 0, "netdev": "enp155s0np0"}),
    ("rdma.port_state", "rdma_port", {"device": "mlx5_7", "port": 7, "address": "0000:bd:00.0",
                                      "netdevs": ["enp189s0np0"]}),
])
def test_diagnostics_read_only_ports_the_device_has(data: dict[str, Any], host: Facts, check: str, builder: str,
                                                   params: dict[str, Any]) -> None:
    assert Fact.RDMA_PORT.what in _refused(data, host, check, builder, params)
    assert "# refused" not in _section(fix_scripts(to_result(data), host).fix, check)  # the check's own port builds
    ctx = Context.from_facts(host)
    assert build("rdma_show", {"device": "mlx5_4", "port": 1}, ctx=ctx).steps
    with pytest.raises(FixRejected, match=re.escape(Fact.RDMA_PORT.what)):
        build("rdma_show", {"device": "mlx5_4", "port": 255}, ctx=ctx)


# --- rollback targets: the host's values now ---------------------------------------------------------------

GPU0 = "0000:18:00.0"


@pytest.mark.parametrize("builder,honest,edits,fact", [
    ("gpu_power_limit", {"gpu": GPU0, "watts": 700, "previous": 700}, [{"previous": 100}, {"previous": 699}],
     Fact.POWER_NOW),
    ("gpu_app_clocks", {"gpu": GPU0, "memory": 2619, "graphics": 1980}, [{"memory": 405}], Fact.MEM_CLOCK_NOW),
    ("gpu_app_clocks", {"gpu": GPU0, "memory": 2619, "graphics": 1980}, [{"graphics": 210}], Fact.GFX_CLOCK_NOW),
])
def test_gpu_rollbacks_restore_the_gpu_s_values_now(host: Facts, builder: str, honest: dict[str, Any],
                                                    edits: list[dict[str, Any]], fact: Any) -> None:
    ctx = Context.from_facts(host)
    assert build(builder, honest, ctx=ctx).steps
    for edit in edits:
        with pytest.raises(FixRejected, match=re.escape(fact.what)):
            build(builder, {**honest, **edit}, ctx=ctx)


def test_a_compute_mode_rollback_restores_the_gpu_s_mode_now(host: Facts) -> None:
    """Every GPU of the sick node is in Default: a rollback to Exclusive_Process or Prohibited (a GPU no
    process can use) is not the mode it has."""
    ctx = Context.from_facts(host)
    for mode in ("EXCLUSIVE_PROCESS", "PROHIBITED"):
        with pytest.raises(FixRejected, match=re.escape(Fact.COMPUTE_NOW.what)):
            build("compute_mode", {"index": 0, "previous": mode}, ctx=ctx)


@pytest.fixture(scope="module")
def slow_cpu() -> Facts:
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    return facts({"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
                  "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver": "acpi-cpufreq\n"}, base=SICK)


def test_a_governor_rollback_restores_the_governor_now(slow_cpu: Facts) -> None:
    data = run(slow_cpu).to_dict()
    honest = _section(fix_scripts(to_result(data), slow_cpu).fix, "cpu.governor")
    assert "cpupower frequency-set -g performance" in honest and ACTION.search(honest), honest
    for params in ({"governor": "userspace", "epp": None}, {"governor": "powersave", "epp": "power"}):
        why = _refused(data, slow_cpu, "cpu.governor", "cpu_governor", params)
        assert Fact.GOVERNOR_NOW.what in why or Fact.EPP_NOW.what in why, why
