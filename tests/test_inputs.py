"""Unknown, never pass: each input a check declares, removed or truncated, leaves that check not ``pass``."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.facts.baseline import Baseline
from doctor.inputs import INPUTS, problems
from doctor.registry import load_checks
from tests.helpers import SICK, facts, run

BIG = b"x" * ((1 << 20) + 10)  # over the 1 MiB cap of process and deployment files
HUGE = b"x" * ((16 << 20) + 1)  # over the 16 MiB cap of any file
LINE = b"0" * ((1 << 16) + 1)  # over the 64 KiB cap of a sysfs/proc attribute
GPU_DIR = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0"
IB_DIR = "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/infiniband/mlx5_0"
#: per input: overlay changes on the sick fixture that take it away ...
#: (``None``: absence is a state the checks judge, not a missing input: a node without deployment files)
REMOVED: dict[str, dict[str, bytes | str | None] | None] = {
    "pci": {"sys/bus/pci/devices": None, "commands/lspci_-vvv": None, "sys/devices": None},
    "pci.aer": {},  # the generated trees expose no AER counters: already missing on this bare-metal node
    "gpus": {"commands/nvidia-smi_-q_-x": None},
    "kernel_log": {},  # the committed fixtures record no dmesg: already missing
    "processes": {f"proc/{p}": None for p in (1, 1873, 2314, 4242, 4318, 4327, 4336, 4345, 4354, 4363, 4372, 4381)},
    "process_env": {"proc/4242/environ": None},
    "deploy_files": None,
    "sysctls": {"proc/sys": None, "etc/sysctl.d": None, "etc/sysctl.conf": None},
    "numa": {"sys/devices/system/node": None},
    "cmdline": {"proc/cmdline": None},
    "irqs": {"proc/interrupts": None},
    "rdma_counters": {f"{IB_DIR}/ports/1/counters": None},
    "watch": None,  # a snapshot without samples runs no watch.* check: nothing to take away
    "process_limits": {"proc/4242/limits": None},
    "netdevs": {"sys/class/net": None},
    "rdma": {"sys/class/infiniband": None, "commands/ibv_devinfo_-v": None},  # mlx5 NICs and mlx5_ib stay
    "routes": {"proc/net/route": None},
    "modules": {"proc/modules": None},
    "cpufreq": {"sys/devices/system/cpu": None},
    "thp": {"sys/kernel/mm": None},
    "hugepages": {"proc/meminfo": None},
    "kubelet": None,  # a node without Kubernetes has no kubelet configuration: a state the check judges
}
#: ... and that leave it there but over its read cap (truncated, not read whole)
CAPPED: dict[str, dict[str, bytes | str | None]] = {
    "pci": {f"{GPU_DIR}/config": b"\0" * 8192, "commands/lspci_-vvv": HUGE},
    "pci.aer": {f"{GPU_DIR}/aer_dev_fatal": LINE + b"\n"},
    "gpus": {"commands/nvidia-smi_-q_-x": HUGE},
    "kernel_log": {"commands/dmesg": HUGE},
    "processes": {"proc/4242/cmdline": BIG},
    "process_env": {"proc/4242/environ": BIG},
    "deploy_files": {"etc/systemd/system/vllm.service": BIG},
    "sysctls": {"proc/sys/net/core/rmem_max": LINE},
    "numa": {"sys/devices/system/node/node1/cpulist": LINE},
    "cmdline": {"proc/cmdline": LINE},
    "irqs": {"proc/interrupts": HUGE},
    "rdma_counters": {f"{IB_DIR}/ports/1/counters/symbol_error": LINE},
    "watch": {"gnd/watch.json": b"{" + b" " * (5 << 20) + b"}"},  # over the record's 4 MiB cap
    "process_limits": {"proc/4242/limits": LINE},  # over the 16 KiB cap of a limits file
    "netdevs": {"sys/class/net/enp25s0np0/operstate": LINE},
    "rdma": {f"{IB_DIR}/ports/1/state": LINE},
    "routes": {"proc/net/route": BIG},
    "modules": {"proc/modules": BIG},
    "cpufreq": {"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": LINE},
    "thp": {"sys/kernel/mm/transparent_hugepage/defrag": LINE},
    "hugepages": {"proc/meminfo": LINE},
    "kubelet": {"var/lib/kubelet/config.yaml": BIG},
}
CHECKS, _ = load_checks()
CASES = [(c.id, need, how) for c in CHECKS for need in c.needs for how in ("removed", "capped")
         if how == "capped" or REMOVED[need] is not None]


def test_every_input_has_a_way_to_take_it_away_and_to_cap_it_here() -> None:
    assert sorted(REMOVED) == sorted(INPUTS) == sorted(CAPPED)
    assert len(CASES) >= 60  # the built-in checks declare what they rest on


def test_every_check_declares_the_inputs_its_verdict_rests_on() -> None:
    """No check is judged on silence: each names at least one input, so a missing one is the runner's unknown."""
    undeclared = sorted(c.id for c in CHECKS if c.plugin == "builtin" and not c.needs)
    assert not undeclared, f"checks without needs=: {undeclared}"


