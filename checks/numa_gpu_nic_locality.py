"""numa.gpu_nic_locality: GPUs whose nearest RDMA NIC hangs off another socket (NCCL path SYS)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from doctor.derived.net import is_rdma_nic, subject_nics
from doctor.derived.paths import NicIndex
from doctor.facts import Facts
from doctor.findings import HIGH, INFO, LOW, PASS, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-gdr-level-formerly-nccl-ib-gdr-level",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-topology",
)


@check("numa.gpu_nic_locality", "Each GPU has an RDMA NIC on its socket", "numa", acts="hardware", needs=("pci",))
def gpu_nic_locality(facts: Facts) -> Iterator[Finding]:
    """Nearest RDMA NIC at path word SYS (another socket): high when RDMA ports are active (multi-node or KV
    transfer), since NCCL then turns GPUDirect RDMA off; NODE (same NUMA node, another PCIe host bridge): info,
    the normal layout of servers whose GPUs and NICs sit on separate CPU root ports.
    """
    numa = facts.numa
    gpus = facts.gpus.gpus
    if not numa.multi_node or not gpus:
        return
    nics = [d for d in subject_nics(facts) if is_rdma_nic(facts, d)]
    if not nics:
        return
    active = any(p.active for p in facts.rdma)
    checked = 0
    found = False
    same_node: list[Finding] = []
    index = NicIndex(facts.pci, nics, numa)
    for gpu in gpus:
        hit = index.nearest(gpu.address)
        if hit is None or hit[1] is None:
            continue
        nic, word = hit
        checked += 1
        if word not in ("SYS", "NODE"):
            continue
        found = True
        ports = [p.name for p in facts.rdma_of(nic.address)]
        gpu_node = gpu.pci.numa_node if gpu.pci else None
        evidence = (Evidence(gpu.pci.attr("numa_node") if gpu.pci else gpu.address, str(gpu_node)),
                    Evidence(nic.attr("numa_node"), str(nic.numa_node)),
                    Evidence("PCI topology", f"GPU {gpu.index} {gpu.address} -> {nic.address} "
                                             f"({join(', ', ports) or 'NIC'}): {word}"))
        if word == "SYS":
            yield Finding(
                HIGH if active else LOW, gpu.address,
                N_("GPU {index}'s nearest RDMA NIC {address} is on another socket (SYS)", index=gpu.index, address=nic.address),
                detail=(N_("GPU {index} is on NUMA node {gpu_node}; the closest RDMA NIC ({v}) is on node {numa_node}. NCCL uses GPUDirect RDMA only up to PXB by default, so this GPU's network traffic is staged through host memory and crosses the socket interconnect.", index=gpu.index, gpu_node=gpu_node, v=join(', ', ports) or nic.address, numa_node=nic.numa_node)
                        + ("" if active else N_(' No RDMA port is active, so this matters only once the fabric is used.'))),
                evidence=evidence, expected=N_('an RDMA NIC under the same PCIe switch or root port (PIX/PXB)'),
                observed=N_('nearest NIC at {word}', word=word),
                impact=Impact(40 if active else 5, N_('no GPUDirect RDMA for this GPU: lower bandwidth, more latency'), basis=N_('NCCL uses GPUDirect RDMA only when the GPU-NIC path is within NCCL_NET_GDR_LEVEL (default PHB or closer); across sockets it copies through host memory')),
                fix=Fix(notes=N_('Move the NIC (or GPU) to a slot on the same socket, ideally the same PCIe switch; check `nvidia-smi topo -m`. NCCL_NET_GDR_LEVEL=SYS forces GDR across sockets but is usually slower than staging.')),
                references=REFERENCES, related=(nic.address, *ports))
        else:
            same_node.append(Finding(
                INFO, gpu.address, N_("GPU {index}'s nearest RDMA NIC {address} is on the same NUMA node but another PCIe root complex (NODE)", index=gpu.index, address=nic.address),
                detail=(N_('GPU {index} and {v} are both on NUMA node {gpu_node} but under different PCIe host bridges, as on servers whose GPUs and NICs sit on their own CPU root ports. NCCL uses GPUDirect RDMA only up to PXB by default, so network data is staged through host memory on the same socket; only a PCIe switch shared by GPU and NIC changes that.', index=gpu.index, v=join(', ', ports) or nic.address, gpu_node=gpu_node)),
                evidence=evidence, expected=N_('PIX/PXB for GPUDirect RDMA'), observed="NODE",
                impact=Impact(2, N_('GPUDirect RDMA off by default at NODE; no socket crossing'), basis=N_("NCCL's default GDR level excludes NODE paths; no socket is crossed")), references=REFERENCES,
                related=(nic.address, *ports)))
    if len(same_node) > 1:
        first = same_node[0]
        yield replace(first, subject="node",
                      title=N_("{n} GPUs' nearest RDMA NICs are on their NUMA node but another PCIe root complex "
                               "(NODE)", n=len(same_node)),
                      detail=first.detail.split(". ", 1)[1] if ". " in first.detail else first.detail,
                      evidence=tuple(f.evidence[-1] for f in same_node),
                      related=tuple(dict.fromkeys(r for f in same_node for r in (f.subject, *f.related))))
    elif same_node:
        yield same_node[0]
    if checked and not found:
        yield Finding(PASS, "node", N_('every GPU of {checked} has an RDMA NIC on its socket', checked=checked))
