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
    "nccl.transport": ("service_edit",),
    "net.link": ("link_up", "link_autoneg", "link_mtu"),
    "net.socket_buffers": ("sysctl",),
    "net.tcp_tuning": ("sysctl",),
    "numa.irq_affinity": ("irq_affinity",),
    "numa.kernel_policy": ("sysctl",),
    "numa.kubelet_policy": ("kubelet_policy",),
    "numa.process_affinity": ("taskset",),
    "pcie.acs_redirect": ("acs_redirect",),
    "pcie.link_downgrade": ("pcie_retrain",),
    "rdma.gdr_module": ("module_load",),
    "rdma.gid_index": ("service_edit", "show_addresses"),
    "rdma.port_state": ("rdma_port",),
    "runtime.cuda_graphs": ("service_edit",),
    "runtime.debug_env": ("service_edit",),
    "vfio.binding": ("vfio_release", "vfio_group", "driver_override_clear"),
    "baseline.deviation": ("inspect_pci", "sysctl"),
}.items()}


def allowed(check: str, builder: str) -> bool:
    """Whether ``check`` produces fixes with ``builder``."""
    return builder in CHECK_BUILDERS.get(check, frozenset())
