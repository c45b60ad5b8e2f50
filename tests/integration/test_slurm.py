"""contrib/slurm/gnd-healthcheck.sh as the HealthCheckProgram of a real one-node Slurm cluster.

munged, slurmctld and slurmd (Debian: munge, slurm-wlm) run as root in the foreground, on 127.0.0.1
only, with their key, sockets, spool and state in a temporary folder and cgroups unused
(proctrack/linuxproc, task/none). slurmd runs a health check with an empty environment, so the script's
settings come from /etc/default/gnd-healthcheck: the daemons run in a private mount namespace where the
test's own folder is bound over /etc/default (the host's is never touched). The test changes that file
between runs: gnd on the sick fixture drains the node with the top finding as the reason; on the healthy
fixture it resumes a node gnd drained, but never one an administrator drained; when gnd cannot run,
the node is left as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.helpers import HEALTHY, SICK
from tests.integration.conftest import free_port, require, require_tool

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "contrib" / "slurm" / "gnd-healthcheck.sh"
NODE = "gndnode"
ORDER = ["critical", "high", "medium", "low"]


class Cluster:
    """The running cluster: its folder, and scontrol/sinfo pointed at its slurm.conf."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.env = {**os.environ, "SLURM_CONF": str(base / "slurm.conf")}

    def configure(self, source: str, gnd: str | None = None) -> None:
        """What the next health checks run: gnd (through a wrapper that counts runs) on ``source``."""
        lines = [f"export SLURM_CONF={self.base / 'slurm.conf'}", f"GND={gnd or self.base / 'gnd'}",
                 f"GND_SOURCE={source}", "GND_SEVERITY=high"]
        conf = self.base / "etc-default" / "gnd-healthcheck"
        tmp = conf.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        tmp.replace(conf)  # whole, so that a health check never reads half a file

    def runs(self) -> int:
        path = self.base / "runs"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def sinfo(self) -> tuple[str, str]:
        """(state, reason) of the node, as sinfo prints them (``idle``, ``drained``...)."""
        out = subprocess.run(["sinfo", "-h", "-n", NODE, "-o", "%T|%E"], env=self.env, capture_output=True,
                             text=True, timeout=20).stdout.strip()
        state, _, reason = out.partition("|")
        return state, "" if reason == "none" else reason  # sinfo prints "none" for no reason

    def scontrol(self, *args: str) -> None:
        subprocess.run(["scontrol", *args], env=self.env, check=True, timeout=20, capture_output=True)

    def wait(self, what: str, ok: Callable[[str, str], bool], timeout: float = 30) -> tuple[str, str]:
        end = time.monotonic() + timeout
        seen = self.sinfo()
        while time.monotonic() < end:
            seen = self.sinfo()
            if ok(*seen):
                return seen
            time.sleep(0.5)
        raise AssertionError(f"{what}: node still {seen} after {timeout:g} s\n{self.logs()}")

    def wait_runs(self, more: int, timeout: float = 30) -> None:
        """Until the health check has run ``more`` more times (each run counted when gnd starts, so one
        more than ``more`` is waited for: the last counted run must also have finished)."""
        target = self.runs() + more + 1
        end = time.monotonic() + timeout
        while self.runs() < target:
            if time.monotonic() > end:
                raise AssertionError(f"the health check did not run {more} more times in {timeout:g} s\n"
                                     f"{self.logs()}")
            time.sleep(0.3)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.base.glob("*.log")))


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def _cluster(base: Path) -> Iterator[Cluster]:
    if os.geteuid() != 0:
        require("the Slurm daemons and munged run as root here (SlurmUser=root); run the tests as root")
    tools = {name: require_tool(name, pkg) for name, pkg in
             [("munged", "munge"), ("slurmctld", "slurm-wlm"), ("slurmd", "slurm-wlm"), ("scontrol", "slurm-wlm"),
              ("sinfo", "slurm-wlm"), ("unshare", "util-linux"), ("timeout", "coreutils")]}
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                           text=True, timeout=20)
    if probe.returncode != 0:
        require(f"cannot make a private mount namespace for /etc/default (unshare --mount: "
                f"{probe.stderr.strip() or probe.returncode}); needs CAP_SYS_ADMIN")
    for sub in ("spool", "state", "etc-default"):
        (base / sub).mkdir()
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    ctld_port, slurmd_port = free_port(), free_port()
    host = socket.gethostname().split(".")[0]
    (base / "slurm.conf").write_text(f"""\
ClusterName=gndtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={base}/munge.sock
CredType=cred/munge
# bind to the node's address (127.0.0.1), not to every interface
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/slurmctld.log
SlurmdLogFile={base}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
HealthCheckProgram={SCRIPT}
HealthCheckInterval=2
HealthCheckNodeState=ANY
NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes={NODE} Default=YES MaxTime=INFINITE State=UP
""")
    (base / "gnd").write_text(f"#!/bin/sh\necho run >> {base}/runs\nexec {sys.executable} -m doctor \"$@\"\n")
    (base / "gnd").chmod(0o755)
    cluster = Cluster(base)
    cluster.configure("/nonexistent")  # nothing to say until the test chooses
    (base / "launch.sh").write_text(f"""\
set -e
mount --bind {base}/etc-default /etc/default
{tools['munged']} -F -f --key-file={key} --socket={base}/munge.sock --pid-file={base}/munged.pid \
  --log-file={base}/munged.log --seed-file={base}/munged.seed &
for i in $(seq 50); do [ -S {base}/munge.sock ] && break; sleep 0.1; done
{tools['slurmctld']} -D -f {base}/slurm.conf &
{tools['slurmd']} -D -N {NODE} -f {base}/slurm.conf &
wait
""")
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", str(base / "launch.sh")],
                            stdout=open(base / "launch.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
                            start_new_session=True, cwd=base)
    try:
        end = time.monotonic() + 30
        while not (_port_open(ctld_port) and _port_open(slurmd_port)):
            if proc.poll() is not None or time.monotonic() > end:
                require(f"slurmctld/slurmd did not start here\n{cluster.logs()}")
            time.sleep(0.2)
        cluster.wait("slurmd registers", lambda state, _r: state in ("idle", "drained", "draining"))
        yield cluster
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)
        _end_session(proc.pid)  # health checks slurmd started in their own process groups


