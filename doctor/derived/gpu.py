"""GPU class (consumer or data-centre) and the GPUs' driver view: the one home of both rules.

Consumer (GeForce/TITAN) GPUs have no PCIe peer-to-peer between them and no GPUDirect RDMA: NVIDIA's
GPUDirect RDMA documentation lists data-centre and professional (Quadro/RTX) parts only, and the
GeForce driver refuses PCIe peer access (``cudaDeviceCanAccessPeer`` is 0 without an NVLink bridge),
so NCCL uses host memory on these cards whatever the environment says. Data-centre GPUs are 3D
controllers (no display engine) or carry a data-centre model name; their ECC, MIG, BAR1, fabric and
persistence state is what the data-centre checks judge.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import Evidence
from doctor.i18n import N_
from doctor.lazyre import lazy

if TYPE_CHECKING:
    from doctor.parsers.nvidia_smi import SmiGpu

CONSUMER_NAME = lazy(r"\b(GeForce|TITAN)\b", re.IGNORECASE)
#: 3D controllers (no display engine) are data-centre parts; these names are too, whatever the class.
DATACENTRE_CLASS = 0x0302
DATACENTRE_NAME = lazy(r"\b([ABHL]\d{1,3}[A-Z]?|[GB]B?\d{3}|GH200|T4|V100|P100|Tesla|Data Center)\b")


def is_consumer(gpu: Gpu) -> bool:
    return bool(gpu.name and CONSUMER_NAME.search(gpu.name))


def is_datacentre(gpu: Gpu) -> bool:
    if is_consumer(gpu):
        return False  # GeForce/TITAN by name, whatever PCI class the board reports
    if gpu.pci is not None and gpu.pci.base_class == DATACENTRE_CLASS:
        return True
    return bool(gpu.name and "GeForce" not in gpu.name and DATACENTRE_NAME.search(gpu.name))


def all_consumer(facts: Facts) -> bool:
    """Every GPU of the node is a consumer card (and there is at least one)."""
    gpus = facts.gpus.gpus
    return bool(gpus) and all(is_consumer(g) for g in gpus)


def consumer_names(facts: Facts) -> str:
    names = sorted({g.name or "?" for g in facts.gpus.gpus if is_consumer(g)})
    return ", ".join(names)


def runtime_where(facts: Facts) -> str:
    """The file or interface the GPUs' runtime state came from."""
    return facts.gpus.runtime_origin or "nvidia-smi -q -x"


def reported(facts: Facts) -> list[tuple[Gpu, SmiGpu]]:
    """GPUs with a driver view (NVML or nvidia-smi), in index order."""
    return [(g, g.runtime) for g in facts.gpus.gpus if g.runtime is not None]


def smi_evidence(facts: Facts, gpu: Gpu, text: str) -> Evidence:
    return Evidence(runtime_where(facts), f"{gpu_label(facts, gpu.address)}: {text}")


def gpu_absent(facts: Facts) -> str | None:
    """Why GPU checks do not apply: no NVIDIA GPU on the PCI bus nor in the driver's view; else None."""
    if facts.gpus.gpus or any(d.vendor == 0x10DE for d in facts.pci.gpus):
        return None
    return N_("no NVIDIA GPU on the PCI bus or in the driver's view")
