"""The files the data-centre checks read, made hostile one at a time: never a crash, never a false pass."""

from __future__ import annotations

import pytest

from doctor.facts import Facts
from doctor.runner import run_checks
from tests.helpers import HEALTHY, source

CHECKS = ["gpu.fabric", "gpu.nvlink", "gpu.ecc", "gpu.mig", "gpu.compute_mode", "gpu.bar1", "pcie.replay",
          "runtime.memlock", "runtime.shm", "kernel.hugepages"]
FILES = ["commands/nvidia-smi_nvlink_-s", "commands/nvidia-smi_nvlink_-e", "commands/nv-fabricmanager_--version",
         "proc/4242/limits", "proc/4318/limits", "proc/4318/mounts", "proc/meminfo",
         "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "commands/nvidia-smi_-q_-x"]
HOSTILE = [b"", b"\x00\xff\xfe\x00garbage\x00", b"GPU 0: x\n\t Link 0: -5 GB/s\n\t Link 1: Replay Errors: -1\n",
           b"Max locked memory  lots  lots  bytes\n", b"tmpfs /dev/shm tmpfs size=\n",
           b"HugePages_Total: many\nHugepagesize: -2048 kB\n", ("GPU 0: A (UUID: GPU-1)\n" * 50_000).encode(),
           b"<nvidia_smi_log><gpu id='0000:18:00.0'><fabric><state>\xff</state></fabric></gpu></nvidia_smi_log>"]


@pytest.mark.parametrize("path", FILES)
def test_hostile_file_never_breaks_a_check(path: str) -> None:
    for data in HOSTILE:
        result = run_checks(Facts(source({path: data}, HEALTHY)), only=CHECKS)
        assert not [f for f in result.findings if " failed: " in f.title], (path, data[:40])


def test_fabricmanager_version_garbage_is_not_a_mismatch() -> None:
    result = run_checks(Facts(source({"commands/nv-fabricmanager_--version": b"\x00\xff"}, HEALTHY)),
                        only=["gpu.fabric"])
    (f,) = result.findings
    assert f.severity == "pass" and any("version unknown" in e.value for e in f.evidence)