def _end_session(sid: int) -> None:
    """SIGKILL what is left of the session the launcher led (every process started for this test)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def _top_reason(source: Path) -> str:
    """What the script must write as the drain reason: the top finding at or above high, from gnd's JSON."""
    out = subprocess.run([sys.executable, "-m", "doctor", "check", str(source), "--format", "json"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    findings = json.loads(out.stdout)["findings"]
    top = [f for f in findings if f["severity"] in ORDER[:2]]
    f = min(top, key=lambda f: (ORDER.index(f["severity"]), f["rank"]))
    text = f"{f['severity']} {f['check']} {f['subject']}: {f['title']}" + (f" (+{len(top) - 1} more)"
                                                                          if len(top) > 1 else "")
    return "gnd: " + " ".join(text.split())[:200]


def _listening_beyond_loopback(base: Path) -> list[str]:
    """Listening TCP sockets of the cluster's daemons on an address other than 127.0.0.1."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, timeout=20).stdout
    return [line for line in out.splitlines() if any(d in line for d in ("slurmctld", "slurmd", "munged"))
            and "127.0.0.1:" not in line]


def test_slurm_health_check_drains_resumes_and_leaves_alone(tmp_path: Path) -> None:
    expected = _top_reason(SICK)
    with _cluster(tmp_path) as cluster:
        if subprocess.run(["which", "ss"], capture_output=True).returncode == 0:
            assert _listening_beyond_loopback(tmp_path) == []

        # the sick fixture: drained, the top finding as the reason
        cluster.configure(str(SICK))
        state, reason = cluster.wait("sick fixture drains", lambda s, r: s.startswith("drain"))
        assert reason == expected

        # gnd cannot run (no such source: exit 2): a drained node stays drained, with its reason
        cluster.configure("/nonexistent-source")
        cluster.wait_runs(2)
        assert cluster.sinfo() == (state, expected)

        # the healthy fixture: the node gnd drained is resumed
        cluster.configure(str(HEALTHY))
        cluster.wait("healthy fixture resumes", lambda s, r: s == "idle" and not r)

        # gnd cannot run: a healthy node is not drained either
        cluster.configure("/nonexistent-source")
        cluster.wait_runs(2)
        assert cluster.sinfo() == ("idle", "")

        # drained by an administrator: healthy gnd runs do not resume it, sick ones do not take its reason
        cluster.scontrol("update", f"NodeName={NODE}", "State=DRAIN", "Reason=admin: fan swap RT-4242")
        cluster.configure(str(HEALTHY))
        cluster.wait_runs(2)
        assert cluster.sinfo()[1] == "admin: fan swap RT-4242"
        cluster.configure(str(SICK))
        cluster.wait_runs(2)
        state, reason = cluster.sinfo()
        assert state.startswith("drain") and reason == "admin: fan swap RT-4242"

