"""The registry of data the doctor reads: each datum is named once, with where it lives.

A spec names a set of files (globs relative to ``/``, the same in a live host and a snapshot) or
one command (run live with a timeout, stored in a snapshot under ``commands/<argv joined by _>``),
plus the paths a sosreport keeps it under. A per-interface command (``per_netdev``) has ``{netdev}`` in its
argv and sos paths and runs once for each RoCE interface (:data:`NETDEV`; names are validated first). ``gnd collect`` walks this registry and nothing else,
so a live run and a run on the snapshot collected from that host read the same data.
"""

from __future__ import annotations

from doctor.lazyre import lazy
from doctor.record import record

PCI_ATTRS = (
    "vendor,device,class,subsystem_vendor,subsystem_device,revision,numa_node,local_cpulist,"
    "current_link_speed,current_link_width,max_link_speed,max_link_width,driver,driver_override,"
    "iommu_group,physfn,config,power_state,aer_dev_correctable,aer_dev_fatal,aer_dev_nonfatal,irq"
)

#: the placeholder of a per-interface spec's argv and sos paths
NETDEV = "{netdev}"
#: interface names a per-interface command may be run for: what Linux allows in /sys/class/net
#: (at most 15 bytes), narrowed to safe characters; no leading ``-`` so a name is never an option
_NETDEV_NAME = lazy(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}")


def valid_netdev(name: str) -> bool:
    """Whether ``name`` may be substituted into a per-interface argv or snapshot path."""
    return bool(_NETDEV_NAME.fullmatch(name)) and name not in (".", "..")


@record
class Spec:
    """One named datum: files (``paths``, globs with ``*`` and ``{a,b}``) or a command (``argv``)."""

    name: str
    description: str
    paths: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    timeout: float = 20.0
    sos_paths: tuple[str, ...] = ()
    #: name of a sanitiser in :mod:`doctor.secrets` applied when collecting and when reading
    sanitizer: str | None = None
    #: collect only with this many entries at most (guards against huge process tables)
    limit: int | None = None
    #: run once per RoCE interface, ``{netdev}`` in ``argv``/``sos_paths`` standing for its name
    per_netdev: bool = False

    @property
    def is_command(self) -> bool:
        return bool(self.argv)

    @property
    def snapshot_path(self) -> str:
        """Where a snapshot stores this command's output (a glob with ``*`` for a per-interface spec)."""
        return "commands/" + "_".join(a.replace("/", "-") for a in self.argv).replace(NETDEV, "*")

    def argv_for(self, netdev: str) -> tuple[str, ...]:
        """The argv run for one interface (``netdev`` must pass :func:`valid_netdev`)."""
        if not valid_netdev(netdev):
            raise ValueError(f"unsafe interface name {netdev!r}")
        return tuple(a.replace(NETDEV, netdev) for a in self.argv)

    def snapshot_path_for(self, netdev: str) -> str:
        """Where a snapshot stores the output for one interface, e.g. ``commands/mlnx_qos_-i_eth4``."""
        return "commands/" + "_".join(a.replace("/", "-") for a in self.argv_for(netdev))

    def sos_paths_for(self, netdev: str) -> tuple[str, ...]:
        if not valid_netdev(netdev):
            raise ValueError(f"unsafe interface name {netdev!r}")
        return tuple(p.replace(NETDEV, netdev) for p in self.sos_paths)


