"""runtime.shm: a multi-GPU NCCL server whose /dev/shm is the 64 MB container default."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.procs import ServerProcess, gpus_of, server_groups, servers
from doctor.facts import Facts
from doctor.findings import HIGH, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#docker",
              "https://docs.docker.com/reference/cli/docker/container/run/#shm-size")
#: /dev/shm at or below this many bytes is the Docker/containerd default (64 MiB) or smaller.
SMALL_SHM = 64 << 20
#: A size that comfortably holds NCCL's SHM transport segments for 8 GPUs.
ADVISED = "16G"


@check("runtime.shm", "/dev/shm size of multi-GPU inference servers", "runtime", acts="application", fixes=("shm_resize",), needs=("processes",))
def runtime_shm(facts: Facts) -> Iterator[Finding]:
    """High when a server that uses two or more GPUs sees a /dev/shm of 64 MB or less (a container
    started without ``--shm-size``/``--ipc=host``): NCCL's shared-memory segments fail (Bus error,
    ``NCCL WARN Error while creating shared memory segment``)."""
    procs = servers(facts)
    for root, members in sorted(server_groups(procs).items()):
        yield from _group(facts, root, members)


def _group(facts: Facts, root: int, members: list[ServerProcess]) -> Iterator[Finding]:
    gpus: dict[int, set[str]] = {}
    for s in members:
        for g in gpus_of(facts, s.process)[0]:
            gpus.setdefault(s.process.pid, set()).add(g.address)
    used = set().union(*gpus.values()) if gpus else set()
    if len(used) < 2:
        return
    label = f"pid {root} ({members[0].framework})"
    users = [s for s in members if s.process.pid in gpus]
    recorded = [(s, *facts.proc_files.shm(s.process.pid)) for s in users]
    if not any(ok for _, ok, _ in recorded):
        yield Finding(UNKNOWN, label, N_('/dev/shm of the GPU processes not recorded'),
                      evidence=(Evidence(f"proc/{users[0].process.pid}/mounts", "not recorded"),), subject_id=f"pid:{root}")
        return
    small = [(s, m) for s, ok, m in recorded if ok and m is not None and m.size is not None and m.size <= SMALL_SHM]
    if not small:
        m0 = next((m for _, ok, m in recorded if ok and m is not None), None)
        yield Finding(PASS, label, N_('/dev/shm large enough for NCCL ({n_used} GPUs)', n_used=len(used)),
                      evidence=(Evidence(m0.origin, f"/dev/shm {m0.fstype} {m0.options}") if m0 else
                                Evidence(f"proc/{users[0].process.pid}/mounts", "no separate /dev/shm mount"),),
                      subject_id=f"pid:{root}")
        return
    pids = [s.process.pid for s, _ in small]
    size_mib = (small[0][1].size or 0) >> 20
    yield Finding(
        HIGH, label, N_('/dev/shm is {size_mib} MiB for a server using {n_used} GPUs', size_mib=size_mib, n_used=len(used)),
        detail=N_("NCCL's shared-memory transport and vLLM/SGLang's multiprocessing queues live in /dev/shm. A container's default of 64 MB makes NCCL fail with a Bus error or 'Error while creating shared memory segment', or run out during CUDA graph capture."),
        evidence=tuple(Evidence(m.origin, f"/dev/shm {m.fstype} {m.options}") for _, m in small[:3]),
        expected=N_('/dev/shm of several GB (--shm-size={ADVISED} or --ipc=host)', ADVISED=ADVISED), observed=N_('{size_mib} MiB', size_mib=size_mib),
        impact=Impact(60, N_('collectives crash or the server fails during start-up'),
                          basis=N_("NCCL troubleshooting guide: Docker's 64 MB /dev/shm is too small for NCCL's shared-memory transport")),
        fix=make("shm_resize",
                 N_('Persistent: start the container with --shm-size={ADVISED} (or --ipc=host); Kubernetes: mount an emptyDir with medium: Memory at /dev/shm; docker compose: shm_size.', ADVISED=ADVISED),
                 pid=pids[0], size=ADVISED, previous=small[0][1].size),
        references=REFERENCES, related=tuple(f"pid:{p}" for p in pids), subject_id=f"pid:{root}")
