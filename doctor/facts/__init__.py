"""Typed facts parsed once, lazily, from a source. Checks read these, never raw paths."""

from __future__ import annotations

import os
from functools import cached_property
from typing import TYPE_CHECKING

from doctor.facts.deploy import DeployFile, Kubelet, build_deploy_files, build_kubelet, read_deploy_file
from doctor.facts.gpu import Gpu, GpuInventory, build_gpus
from doctor.facts.host import Host, build_host
from doctor.facts.interrupts import DeviceIrqs, NvidiaParams, build_device_irqs, build_nvidia_params
from doctor.facts.iommu import IommuInfo, ModprobeLine, build_iommu, build_modprobe
from doctor.facts.kernel import Cmdline, Sysctls, build_cmdline, build_modules, build_sysctls
from doctor.facts.kernel_log import KernelLog, build_kernel_log
from doctor.facts.limits import HugePages, ProcFiles, build_hugepages
from doctor.facts.net import Gid, NetDev, RdmaPort, build_netdevs, build_rdma
from doctor.facts.numa import Irq, NumaNode, NumaTopology, build_irqs, build_numa
from doctor.facts.nvlink import FabricManager, Nvlink, build_fabric_manager, build_nvlink
from doctor.facts.pci import PciDevice, PciTree, build_pci, within_nodes
from doctor.facts.port_health import LinkDown, PortErrors, build_link_downs, build_port_errors
from doctor.facts.procs import Process, build_processes
from doctor.facts.roce import (
    ActiveMtu,
    EthtoolStats,
    RdmaCounters,
    RoceEcn,
    RoceQos,
    Route,
    build_active_mtu,
    build_counters,
    build_ecn,
    build_ethtool_stats,
    build_qos,
    build_routes,
)
from doctor.facts.serve_config import ServeConfig, build_serve_configs
from doctor.facts.system import CpuFreq, NvidiaDriver, Thp, build_cpufreq, build_nvidia_driver, build_thp
from doctor.sources import Source

if TYPE_CHECKING:
    from doctor.facts.baseline import Baseline
    from doctor.facts.watch import WatchRecord


