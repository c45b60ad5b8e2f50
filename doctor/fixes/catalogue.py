"""Which fix builders each check uses: a fix script rebuilds a finding's fix only through these."""

from __future__ import annotations

CHECK_BUILDERS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "cpu.governor": ("cpu_governor",),
    "gpu.driver_mismatch": ("driver_reload",),
    "gpu.persistence_mode": ("persistence_mode",),
    "gpu.row_remap": ("gpu_reset",),
    "gpu.xid_errors": ("gpu_reset",),
    "iommu.translation": ("kernel_args",),
    "kernel.thp": ("thp_defrag",),
    "nccl.transport": ("unit_env", "file_patch", "process_restart"),
    "net.link": ("link_up", "link_autoneg", "link_mtu"),
    "net.socket_buffers": ("sysctl",),
    "net.tcp_tuning": ("sysctl",),
    "numa.irq_affinity": ("irq_affinity",),
    "numa.kernel_policy": ("sysctl",),
    "numa.kubelet_policy": ("kubelet_policy",),
    "numa.process_affinity": ("taskset",),
    "pcie.acs_redirect": ("acs_redirect",),
    "pcie.link_downgrade": ("pcie_retrain", "inspect_pci"),
    "gpu.clock_throttle": ("gpu_power_limit", "gpu_app_clocks"),
    "rdma.gdr_module": ("module_load",),
    "rdma.gid_index": ("unit_env", "file_patch", "process_restart", "show_addresses"),
    "rdma.port_state": ("rdma_port",),
    "runtime.cuda_graphs": ("unit_exec", "unit_flag", "file_patch", "process_restart"),
    "runtime.debug_env": ("unit_env", "file_patch", "process_restart"),
    "vfio.binding": ("vfio_release", "vfio_group", "driver_override_clear"),
    "baseline.deviation": ("inspect_pci", "sysctl"),
    "gpu.fabric": ("fabric_manager",),
    "gpu.nvlink": ("gpu_query",),
    "gpu.ecc": ("ecc_mode",),
    "gpu.mig": ("mig_mode",),
    "gpu.compute_mode": ("compute_mode",),
    "pcie.replay": ("gpu_query",),
    "runtime.memlock": ("prlimit_memlock",),
    "runtime.shm": ("shm_resize",),
    "kernel.hugepages": ("hugepages",),
    "rdma.lossless": ("roce_ecn", "roce_qos"),
    "net.drops": ("rdma_counters_show",),
    "rdma.mtu": ("rdma_show",),
    "net.multirail": ("sysctl",),
    "sysctl.persistence": ("sysctl",),
}.items()}


#: The sysctls each check sets (checks not listed may set any sysctl the builder knows)
CHECK_SYSCTLS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "net.socket_buffers": ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"),
    "net.tcp_tuning": ("net.ipv4.tcp_slow_start_after_idle", "net.core.netdev_max_backlog", "net.core.somaxconn"),
    "numa.kernel_policy": ("kernel.numa_balancing", "vm.zone_reclaim_mode"),
    "net.multirail": ("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.*.arp_ignore", "net.ipv4.conf.*.arp_announce"),
}.items()}


def _generic(key: str) -> str:
    from doctor.fixes.sysctl_keys import generic_key

    return generic_key(key)


def allowed(check: str, builder: str) -> bool:
    """Whether ``check`` produces fixes with ``builder``."""
    return builder in CHECK_BUILDERS.get(check, frozenset())


def refusal(check: str, builder: str, params: object) -> str:
    """Why ``check`` could not have produced a ``builder`` fix with ``params``; "" when it could."""
    if not allowed(check, builder):
        return f"check {check} does not produce {builder or 'builder-less'} fixes"
    keys = CHECK_SYSCTLS.get(check)
    wanted = params.get("set") if isinstance(params, dict) else None
    if builder == "sysctl" and keys is not None and isinstance(wanted, dict):
        extra = sorted(k for k in wanted if str(k) not in keys and _generic(str(k)) not in keys)
        if extra:
            return f"check {check} does not set {extra[0]}"
    return ""
