"""runtime.shm: the 64 MB container /dev/shm for a multi-GPU server; host tmpfs and single-GPU servers pass."""

from __future__ import annotations

import re
from dataclasses import replace

from doctor.secrets import sanitize
from fixtures.tools.make_node import HEALTHY as SPEC
from tests.checks import unseen_nodes as u
from tests.checks.smi_overlay import generated
from tests.helpers import HEALTHY, facts, findings_of

CHECK = "runtime.shm"
SMI = "commands/nvidia-smi_-q_-x"
DOCKER = "rw,nosuid,nodev,noexec,relatime,size=65536k"


def test_host_tmpfs_without_size_passes() -> None:
    (f,) = findings_of(facts(), CHECK)
    assert f.severity == "pass" and "8 GPUs" in f.title


def test_docker_default_shm_is_high_with_nsenter_remount() -> None:
    (f,) = findings_of(generated(replace(SPEC, shm_options=DOCKER)), CHECK)
    assert f.severity == "high" and f.title == "/dev/shm is 64 MiB for a server using 8 GPUs"
    assert f.fix.runtime == ("nsenter -t 4318 -m mount -o remount,size=16G /dev/shm",)
    assert f.fix.rollback == ("nsenter -t 4318 -m mount -o remount,size=64M /dev/shm",)
    assert "--shm-size" in f.fix.notes and f.evidence[0].source == "proc/4318/mounts"


def test_a_large_shm_and_a_share_of_ram_pass() -> None:
    for opts in ("rw,nosuid,nodev,size=17179869184", "rw,nosuid,nodev,size=50%"):
        assert [x.severity for x in findings_of(generated(replace(SPEC, shm_options=opts)), CHECK)] == ["pass"]


def test_single_gpu_servers_are_not_judged() -> None:
    xml = (HEALTHY / SMI).read_text()
    for pid in range(4327, 4318 + 8 * 9, 9):  # workers of GPUs 1-7 leave: one GPU in use
        xml = re.sub(rf"<process_info>(?:(?!</process_info>).)*<pid>{pid}</pid>.*?</process_info>", "", xml, flags=re.S)
    docker = {f"proc/{p.name}/mounts": f"shm /dev/shm tmpfs {DOCKER} 0 0\n" for p in HEALTHY.glob("proc/[0-9]*")}
    assert findings_of(facts({SMI: xml, **docker}), CHECK) == []
    assert findings_of(facts(docker), CHECK)[0].severity == "high"


def test_tensor_parallel_server_without_recorded_mounts_is_unknown() -> None:
    (f,) = findings_of(u.l40s().facts(), CHECK)  # vLLM TP4 over 4 L40S; no /proc/<pid>/mounts recorded
    assert f.severity == "unknown" and f.subject == "pid 7000 (vllm)"


def test_mounts_not_recorded_is_unknown() -> None:
    gone = {f"proc/{p.name}/mounts": None for p in HEALTHY.glob("proc/[0-9]*")}
    (f,) = findings_of(facts(gone), CHECK)
    assert f.severity == "unknown"


def test_the_last_of_two_dev_shm_mounts_is_the_one_in_effect() -> None:
    # a container that mounts its own /dev/shm over the host's: the mount table lists both, the last wins
    two = {f"proc/{p.name}/mounts": f"tmpfs /dev/shm tmpfs rw,relatime,size=131981020k 0 0\nshm /dev/shm tmpfs {DOCKER} 0 0\n"
           for p in HEALTHY.glob("proc/[0-9]*")}
    assert findings_of(facts(two), CHECK)[0].severity == "high"
    swapped = {k: "\n".join(reversed(v.strip().split("\n"))) + "\n" for k, v in two.items()}
    assert findings_of(facts(swapped), CHECK)[0].severity == "pass"


def test_collection_keeps_only_the_dev_shm_line_of_a_mount_table() -> None:
    table = (b"overlay / overlay rw,relatime,lowerdir=/var/lib/containerd/l/ABC,upperdir=/secret/path 0 0\n"
             b"proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
             b"shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
             b"/dev/nvme0n1p2 /etc/hosts ext4 rw,relatime 0 0\n")
    assert sanitize("proc/4318/mounts", table, "mounts") == b"shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0\n"
    assert sanitize("proc/4318/mounts", b"\xff\n\n garbage\n", "mounts") == b""