class Facts:
    """Every fact about one node, each built on first use and cached."""

    def __init__(self, source: Source, deploy_paths: tuple[str, ...] = (), baseline: Baseline | None = None,
                 watch: WatchRecord | None = None) -> None:
        self.source = source
        if watch is not None:  # what ``gnd watch`` sampled replaces what the snapshot may hold
            self.__dict__["watch"] = watch
        #: ``--deploy`` files, a relative path resolved against the current directory (a fix names the
        #: file by its absolute path: ``compose.yaml`` would otherwise read as ``/compose.yaml``)
        self.deploy_paths = tuple(os.path.abspath(p) for p in deploy_paths)
        #: the known-good baseline given with ``--baseline`` (None: no baseline asked for)
        self.baseline = baseline
        for path in deploy_paths:  # a missing or FIFO --deploy file is the user's mistake: exit 2 now
            read_deploy_file(path)

    @property
    def runs_commands(self) -> bool:
        """Whether asking for a command's output runs it on this host (a live check) rather than reading a
        recording: checks skip costly commands that cannot matter (``nvidia-smi nvlink`` without a GPU)."""
        return bool(getattr(self.source, "run_commands", False))

    @property
    def as_root(self) -> bool | None:
        """Whether the source was read as root (``None``: not recorded): advice to run as root fits only when not."""
        return self.source.as_root()

    @cached_property
    def watch(self) -> WatchRecord | None:
        """What a watch sampled over time (``gnd watch``, or ``gnd/watch.json`` of a snapshot); ``None``:
        one snapshot, nothing over time (the ``watch.*`` checks do not run)."""
        from doctor.facts.watch import build_watch

        return build_watch(self.source)

    @cached_property
    def host(self) -> Host:
        return build_host(self.source)

    @cached_property
    def pci(self) -> PciTree:
        from doctor.derived.upstream import (
            complete_paths,  # the tree form (lspci -t) where records lack paths
        )

        pci = complete_paths(build_pci(self.source), self.source)
        return within_nodes(pci, frozenset(n.id for n in self.numa.nodes))

    @cached_property
    def gpus(self) -> GpuInventory:
        return build_gpus(self.source, self.pci)

    @cached_property
    def netdevs(self) -> tuple[NetDev, ...]:
        return build_netdevs(self.source)

    @cached_property
    def rdma(self) -> tuple[RdmaPort, ...]:
        return build_rdma(self.source)

    @cached_property
    def numa(self) -> NumaTopology:
        return build_numa(self.source)

    @cached_property
    def irqs(self) -> tuple[Irq, ...]:
        return build_irqs(self.source)

    @cached_property
    def gpu_irqs(self) -> dict[str, DeviceIrqs]:
        """Each PCI GPU's MSI/MSI-X vectors (and their mode) and interrupt line from sysfs, by address."""
        return build_device_irqs(self.source, self.pci.gpus)

    @cached_property
    def nvidia_params(self) -> NvidiaParams | None:
        """The NVIDIA driver's ``EnableMSI`` (``/proc/driver/nvidia/params``); None when not recorded."""
        return build_nvidia_params(self.source)

    @cached_property
    def processes(self) -> tuple[Process, ...]:
        return build_processes(self.source)

    @cached_property
    def cmdline(self) -> Cmdline:
        return build_cmdline(self.source)

    @cached_property
    def sysctls(self) -> Sysctls:
        return build_sysctls(self.source)

    @cached_property
    def modules(self) -> frozenset[str] | None:
        return build_modules(self.source)

    @cached_property
    def kernel_log(self) -> KernelLog:
        return build_kernel_log(self.source)

    @cached_property
    def iommu(self) -> IommuInfo:
        return build_iommu(self.source)

    @cached_property
    def modprobe(self) -> tuple[ModprobeLine, ...]:
        return build_modprobe(self.source)

    @cached_property
    def cpufreq(self) -> CpuFreq:
        return build_cpufreq(self.source)

    @cached_property
    def thp(self) -> Thp:
        return build_thp(self.source)

    @cached_property
    def nvidia_driver(self) -> NvidiaDriver:
        return build_nvidia_driver(self.source)

    @cached_property
    def kubelet(self) -> Kubelet | None:
        return build_kubelet(self.source)

    @cached_property
    def deploy_files(self) -> tuple[DeployFile, ...]:
        return build_deploy_files(self.source, self.deploy_paths)

    @cached_property
    def serve_configs(self) -> tuple[ServeConfig, ...]:
        """Config files inference servers name with ``--config`` (read when the source holds them)."""
        return build_serve_configs(self.source, self.processes)

    @cached_property
    def roce_ecn(self) -> dict[str, RoceEcn]:
        """Per-netdev DCQCN switches (``ecn/roce_np``, ``ecn/roce_rp``)."""
        return build_ecn(self.source, self.netdevs)

    @cached_property
    def port_errors(self) -> dict[str, PortErrors]:
        """Per RDMA port: IBTA error counters, QP-fatal hw_counters, carrier changes (totals, not rates)."""
        return build_port_errors(self.source, self.rdma, self.netdevs)

    @cached_property
    def link_downs(self) -> tuple[LinkDown, ...] | None:
        """mlx5 link-down and cable lines of the kernel log (None: no kernel log recorded)."""
        return build_link_downs(self.source)

    @cached_property
    def rdma_counters(self) -> dict[str, RdmaCounters]:
        """Per-RDMA-port ``hw_counters`` (drops, sequence errors, CNPs)."""
        return build_counters(self.source, self.rdma)

    @cached_property
    def roce_netdevs(self) -> list[str]:
        """Interfaces of RDMA devices with an Ethernet port: the ones per-interface commands run for."""
        return self.source.roce_netdevs()

    @cached_property
    def ethtool_stats(self) -> dict[str, EthtoolStats]:
        """``ethtool -S`` per RoCE interface (run live only when a check asks; every interface of a sosreport)."""
        return build_ethtool_stats(self.source, self.roce_netdevs)

    @cached_property
    def roce_qos(self) -> dict[str, RoceQos]:
        """``mlnx_qos -i`` per RoCE interface: trust state, PFC per priority, DSCP map."""
        return build_qos(self.source, self.roce_netdevs)

    @cached_property
    def active_mtu(self) -> ActiveMtu:
        return build_active_mtu(self.source)

    @cached_property
    def routes(self) -> tuple[Route, ...] | None:
        return build_routes(self.source)

    @cached_property
    def derived(self) -> dict[object, object]:
        """Cache of derived facts for :mod:`doctor.derived` (each computed once per run; keys belong there)."""
        return {}

    @cached_property
    def nvlink(self) -> Nvlink:
        return build_nvlink(self.source)

    @cached_property
    def fabric_manager(self) -> FabricManager:
        return build_fabric_manager(self.source)

    @cached_property
    def proc_files(self) -> ProcFiles:
        return ProcFiles(self.source)

    @cached_property
    def hugepages(self) -> HugePages:
        return build_hugepages(self.source)

    # --- small derived views shared by many checks -----------------------------------------
    # each an index built once: a lookup per device or per finding stays O(1), so a check or the
    # inventory that asks for every NIC or every server stays linear in them
    def netdev(self, name: str) -> NetDev | None:
        return self._netdev_by_name.get(name)

    def netdevs_of(self, pci_address: str) -> list[NetDev]:
        return list(self._netdevs_by_pci.get(pci_address, ()))

    def rdma_of(self, pci_address: str) -> list[RdmaPort]:
        return list(self._rdma_by_pci.get(pci_address, ()))

    def process(self, pid: int) -> Process | None:
        return self._process_by_pid.get(pid)

    @cached_property
    def _netdev_by_name(self) -> dict[str, NetDev]:
        out: dict[str, NetDev] = {}
        for n in self.netdevs:
            out.setdefault(n.name, n)  # the first of a name, as a scan finds it
        return out

    @cached_property
    def _netdevs_by_pci(self) -> dict[str | None, list[NetDev]]:
        out: dict[str | None, list[NetDev]] = {}
        for n in self.netdevs:
            out.setdefault(n.pci_address, []).append(n)
        return out

    @cached_property
    def _rdma_by_pci(self) -> dict[str | None, list[RdmaPort]]:
        out: dict[str | None, list[RdmaPort]] = {}
        for p in self.rdma:
            out.setdefault(p.pci_address, []).append(p)
        return out

    @cached_property
    def _process_by_pid(self) -> dict[int, Process]:
        out: dict[int, Process] = {}
        for p in self.processes:
            out.setdefault(p.pid, p)
        return out


__all__ = ["Facts", "Host", "PciDevice", "PciTree", "Gpu", "GpuInventory", "NetDev", "RdmaPort", "Gid",
           "NumaNode", "NumaTopology", "Irq", "Process", "Cmdline", "Sysctls", "Kubelet", "DeployFile"]
