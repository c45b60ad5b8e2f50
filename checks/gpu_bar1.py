"""gpu.bar1: BAR1 aperture smaller than the framebuffer on a data-centre GPU (Above 4G decoding / ReBAR off)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import is_datacentre, reported, smi_evidence
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, Finding, Fix, Impact
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/cuda/gpudirect-rdma/index.html",
              "https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_GPU_BAR1_Memory_Usage.pdf")


@check("gpu.bar1", "BAR1 aperture smaller than the GPU's memory", "gpu", acts="hardware", needs=("gpus",))
def gpu_bar1(facts: Facts) -> Iterator[Finding]:
    """Medium when a data-centre GPU's BAR1 is smaller than its framebuffer: the BIOS did not map the
    large BAR (Above 4G decoding / Resizable BAR / MMIO high size off), so GPUDirect RDMA and peer
    mappings are squeezed into a small window (registrations fail or fall back to staging copies)."""
    gpus = [(g, rt) for g, rt in reported(facts) if is_datacentre(g) and rt.bar1_total_mib and rt.fb_total_mib]
    if not gpus:
        return
    small = [(g, rt) for g, rt in gpus if (rt.bar1_total_mib or 0) < (rt.fb_total_mib or 0)]
    for gpu, rt in small:
        yield Finding(
            MEDIUM, gpu_label(facts, gpu.address),
            N_('BAR1 is {bar1_total_mib} MiB for {fb_total_mib} MiB of GPU memory', bar1_total_mib=rt.bar1_total_mib, fb_total_mib=rt.fb_total_mib),
            detail=N_('Data-centre GPUs expose all of their memory through BAR1 when the BIOS maps 64-bit MMIO above 4 GB. A small BAR1 limits what GPUDirect RDMA (NCCL/UCX NIC-to-GPU) and peer-to-peer can map at once: memory registration fails or NCCL falls back to bouncing through host memory.'),
            evidence=(smi_evidence(facts, gpu, N_('bar1_memory_usage total {bar1_total_mib} MiB, fb_memory_usage total {fb_total_mib} MiB', bar1_total_mib=rt.bar1_total_mib, fb_total_mib=rt.fb_total_mib)),),
            expected=N_('BAR1 >= {fb_total_mib} MiB', fb_total_mib=rt.fb_total_mib), observed=N_('{bar1_total_mib} MiB', bar1_total_mib=rt.bar1_total_mib),
            impact=Impact(25, N_('GPUDirect RDMA / P2P registrations fail or fall back to host staging'),
                          basis=N_('NVIDIA GPUDirect RDMA documentation: peer memory is mapped through the BAR1 aperture, so registrations beyond its size fail')),
            fix=Fix(notes=N_("BIOS: enable Above 4G Decoding and Resizable BAR (or the vendor's 'MMIO High Size' / 'PCI 64-bit resource allocation'), then cold boot. On a VM, give the guest a large 64-bit MMIO window (e.g. QEMU -fw_cfg opt/ovmf/X-PciMmio64Mb=262144). Rollback: the same BIOS settings back.")),
            references=REFERENCES, related=(gpu.address,))
    if not small:
        rt0 = gpus[0][1]
        yield Finding(PASS, "node", N_('BAR1 covers the GPU memory on {n_gpus} data-centre GPUs', n_gpus=len(gpus)),
                      evidence=(smi_evidence(facts, gpus[0][0], f"BAR1 {rt0.bar1_total_mib} MiB, "
                                                                f"FB {rt0.fb_total_mib} MiB"),))
