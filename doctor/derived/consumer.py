"""Consumer (GeForce/TITAN) GPUs: no PCIe peer-to-peer between them and no GPUDirect RDMA.

NVIDIA's GPUDirect RDMA documentation lists data-centre and professional (Quadro/RTX) parts only, and
the GeForce driver refuses PCIe peer access (``cudaDeviceCanAccessPeer`` is 0 without an NVLink bridge),
so NCCL uses host memory on these cards whatever the environment says.
"""

from __future__ import annotations

import re

from doctor.facts import Facts, Gpu
from doctor.lazyre import lazy

CONSUMER_NAME = lazy(r"\b(GeForce|TITAN)\b", re.IGNORECASE)


def is_consumer(gpu: Gpu) -> bool:
    return bool(gpu.name and CONSUMER_NAME.search(gpu.name))


def all_consumer(facts: Facts) -> bool:
    """Every GPU of the node is a consumer card (and there is at least one)."""
    gpus = facts.gpus.gpus
    return bool(gpus) and all(is_consumer(g) for g in gpus)


def consumer_names(facts: Facts) -> str:
    names = sorted({g.name or "?" for g in facts.gpus.gpus if is_consumer(g)})
    return ", ".join(names)
