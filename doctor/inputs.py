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
    """The first path matching ``patterns`` that was there but not read whole: a file larger than its
    read cap, or a listing cut at a count cap (:meth:`doctor.sources.Source.capped`), with why."""
    unread = facts.source.unread
    for path in sorted(unread):
        if any(fnmatch.fnmatchcase(path, p) for p in patterns):
            return f"{path}: {unread[path]}"
    return None


def _recorded(facts: Facts, folder: str) -> str | None:
    """``folder`` (always there on a Linux host, so always collected) is missing from the source."""
    return None if facts.source.exists(folder) else f"{folder}: not recorded"


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
    return _unread(facts, "proc", "proc/*/cmdline", "proc/*/status")


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


def _process_file(name: str) -> Problem:
    """``proc/<pid>/<name>`` (``limits``) of every serving process."""

    def problem(facts: Facts) -> str | None:
        from doctor.derived.procs import server_roots

        pids = [s.process for s in server_roots(facts) if s.process.origin.startswith("proc/")]
        for p in pids:  # read them (once, cached): what was over the cap is known after
            facts.proc_files.memlock(p.pid)
        unread = _unread(facts, *(f"{p.origin}/{name}" for p in pids))
        if unread:
            return unread
        blind = next((p for p in pids if not facts.source.exists(f"{p.origin}/{name}")), None)
        return None if blind is None else f"{blind.origin}/{name}: not recorded"

    return problem


def _netdevs(facts: Facts) -> str | None:
    facts.netdevs  # noqa: B018 - read them: what was over the cap is known after
    return _recorded(facts, "sys/class/net") or _unread(facts, "sys/class/net/*")


#: PCI vendor whose network and InfiniBand functions are RDMA devices (mlx4/mlx5)
_RDMA_VENDORS = frozenset({0x15B3})
_RDMA_MODULES = ("ib_core", "mlx5_ib", "mlx4_ib")


def _rdma(facts: Facts) -> str | None:
    """The RDMA ports: none recorded while an RDMA NIC is on the bus and its driver is (or may be) loaded."""
    facts.rdma  # noqa: B018 - read them: what was over the cap is known after
    unread = _unread(facts, "sys/class/infiniband/*", "commands/ibv_devinfo*", "sos_commands/infiniband/*")
    if unread or facts.rdma:
        return unread
    nics = [d for d in facts.pci.devices.values() if d.vendor in _RDMA_VENDORS and d.is_nic and not d.is_vf]
    modules = facts.modules
    if nics and (modules is None or any(m in modules for m in _RDMA_MODULES)):
        return (f"{len(nics)} RDMA NIC(s) on the PCI bus ({nics[0].address}) but no RDMA port recorded "
                "(sys/class/infiniband, ibv_devinfo -v)")
    return None


def _routes(facts: Facts) -> str | None:
    if facts.routes is None:  # (read now: a cut listing is known after)
        return _unread(facts, "proc/net/route") or "proc/net/route: not recorded"
    return _unread(facts, "proc/net/route")


def _modules(facts: Facts) -> str | None:
    if facts.modules is None:
        return _unread(facts, "proc/modules", "sos_commands/kernel/lsmod") or "proc/modules: not recorded"
    return None


def _cpufreq(facts: Facts) -> str | None:
    """CPU 0's frequency policy; a recorded CPU folder without ``cpufreq`` is a host without a driver."""
    facts.cpufreq  # noqa: B018 - read it: what was over the cap is known after
    return _recorded(facts, "sys/devices/system/cpu") or _unread(facts, "sys/devices/system/cpu/cpu0/cpufreq/*")


def _thp(facts: Facts) -> str | None:
    """Transparent huge pages; a recorded ``sys/kernel/mm`` without them is a kernel built without THP."""
    facts.thp  # noqa: B018 - read it: what was over the cap is known after
    return _recorded(facts, "sys/kernel/mm") or _unread(facts, "sys/kernel/mm/transparent_hugepage/*")


def _hugepages(facts: Facts) -> str | None:
    facts.hugepages  # noqa: B018 - read them: what was over the cap is known after
    return _recorded(facts, "proc/meminfo") or _unread(facts, "proc/meminfo", "sys/kernel/mm/hugepages/*")


def _kubelet(facts: Facts) -> str | None:
    """The kubelet's configuration (none on a node without Kubernetes: a state, not a missing input)."""
    facts.kubelet  # noqa: B018 - read it: what was over the cap is known after
    return _unread(facts, "var/lib/kubelet/*", "etc/kubernetes/kubelet-config.yaml", "root/cdk/kubelet/*",
                   "etc/systemd/system/kubelet.service.d/*")


def _watch(facts: Facts) -> str | None:
    """The samples of a watch (``gnd watch``, or ``gnd/watch.json`` of a snapshot) read whole."""
    record = facts.watch
    return None if record is None or record.missing is None else f"{record.origin}: {record.missing}"


#: every input a check may declare, by name
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
    "process_limits": _process_file("limits"),
    "netdevs": _netdevs,
    "rdma": _rdma,
    "routes": _routes,
    "modules": _modules,
    "cpufreq": _cpufreq,
    "thp": _thp,
    "hugepages": _hugepages,
    "kubelet": _kubelet,
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


def whole(facts: Facts, *needs: str) -> bool:
    """Every one of ``needs`` was read whole: an ``applies`` condition resting on them may be trusted."""
    return not problems(facts, needs)
