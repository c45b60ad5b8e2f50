"""GPUs and what they relate to: their label and activity, their nearest NIC and NUMA nodes."""

from __future__ import annotations

from doctor.derived import cached
from doctor.derived.net import is_rdma_nic, subject_nics
from doctor.derived.paths import NicIndex
from doctor.facts import Facts, PciDevice
from doctor.record import record


def gpu_activity(facts: Facts, address: str) -> str:
    """``busy``, ``idle`` or ``unknown`` for the GPU at ``address`` (docs/checks.md#pcie-link-downgrade: idle gating)."""
    gpu = facts.gpus.by_address(address)
    return gpu.activity if gpu is not None else "unknown"


def gpu_idle(facts: Facts, address: str) -> bool:
    """Whether a GPU's link may sit at a lower speed on purpose: a GPU not known to be busy."""
    return gpu_activity(facts, address) != "busy"


def gpu_label(facts: Facts, address: str) -> str:
    """``"GPU 3 (0000:9a:00.0)"`` when the index is known, else the address."""
    gpu = facts.gpus.by_address(address)
    return f"GPU {gpu.index} ({address})" if gpu is not None else address


@record
class GpuNic:
    """A GPU, the RDMA-capable NIC closest to it (None: no such NIC), the path word and both NUMA nodes."""

    gpu: PciDevice
    nic: PciDevice | None
    word: str | None
    gpu_numa: int | None
    nic_numa: int | None


def gpu_nics(facts: Facts) -> list[GpuNic]:
    """Each GPU with its nearest RDMA-capable NIC (what NCCL would pair it with), computed once."""
    return list(cached(facts, "relations.gpu_nics", lambda: tuple(_gpu_nics(facts))))


def _gpu_nics(facts: Facts) -> list[GpuNic]:
    nics = [n for n in subject_nics(facts) if is_rdma_nic(facts, n)]
    out = []
    index = NicIndex(facts.pci, nics, facts.numa)
    for gpu in facts.pci.gpus:
        hit = index.nearest(gpu.address)
        nic, word = hit if hit is not None else (None, None)
        out.append(GpuNic(gpu, nic, word, gpu.numa_node, nic.numa_node if nic is not None else None))
    return out
