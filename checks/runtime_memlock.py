"""runtime.memlock: inference servers whose ``Max locked memory`` is limited while RDMA carries their traffic."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import tcp_carries_data
from doctor.derived.procs import server_groups, servers
from doctor.facts import Facts
from doctor.facts.limits import UNLIMITED
from doctor.findings import HIGH, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.inputs import whole
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
              "https://man7.org/linux/man-pages/man1/prlimit.1.html")


def _word(n: int) -> str:
    return "unlimited" if n == UNLIMITED else str(n)


def _limit(n: int) -> int | str:
    return "unlimited" if n == UNLIMITED else n


def _no_rdma(facts: Facts) -> str | None:
    """No active RDMA port (told only when the RDMA ports were read whole)."""
    return N_("no active RDMA port") if not any(p.active for p in facts.rdma) and whole(facts, "rdma") else None


@check("runtime.memlock", "Locked-memory limit of inference servers that use RDMA", "runtime", acts="application",
       fixes=("prlimit_memlock",), needs=("processes", "process_limits", "rdma"), applies=_no_rdma)
def runtime_memlock(facts: Facts) -> Iterator[Finding]:
    """High when a server process using RDMA (an active RDMA port, NCCL not forced onto sockets) has a
    ``Max locked memory`` soft limit below unlimited: ibv_reg_mr of NCCL's buffers fails (NCCL WARN
    ... Cannot allocate memory) or transfers fall back to copies. Unknown when limits were not recorded."""
    procs = servers(facts)
    if not procs or not any(p.active for p in facts.rdma) or tcp_carries_data(facts)[0]:
        return
    files = facts.proc_files
    for root, members in sorted(server_groups(procs).items()):
        limits = [(s, files.memlock(s.process.pid)) for s in members]
        known = [(s, lim) for s, lim in limits if lim is not None]
        label = f"pid {root} ({members[0].framework})"
        if not known:
            yield Finding(UNKNOWN, label, N_('locked-memory limit of the server not recorded'),
                          evidence=(Evidence(f"proc/{root}/limits", "not recorded"),), subject_id=f"pid:{root}")
            continue
        low = [(s, lim) for s, lim in known if not lim.unlimited]
        if not low:
            yield Finding(PASS, label, N_('Max locked memory unlimited for {n_known} server processes', n_known=len(known)),
                          evidence=(Evidence(known[0][1].origin, "Max locked memory unlimited"),), subject_id=f"pid:{root}")
            continue
        pids = [s.process.pid for s, _ in low]
        yield Finding(
            HIGH, label, N_('Max locked memory is {word} bytes for {n_low} server processes using RDMA', word=_word(low[0][1].soft), n_low=len(low)),
            detail=N_("RDMA registers (pins) NCCL's and the KV-transfer buffers; a locked-memory limit makes ibv_reg_mr fail with ENOMEM, so NCCL aborts or the transfer layer falls back to slow copies. prlimit helps registrations made after it; restart the server to be sure."),
            evidence=tuple(Evidence(lim.origin, f"Max locked memory {_word(lim.soft)} {_word(lim.hard)} bytes")
                           for _, lim in low[:4]),
            expected="unlimited", observed=N_('{word} bytes', word=_word(low[0][1].soft)),
            impact=Impact(40, N_('inter-node collectives fail or fall back off GPUDirect RDMA'),
                          basis=N_('NCCL troubleshooting guide: ibv_reg_mr fails when the locked-memory limit is too low')),
            fix=make("prlimit_memlock",
                     N_("Persistent: systemd unit `LimitMEMLOCK=infinity` under [Service]; Docker `--ulimit memlock=-1:-1`; Kubernetes: LimitMEMLOCK=infinity in containerd's unit; PAM: `* - memlock unlimited` in /etc/security/limits.d/."),
                     previous={str(s.process.pid): [_limit(lim.soft), _limit(lim.hard)] for s, lim in low}),
            references=REFERENCES, related=tuple(f"pid:{p}" for p in pids), subject_id=f"pid:{root}")