SPECS: tuple[Spec, ...] = (
    # --- PCI ---------------------------------------------------------------------------------
    Spec("pci.devices", "PCI devices: ids, class, link speed/width, driver, NUMA, IOMMU group",
         paths=(f"sys/bus/pci/devices/*/{{{PCI_ATTRS}}}", "sys/bus/pci/devices/*/msi_irqs/*",
                "sys/bus/pci/devices/*/aer/*")),
    Spec("iommu.groups", "IOMMU groups, their members and domain type",
         paths=("sys/kernel/iommu_groups/*/type", "sys/kernel/iommu_groups/*/devices/*", "sys/class/iommu/*")),
    Spec("lspci_vvv", "lspci -nnvvv (numeric ids and names, link capability/control/status, ACS, port type)",
         argv=("lspci", "-nnvvv"), timeout=30,
         sos_paths=("commands/lspci_-vvv",  # snapshots before numeric ids were recorded
                    "sos_commands/pci/lspci_-nnvv", "sos_commands/pci/lspci_-nvv", "sos_commands/pci/lspci_-vvv")),
    # --- GPUs --------------------------------------------------------------------------------
    Spec("lspci_tree", "lspci -tv: the PCI tree, which bridge each function hangs off (topology, no link registers); "
         "sosreports, nvidia-bug-report logs (-t, -nntv)", sos_paths=("sos_commands/pci/lspci_-tv",)),
    Spec("lspci_nn", "lspci -nn: ids, class and name of every function (nvidia-bug-report logs of drivers up to 525, "
         "whose lspci dumps cover NVIDIA functions only)"),
    Spec("nvidia_smi_xml", "nvidia-smi -q -x (P-state, utilisation, link generation, processes)",
         argv=("nvidia-smi", "-q", "-x"), timeout=30,
         sos_paths=("sos_commands/nvidia/nvidia-smi_-q_-x",)),
    Spec("nvidia_smi_q", "nvidia-smi -q text (sosreports keep this one; sos 4.0 only the PERFORMANCE part)",
         sos_paths=("sos_commands/nvidia/nvidia-smi_-q", "sos_commands/nvidia/nvidia-smi_-q_-d_PERFORMANCE")),
    Spec("nvidia.driver", "NVIDIA kernel module version, GPU information, peer-memory modules",
         paths=("proc/driver/nvidia/version", "proc/driver/nvidia/gpus/*/information", "proc/driver/nvidia/params",
                "sys/module/nvidia_peermem/version", "sys/kernel/mm/memory_peers/*/version")),
    # --- network and RDMA ---------------------------------------------------------------------
    Spec("net.devices", "network interfaces: speed, MTU, state, owning PCI device",
         paths=("sys/class/net/*/{address,speed,mtu,operstate,type,duplex,device,carrier,carrier_changes,ifindex}",
                "sys/class/net/*/ecn/roce_np/enable/*", "sys/class/net/*/ecn/roce_rp/enable/*")),
    Spec("rdma.ports", "RDMA devices and ports: link layer, state, rate, GID table",
         paths=("sys/class/infiniband/*/{device,node_type,fw_ver}",
                "sys/class/infiniband/*/ports/*/{link_layer,state,phys_state,rate}",
                "sys/class/infiniband/*/ports/*/gids/*",
                "sys/class/infiniband/*/ports/*/gid_attrs/types/*",
                "sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*",
                # RoCE drop/sequence counters (the sos roce plugin copies the same directories)
                "sys/class/infiniband/*/ports/*/hw_counters/{out_of_buffer,out_of_sequence,packet_seq_err,"
                "np_cnp_sent,rp_cnp_handled,np_ecn_marked_roce_packets}",
                # port health (rdma.port_errors): IBTA error counters and the QP-fatal transport counters
                "sys/class/infiniband/*/ports/*/counters/{symbol_error,link_error_recovery,link_downed,"
                "port_rcv_errors,port_rcv_remote_physical_errors,port_rcv_switch_relay_errors,port_xmit_discards,"
                "port_xmit_constraint_errors,port_rcv_constraint_errors,local_link_integrity_errors,"
                "excessive_buffer_overrun_errors,VL15_dropped}",
                "sys/class/infiniband/*/ports/*/hw_counters/{req_transport_retries_exceeded,req_rnr_retries_exceeded,"
                "local_ack_timeout_err,rnr_nak_retry_err,req_cqe_error,"
                "resp_cqe_error,req_remote_access_errors,req_remote_invalid_request,resp_remote_access_errors,"
                "resp_local_length_error}")),
    Spec("ibv_devinfo", "ibv_devinfo -v (RDMA ports: active_mtu; sosreports: GID types)",
         argv=("ibv_devinfo", "-v"), timeout=15,
         sos_paths=("sos_commands/infiniband/ibv_devinfo_-v",)),
    Spec("ethtool_stats", "ethtool -S per RoCE interface (drop counters: rx_discards_phy, rx_out_of_buffer)",
         argv=("ethtool", "-S", NETDEV), timeout=10, per_netdev=True,
         sos_paths=(f"sos_commands/networking/ethtool_-S_{NETDEV}",)),
    Spec("mlnx_qos", "mlnx_qos -i per RoCE interface (trust state, PFC per priority, DSCP-to-priority map)",
         argv=("mlnx_qos", "-i", NETDEV), timeout=10, per_netdev=True),
    Spec("net.routes", "IPv4 routing table (which interfaces share a subnet)",
         paths=("proc/net/route",)),
    # --- NUMA, CPUs, IRQs ---------------------------------------------------------------------
    Spec("numa.nodes", "NUMA nodes, their CPUs and distances",
         paths=("sys/devices/system/node/{online,possible,has_cpu,has_memory}",
                "sys/devices/system/node/node*/{cpulist,distance}",
                "sys/devices/system/cpu/{online,present}")),
    Spec("numactl_hardware", "numactl --hardware: NUMA nodes, their CPUs and distances, where no node folders are "
         "recorded (sosreports' numa plugin, nvidia-bug-report logs)",
         sos_paths=("sos_commands/numa/numactl_--hardware",)),
    Spec("cpu.governor", "CPU frequency governor and driver of CPU 0",
         paths=("sys/devices/system/cpu/cpu0/cpufreq/{scaling_governor,scaling_driver,"
                "energy_performance_preference}",)),
    Spec("irqs", "interrupts and their CPU affinity",
         paths=("proc/interrupts", "proc/irq/*/{smp_affinity_list,effective_affinity_list,affinity_hint}")),
    # --- processes ------------------------------------------------------------------------------
    Spec("proc.processes", "processes: argv (secrets masked), status, allowlisted environment",
         paths=("proc/[0-9]*/cmdline", "proc/[0-9]*/status", "proc/[0-9]*/environ"),
         sanitizer="proc", limit=20000),
    Spec("ps", "ps auxwwwm (sosreports: processes without environment)",
         sos_paths=("sos_commands/process/ps_auxwwwm", "sos_commands/process/ps_auxwww",
                    "sos_commands/process/ps_auxfwww")),
    # --- kernel -------------------------------------------------------------------------------
    Spec("kernel.cmdline", "kernel command line (values of parameters no check judges masked)",
         paths=("proc/cmdline",), sanitizer="cmdline"),
    Spec("kernel.version", "kernel version", paths=("proc/version", "proc/sys/kernel/osrelease")),
    Spec("kernel.modules", "loaded kernel modules", paths=("proc/modules",),
         sos_paths=("proc/modules", "sos_commands/kernel/lsmod")),
    Spec("sysctl", "sysctls that matter for GPU nodes",
         paths=("proc/sys/net/core/{rmem_max,wmem_max,rmem_default,wmem_default,netdev_max_backlog,"
                "somaxconn,default_qdisc}",
                "proc/sys/net/ipv4/{tcp_rmem,tcp_wmem,tcp_slow_start_after_idle,tcp_mtu_probing,"
                "tcp_congestion_control,tcp_timestamps,tcp_sack,tcp_window_scaling}",
                "proc/sys/kernel/{numa_balancing,hostname,osrelease}",
                "proc/sys/vm/{zone_reclaim_mode,swappiness}",
                "proc/sys/net/ipv4/conf/*/{rp_filter,arp_ignore,arp_announce}")),
    Spec("sysctl_a", "sysctl -a (sosreports)", sos_paths=("sos_commands/kernel/sysctl_-a",)),
    Spec("dmesg", "kernel ring buffer (NVRM Xid events, PCIe bandwidth at probe); refused to non-root "
                  "when kernel.dmesg_restrict=1",
         argv=("dmesg",), timeout=10, sos_paths=("sos_commands/kernel/dmesg",)),
    Spec("sysctl.files", "persistent sysctl settings",
         paths=("etc/sysctl.conf", "etc/sysctl.d/*.conf")),
    Spec("modprobe.files", "modprobe configuration (vfio-pci ids, softdeps)",
         paths=("etc/modprobe.d/*.conf",)),
    Spec("thp", "transparent huge pages",
         paths=("sys/kernel/mm/transparent_hugepage/{enabled,defrag}",)),
    # --- host identity and virtualisation -----------------------------------------------------
    Spec("host.identity", "hostname, machine id, OS release",
         paths=("etc/hostname", "etc/machine-id", "etc/os-release"),
         sos_paths=("etc/hostname", "etc/machine-id", "etc/os-release", "hostname",
                    "sos_commands/host/hostname", "sos_commands/host/hostname_-f")),
    Spec("host.dmi", "DMI system and board vendor, chassis type (virtual machine and laptop detection, board serial)",
         paths=("sys/class/dmi/id/{sys_vendor,product_name,board_vendor,board_name,product_uuid,"
                "board_serial,product_serial,chassis_type}", "sys/hypervisor/type")),
    Spec("host.cpuinfo", "first processor block of /proc/cpuinfo (hypervisor flag, model)",
         paths=("proc/cpuinfo",), sanitizer="cpuinfo"),
    # --- orchestration and deployment -------------------------------------------------------------
    Spec("kubelet", "kubelet configuration and CPU/topology manager state",
         sos_paths=("etc/kubernetes/kubelet-config.yaml", "root/cdk/kubelet/config.yaml"),
         paths=("var/lib/kubelet/config.yaml", "var/lib/kubelet/cpu_manager_state",
                "var/lib/kubelet/kubeadm-flags.env", "etc/kubernetes/kubelet-config.yaml",
                "etc/systemd/system/kubelet.service.d/*.conf")),
    Spec("deploy.files", "systemd units, compose files and Kubernetes manifests that start servers",
         paths=("etc/systemd/system/*.service", "etc/systemd/system/*.service.d/*.conf",
                "etc/kubernetes/manifests/*.{yaml,yml}", "etc/docker/compose/*.{yaml,yml}",
                "etc/compose/*.{yaml,yml}", "etc/default/vllm", "etc/default/sglang"),
         sanitizer="deploy"),
    Spec("apt.auto_upgrades", "unattended upgrades configuration",
         paths=("etc/apt/apt.conf.d/{20auto-upgrades,50unattended-upgrades}",)),
)

