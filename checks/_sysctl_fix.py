"""Fix commands for sysctl findings: backup first, runtime ``sysctl -w``, a sysctl.d file, rollback."""

from __future__ import annotations

from doctor.facts import Sysctls
from doctor.findings import Fix, cmd, q

BACKUP = "sysctl -a > /var/tmp/gnd-sysctl-backup.conf 2>/dev/null"


def sysctl_fix(wanted: dict[str, str], current: Sysctls, conf_name: str, notes: str = "") -> Fix:
    """Commands setting ``wanted`` now and at boot, and undoing both."""
    conf = f"/etc/sysctl.d/{conf_name}"
    runtime = [BACKUP] + [cmd("sysctl", "-w", f"{k}={v}") for k, v in wanted.items()]
    body = "".join(f"{k} = {v}\n" for k, v in wanted.items())
    persistent = [f"printf %s {q(body)} > {q(conf)}", cmd("sysctl", "--system")]
    rollback = [cmd("sysctl", "-w", f"{k}={current.get(k)}") for k in wanted if current.get(k) is not None]
    rollback.append(cmd("rm", "-f", conf))
    return Fix(runtime=tuple(runtime), persistent=tuple(persistent), rollback=tuple(rollback), notes=notes)
