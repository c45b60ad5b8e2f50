"""The inputs checks declare (``@check(needs=...)``) and how to tell that one is missing or incomplete.

A check names the facts its verdict rests on; the runner asks this module, for each, whether the
source held it whole. When one is missing, truncated, over a read cap or unreadable, the runner
reports the check ``unknown`` naming that input and drops its ``pass`` findings: silence about
absent evidence is never health. Each input answers ``None`` (complete, or nothing to read: no
NVIDIA GPU on the bus needs no nvidia-smi) or one line saying what is missing, with its path.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from doctor.facts import Facts

Problem = Callable[["Facts"], "str | None"]


def _unread(facts: Facts, *patterns: str) -> str | None:
    """The first file matching ``patterns`` that was there but not read (larger than its read cap)."""
    for path in sorted(facts.source.unread):
        if any(fnmatch.fnmatchcase(path, p) for p in patterns):
            return f"{path}: larger than the read limit, not read"
    return None


def _pci(facts: Facts) -> str | None:
    pci = facts.pci
    if not pci.devices:
        return pci.missing or "no PCI device tree (sys/bus/pci/devices or lspci -vvv) recorded"
    return _unread(facts, "sys/bus/pci/devices/*", "sys/devices/pci*")


def _pci_aer(facts: Facts) -> str | None:
    """AER counters: on bare metal with PCIe ports, some device must expose them."""
    pci = facts.pci
    if facts.host.is_vm or pci.origin != "sysfs":
        return None if facts.host.is_vm else _pci(facts)
    if not any(d.port_type for d in pci.devices.values()):
        return None  # no PCI Express port: nothing reports AER
    if not any(d.aer for d in pci.devices.values()):
        return ("no device exposes AER counters (sys/bus/pci/devices/*/aer_dev_*): kernel without "
                "CONFIG_PCIEAER, AER owned by firmware, or not recorded")
    return _unread(facts, "sys/bus/pci/devices/*/aer_dev_*")


def _nvidia_on_bus(facts: Facts) -> bool:
    return any(d.vendor == 0x10DE for d in facts.pci.gpus)


def _gpus(facts: Facts) -> str | None:
    inv = facts.gpus
    if inv.runtime_origin is not None or not (inv.gpus or _nvidia_on_bus(facts)):
        return None
    return inv.runtime_missing or "no NVML and no nvidia-smi output for the NVIDIA GPUs on the PCI bus"


def _kernel_log(facts: Facts) -> str | None:
    log = facts.kernel_log
    if not log.readable:
        return f"{log.origin}: {log.missing or 'not recorded'}"
    return None


def _processes(facts: Facts) -> str | None:
    if not facts.processes:
        return "no process table (proc/<pid> or ps) recorded"
    return _unread(facts, "proc/*/cmdline", "proc/*/status")


def _process_env(facts: Facts) -> str | None:
    """The environment of the serving processes (what their user set): a sosreport keeps none."""
    from doctor.derived.procs import server_roots

    roots = [s.process for s in server_roots(facts)]
    unread = _unread(facts, *(f"{p.origin}/environ" for p in roots))
    if unread:
        return unread
    blind = [p for p in roots if not p.env_known]
    if blind:
        where = blind[0].origin
        return f"{where}: the environment of {len(blind)} serving process(es) is not recorded"
    return None


def _deploy_files(facts: Facts) -> str | None:
    from doctor import specs

    facts.deploy_files  # noqa: B018 - read them: what was over the cap is known after
    return _unread(facts, *(e for p in specs.get("deploy.files").paths for e in specs.expand_braces(p)))


def _sysctls(facts: Facts) -> str | None:
    if not facts.sysctls.values:
        return "no sysctl values (proc/sys or sysctl -a) recorded"
    return _unread(facts, "proc/sys/*", "etc/sysctl.d/*", "etc/sysctl.conf")


def _numa(facts: Facts) -> str | None:
    numa = facts.numa
    if not numa.nodes:
        return numa.missing
    return _unread(facts, "sys/devices/system/node/*")


def _rdma_counters(facts: Facts) -> str | None:
    """The error counters of every RDMA port (none needed on a node without RDMA ports)."""
    missing = [e.missing for e in facts.port_errors.values() if e.missing]
    if missing:
        return missing[0] + (f" (and {len(missing) - 1} more port(s))" if len(missing) > 1 else "")
    return _unread(facts, "sys/class/infiniband/*/ports/*/counters/*", "sys/class/infiniband/*/ports/*/hw_counters/*")


def _cmdline(facts: Facts) -> str | None:
    if facts.cmdline.raw is None:
        return _unread(facts, "proc/cmdline") or "proc/cmdline: not recorded"
    return None


def _irqs(facts: Facts) -> str | None:
    facts.irqs  # noqa: B018 - read them: what was over the cap is known after
    unread = _unread(facts, "proc/interrupts", "proc/irq/*")
    if unread:
        return unread
    if not facts.irqs or not facts.source.exists("proc/interrupts"):
        return "proc/interrupts: not recorded"  # the handler names (which device an IRQ serves) come from it
    return None


#: every input a check may declare, by name
def _watch(facts: Facts) -> str | None:
    """The samples of a watch (``gnd watch``, or ``gnd/watch.json`` of a snapshot) read whole."""
    record = facts.watch
    return None if record is None or record.missing is None else f"{record.origin}: {record.missing}"


INPUTS: dict[str, Problem] = {
    "pci": _pci,
    "pci.aer": _pci_aer,
    "gpus": _gpus,
    "kernel_log": _kernel_log,
    "processes": _processes,
    "process_env": _process_env,
    "deploy_files": _deploy_files,
    "sysctls": _sysctls,
    "numa": _numa,
    "cmdline": _cmdline,
    "rdma_counters": _rdma_counters,
    "irqs": _irqs,
    "watch": _watch,
}


def validate(needs: Iterable[str], check_id: str) -> tuple[str, ...]:
    """``needs`` as a tuple; a name that is no input is a programming error, raised at import."""
    out = tuple(needs)
    wrong = [n for n in out if n not in INPUTS]
    if wrong:
        raise ValueError(f"check {check_id} needs unknown input(s) {wrong}; known: {sorted(INPUTS)}")
    return out


def problems(facts: Facts, needs: Iterable[str]) -> list[tuple[str, str]]:
    """(input, what is missing) for each of ``needs`` the source did not hold whole."""
    out = []
    for name in needs:
        problem = INPUTS[name](facts)
        if problem:
            out.append((name, problem))
    return out