BY_NAME: dict[str, Spec] = {s.name: s for s in SPECS}


def get(name: str) -> Spec:
    """The spec called ``name`` (a programming error if it does not exist)."""
    return BY_NAME[name]


def expand_braces(pattern: str) -> list[str]:
    """Expand one level of ``{a,b}`` alternatives (repeatedly), as a shell would."""
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    end = pattern.find("}", start)
    if end < 0:
        return [pattern]
    head, body, tail = pattern[:start], pattern[start + 1:end], pattern[end + 1:]
    out: list[str] = []
    for alt in body.split(","):
        out.extend(expand_braces(head + alt + tail))
    return out

# --- data-centre GPU state, serving-process limits (issue 13) ------------------------------------
SPECS += (
    Spec("nvlink_status", "nvidia-smi nvlink -s (per-link NVLink speed, inactive links)",
         argv=("nvidia-smi", "nvlink", "-s"), timeout=30, sos_paths=("sos_commands/nvidia/nvidia-smi_nvlink_-s",)),
    Spec("nvlink_errors", "nvidia-smi nvlink -e (per-link replay, recovery and CRC error counters)",
         argv=("nvidia-smi", "nvlink", "-e"), timeout=30, sos_paths=("sos_commands/nvidia/nvidia-smi_nvlink_-e",)),
    Spec("fabricmanager_version", "nv-fabricmanager --version (must match the driver on NVSwitch systems)",
         argv=("nv-fabricmanager", "--version"), timeout=10),
)
BY_NAME.update({s.name: s for s in SPECS})
SPECS += (
    Spec("proc.limits", "resource limits of processes (Max locked memory for RDMA registration)",
         paths=("proc/[0-9]*/limits",), limit=20000),
    Spec("proc.shm", "the /dev/shm mount each process sees (containers: --shm-size); only that line is kept",
         paths=("proc/[0-9]*/mounts",), sanitizer="mounts", limit=20000),
    Spec("hugepages", "hugepages allocated per size and the default size",
         paths=("proc/meminfo", "sys/kernel/mm/hugepages/*/nr_hugepages", "proc/sys/vm/nr_hugepages"),
         sos_paths=("proc/meminfo",)),
)
BY_NAME.update({s.name: s for s in SPECS})
