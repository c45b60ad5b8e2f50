"""Unknown, never pass: each input a check declares, removed or truncated, leaves that check not ``pass``."""

from __future__ import annotations

import pytest

from doctor.inputs import INPUTS, problems
from doctor.registry import load_checks
from tests.helpers import SICK, facts, run

BIG = b"x" * ((1 << 20) + 10)  # over the 1 MiB cap of process and deployment files
#: per input: overlay changes on the sick fixture that take it away or truncate it
TAKEN: dict[str, dict[str, bytes | str | None]] = {
    "pci": {"sys/bus/pci/devices": None, "commands/lspci_-vvv": None, "sys/devices": None},
    "pci.aer": {},  # the generated trees expose no AER counters: already missing on this bare-metal node
    "gpus": {"commands/nvidia-smi_-q_-x": None},
    "kernel_log": {"commands/dmesg": None},
    "processes": {"proc/4242/cmdline": BIG},
    "process_env": {"proc/4242/environ": BIG},
    "deploy_files": {"etc/systemd/system/vllm.service": BIG},
    "sysctls": {"proc/sys": None, "etc/sysctl.d": None, "etc/sysctl.conf": None},
    "numa": {"sys/devices/system/node": None},
    "cmdline": {"proc/cmdline": None},
    "irqs": {"proc/interrupts": None},
    "rdma_counters": {"sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0/infiniband/mlx5_0/"
                      "ports/1/counters": None},
}
CHECKS, _ = load_checks()
CASES = [(c.id, need) for c in CHECKS for need in c.needs]


def test_every_input_has_a_way_to_take_it_away_here() -> None:
    assert sorted(TAKEN) == sorted(INPUTS)
    assert len(CASES) >= 30  # the built-in checks declare what they rest on


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
@pytest.mark.parametrize(("check_id", "need"), CASES, ids=[f"{c}-{n}" for c, n in CASES])
def test_a_check_whose_input_is_missing_or_truncated_is_not_pass(check_id: str, need: str) -> None:
    f = facts(TAKEN[need], base=SICK)
    assert problems(f, [need]), f"taking {need} away went unnoticed"
    result = run(f, only=[check_id])
    status = next(c["status"] for c in result.checks if c["id"] == check_id)
    assert status not in ("pass", "not_applicable"), (check_id, need, status)
    assert not [x for x in result.findings if x.check == check_id and x.severity == "pass"]


@pytest.mark.skipif(not SICK.exists(), reason="sick fixture not generated")
def test_the_unknown_names_the_input_and_the_file() -> None:
    result = run(facts(TAKEN["process_env"]), only=["runtime.debug_env"])  # healthy: it would pass
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