def _facts_for(check_id: str, changes: dict[str, bytes | str | None]) -> Facts:
    """The sick fixture with ``changes``; a check that requires the baseline gets one of the whole fixture."""
    f = facts(changes, base=SICK)
    if next(c for c in CHECKS if c.id == check_id).requires != "baseline":
        return f
    return Facts(f.source, baseline=_sick_baseline())


@functools.cache
def _sick_baseline() -> Baseline:
    import tempfile

    from doctor.facts.baseline import load_baseline
    from doctor.fleet.baseline import write_baseline

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "expected.toml"
        path.write_text(write_baseline(facts(base=SICK), "sick"))
        return load_baseline(str(path))


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize("need", sorted(INPUTS))
def test_each_input_notices_its_removal_and_its_cap(need: str) -> None:
    """Whether or not a check declares it today: the next check that does can rely on it."""
    for how, changes in (("removed", REMOVED[need]), ("capped", CAPPED[need])):
        if changes is not None:
            assert problems(facts(changes, base=SICK), [need]), f"{need} {how} went unnoticed"


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize(("check_id", "need", "how"), CASES, ids=[f"{c}-{n}-{h}" for c, n, h in CASES])
def test_a_check_whose_input_is_missing_or_truncated_is_not_pass(check_id: str, need: str, how: str) -> None:
    f = _facts_for(check_id, (REMOVED if how == "removed" else CAPPED)[need] or {})
    assert problems(f, [need]), f"{need} {how} went unnoticed"
    result = run(f, only=[check_id])
    status = next(c["status"] for c in result.checks if c["id"] == check_id)
    assert status not in ("pass", "not_applicable"), (check_id, need, how, status)
    assert not [x for x in result.findings if x.check == check_id and x.severity == "pass"]


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
def test_the_unknown_names_the_input_and_the_file() -> None:
    result = run(facts(CAPPED["process_env"]), only=["runtime.debug_env"])  # healthy: it would pass
    unknown = [x for x in result.findings if x.severity == "unknown"]
    assert unknown and any("proc/4242/environ" in e.value and "larger than the read limit" in e.value
                           for x in unknown for e in x.evidence)


def test_a_check_that_does_not_apply_says_why() -> None:
    """Xid lines on a node without NVIDIA GPUs: not applicable with the reason, even without a kernel log."""
    f = facts({"proc/cmdline": "BOOT_IMAGE=/vmlinuz ro\n", "etc/hostname": "cpu-only\n"}, base=None)
    result = run(f, only=["gpu.xid_errors"])
    [status] = [c for c in result.checks if c["id"] == "gpu.xid_errors"]
    assert status["status"] == "not_applicable" and "no NVIDIA GPU" in status["reason"]


def test_a_deploy_file_over_the_limit_is_refused_not_cut(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from doctor.cli import main

    big = tmp_path / "vllm.service"
    big.write_bytes(b"[Service]\nExecStart=/usr/bin/vllm serve m\n" + b"#" * (1 << 20) + b"\nEnvironment=NCCL_P2P_DISABLE=1\n")
    assert main(["check", str(SICK), "--deploy", str(big), "-o", str(tmp_path / "r.txt")]) == 2


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize(("module", "cap", "need", "where"), [
    ("doctor.facts.procs", "MAX_PROCESSES", "processes", "proc"),
    ("doctor.facts.roce", "MAX_ROUTES", "routes", "proc/net/route"),
])
def test_a_count_over_its_cap_is_an_input_not_read_whole(module: str, cap: str, need: str, where: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A process table or route table cut at its cap is reported, never a silently shorter list."""
    import importlib

    monkeypatch.setattr(importlib.import_module(module), cap, 1)
    f = facts(base=SICK)
    reason = problems(f, [need])
    assert reason and where in str(reason) and "over the limit of 1" in str(reason)
