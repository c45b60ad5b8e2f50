"""rdma.gdr_module: a multi-node GPU node with no GPUDirect RDMA path (no peermem module, no DMA-BUF)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import all_consumer, consumer_names, gpu_absent
from doctor.facts import Facts
from doctor.facts.system import NVIDIA_VERSION, PEERMEM_FILES
from doctor.findings import HIGH, INFO, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

#: Peer-memory modules: nvidia-peermem (driver >= 465) and MLNX_OFED's legacy nv_peer_mem.
PEERMEM_MODULES = ("nvidia_peermem", "nv_peer_mem")
#: Ports that need a peer-memory client: InfiniBand and RoCE. AWS EFA (link layer "Unknown") brings its
#: own GPUDirect support in the efa driver.
LINK_LAYERS = frozenset({"infiniband", "ethernet"})
REFERENCES = (
    "https://docs.nvidia.com/cuda/gpudirect-rdma/index.html",
    "https://docs.nvidia.com/networking/display/gpudirectrdmav1/",
    "https://github.com/NVIDIA/nccl/blob/master/src/transport/net_ib/gdr.cc",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-gdr-level-formerly-nccl-ib-gdr-level",
)


@check("rdma.gdr_module", "GPUDirect RDMA peer-memory module or DMA-BUF path", "rdma", acts="os", fixes=("module_load",),
       needs=("gpus", "rdma", "modules"), applies=gpu_absent)
def rdma_gdr_module(facts: Facts) -> Iterator[Finding]:
    """High when GPUs and an active RDMA port exist but NCCL finds neither a peer-memory module nor DMA-BUF.

    NCCL probes ``memory_peers/nv_mem{,_nc}/version`` and ``/sys/module/nvidia_peermem/version``; without
    them (and without DMA-BUF from the open kernel module) inter-node traffic bounces through host memory.
    """
    if not facts.gpus.gpus:
        return
    active = [p for p in facts.rdma if p.active and (p.link_layer or "").lower() in LINK_LAYERS]
    if not active:
        return
    drv = facts.nvidia_driver
    modules = facts.modules
    loaded = sorted(m for m in PEERMEM_MODULES if modules and m in modules)
    ports = join(', ', (p.name for p in active[:4])) + (" ..." if len(active) > 4 else "")
    port_ev = Evidence(active[0].origin, f"{len(active)} active RDMA ports ({ports})")
    if all_consumer(facts):
        yield Finding(
            INFO, "node", N_('consumer GPUs: no GPUDirect RDMA whatever modules are loaded'),
            detail=(N_('{v} do not support GPUDirect RDMA; NCCL stages inter-node traffic through host memory', v=consumer_names(facts)) + (N_(', although {modules} is loaded', modules=", ".join(loaded)) if loaded else N_(', and loading nvidia-peermem would not change that')) + N_('. Data-centre or professional GPUs are needed for a direct NIC-to-GPU path.')),
            evidence=(port_ev, Evidence("proc/modules", ", ".join(loaded) + " loaded" if loaded else "no nvidia_peermem or nv_peer_mem")), references=REFERENCES)
        return
    if drv.peermem or loaded:
        found = [*drv.peermem, *(f"proc/modules: {m}" for m in loaded)]
        consumer = consumer_names(facts)
        yield Finding(PASS, "node", N_('GPUDirect RDMA peer memory available ({v})', v=', '.join(loaded or drv.peermem))
                      + (N_(' for the other GPUs; {consumer} have none', consumer=consumer) if consumer else ""),
                      evidence=(port_ev, *(Evidence(f, "present") for f in found)))
        return
    if drv.open_module:
        yield Finding(PASS, "node", N_('no peermem module, but the open kernel module offers DMA-BUF'),
                      detail=N_('NCCL >= 2.13 uses DMA-BUF for GPUDirect RDMA with the open kernel module on kernels >= 5.12 with rdma-core >= 34; NCCL_DMABUF_ENABLE=0 would disable it.'),
                      evidence=(port_ev, Evidence(NVIDIA_VERSION, drv.version_line or "Open Kernel Module")))
        return
    if modules is None:
        yield Finding(UNKNOWN, "node", N_('GPUDirect RDMA module state not recorded'),
                      detail=N_('Neither the loaded-module list nor the peer-memory version files are in this source.'),
                      evidence=(port_ev, Evidence("kernel.modules", "proc/modules not recorded")))
        return
    evidence = [port_ev, Evidence("proc/modules", "no nvidia_peermem or nv_peer_mem"),
                *(Evidence(f, "missing") for f in PEERMEM_FILES)]
    if drv.version_line:
        evidence.append(Evidence(NVIDIA_VERSION, drv.version_line + " (proprietary module: no DMA-BUF)"))
    yield Finding(
        HIGH, "node", N_('no GPUDirect RDMA: nvidia-peermem not loaded and no DMA-BUF path'),
        detail=N_('{n_gpus} GPUs and {n_active} active RDMA ports, but NCCL finds no peer-memory client and the proprietary kernel module offers no DMA-BUF. Inter-node NCCL traffic is staged through host memory (NET/IB without GDRDMA in NCCL_DEBUG=INFO).', n_gpus=len(facts.gpus.gpus), n_active=len(active)),
        evidence=tuple(evidence), expected=N_('nvidia_peermem loaded (or the open kernel module with DMA-BUF)'),
        observed=N_('no GPUDirect RDMA path'),
        impact=Impact(35, N_('multi-node all-reduce/all-gather bandwidth drops and latency rises; host memory bandwidth and CPU are spent on copies'), basis=N_('GPUDirect RDMA documentation: without nvidia-peermem the NIC cannot reach GPU memory, so NCCL stages network traffic through host memory')),
        fix=make("module_load", module="nvidia-peermem",
                notes=N_('nvidia-peermem ships with the driver (>= 465) and needs MLNX_OFED/DOCA or inbox ib_core with peer-memory support. Alternatively switch to the open kernel module, which gives NCCL a DMA-BUF path.')),
        references=REFERENCES)
