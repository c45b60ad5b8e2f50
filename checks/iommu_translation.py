"""iommu.translation: the IOMMU translating DMA (not passthrough) on a bare-metal multi-GPU or GPU+RDMA host."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.iommu import VFIO_DRIVERS
from doctor.derived.net import is_rdma_nic, subject_nics
from doctor.facts import Facts
from doctor.facts.iommu import TRANSLATED
from doctor.findings import HIGH, LOW, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.fixes.boot import grub_note, os_family
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.record import record
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#iommu-on-linux",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs",
    "https://docs.kernel.org/admin-guide/kernel-parameters.html",
)
AMD = 0x1022
#: Boot parameters that switch the IOMMU off entirely.
OFF_PARAMS = {"intel_iommu": "off", "amd_iommu": "off", "iommu": "off"}
PT = "iommu=pt"
#: Parameters that force translation and must go when adding iommu=pt.
FORCE_TRANSLATE = ("iommu.passthrough=0",)


@record
class Mode:
    mode: str  # "translated", "passthrough", "off", "vfio" or "unknown"
    evidence: tuple[Evidence, ...]
    confidence: float = 1.0
    why: str = ""


def iommu_mode(facts: Facts) -> Mode:
    """The DMA mode of the GPU/NIC groups, from the group type files, else the boot command line."""
    addresses = [d.address for d in facts.pci.gpus] + [n.address for n in subject_nics(facts)]
    groups = {g.name: g for a in addresses if (g := facts.iommu.group_of(a)) is not None}
    typed = [g for g in groups.values() if g.type]
    if typed:
        bad = [g for g in typed if g.type in TRANSLATED]
        if bad:
            return Mode("translated", tuple(Evidence(f"{g.origin}/type", g.type or "") for g in bad[:4]),
                        why=N_('{n_bad} IOMMU group(s) holding GPUs or NICs are of type {v} (translated DMA)', n_bad=len(bad), v=join('/', sorted({g.type or '' for g in bad}))))
        kinds = {g.type for g in typed}
        ev = tuple(Evidence(f"{g.origin}/type", g.type or "") for g in typed[:2])
        return Mode("vfio" if kinds == {"unmanaged"} else "passthrough", ev)
    params = facts.cmdline.params
    cl = facts.cmdline.origin
    if facts.cmdline.raw is None and not facts.iommu.groups:
        return Mode("unknown", (Evidence(cl, "not recorded"),), why=N_('no boot command line and no IOMMU groups'))
    if any(params.get(k) == v for k, v in OFF_PARAMS.items()):
        return Mode("off", (Evidence(cl, facts.cmdline.raw or ""),))
    if params.get("iommu") == "pt" or params.get("iommu.passthrough") == "1":
        return Mode("passthrough", (Evidence(cl, facts.cmdline.raw or ""),))
    if params.get("iommu.passthrough") == "0":
        return Mode("translated", (Evidence(cl, facts.cmdline.raw or ""),), 0.9,
                    N_('the boot line forces translation (iommu.passthrough=0)'))
    if facts.iommu.active is False:
        return Mode("off", (Evidence("sys/class/iommu", "no IOMMU units"),))
    if params.get("intel_iommu") == "on":
        return Mode("translated", (Evidence(cl, facts.cmdline.raw or ""),), 0.8,
                    N_('intel_iommu=on without iommu=pt (translated by default)'))
    amd = any(d.vendor == AMD and d.base_class == 0x0600 for d in facts.pci.devices.values())
    if amd and facts.iommu.active:
        return Mode("translated", (Evidence(cl, facts.cmdline.raw or ""),
                                   Evidence("sys/class/iommu", join(', ', facts.iommu.units))), 0.7,
                    N_('AMD IOMMU active (on by default) and no iommu=pt on the boot line'))
    return Mode("unknown", (Evidence(cl, facts.cmdline.raw or "not recorded"),),
                why=N_('no IOMMU group types and nothing decisive on the boot line'))


def _mig(facts: Facts, address: str) -> bool:
    gpu = facts.gpus.by_address(address)
    return bool(gpu is not None and gpu.runtime is not None and gpu.runtime.mig_mode)


@check("iommu.translation", "IOMMU translating GPU/NIC DMA instead of passthrough", "iommu", acts="os", fixes=("kernel_args",), needs=("pci",),
       reads=reads(params=(*OFF_PARAMS, "iommu.passthrough")))
def iommu_translation(facts: Facts) -> Iterator[Finding]:
    """IOMMU in translated mode (groups of type DMA/DMA-FQ, intel_iommu=on or AMD default without
    iommu=pt, iommu.passthrough=0) on bare metal: high with more than one GPU or a GPU and an RDMA NIC
    (PCIe P2P and GPUDirect need passthrough), low otherwise.
    """
    gpus = facts.pci.gpus
    if facts.host.is_vm or not gpus:
        return
    mode = iommu_mode(facts)
    rdma = [n for n in subject_nics(facts) if is_rdma_nic(facts, n)]
    # GPUs handed to VMs (vfio-pci) and MIG-partitioned GPUs do no peer-to-peer on this host
    host_gpus = [g for g in gpus if g.driver not in VFIO_DRIVERS]
    p2p_gpus = [g for g in host_gpus if not _mig(facts, g.address)]
    p2p = len(p2p_gpus) > 1 or (bool(rdma) and bool(p2p_gpus))
    if mode.mode == "unknown":
        yield Finding(UNKNOWN, "node", N_('IOMMU mode not determined'), detail=mode.why, evidence=mode.evidence)
        return
    if mode.mode != "translated":
        yield Finding(PASS, "node", N_('IOMMU {mode}', mode=mode.mode), evidence=mode.evidence)
        return
    params = facts.cmdline.params
    remove = tuple(p for p in FORCE_TRANSLATE if f"{p.split('=')[0]}" in params
                   and params[p.split("=")[0]] == p.split("=")[1])
    who = (N_("{n} GPUs and {nics} RDMA NIC(s)", n=len(p2p_gpus), nics=len(rdma)) if rdma
           else N_("{n} GPUs", n=len(p2p_gpus)))
    skipped = len(gpus) - len(p2p_gpus)
    aside = (N_(' {skipped} GPU(s) on vfio-pci or in MIG mode do no peer-to-peer here, so only host DMA overhead applies to them.', skipped=skipped) if skipped else "")
    yield Finding(
        HIGH if p2p else LOW, "node", N_('IOMMU translates GPU/NIC DMA (no iommu=pt)'),
        detail=N_('{why}. With {who}, every peer-to-peer and GPUDirect RDMA transfer goes through IOMMU translation: the CUDA guide calls bare-metal P2P with the IOMMU enabled unsupported, and NVIDIA recommends iommu=pt.', why=mode.why, who=who) + aside if p2p else N_('{why}. Host-device DMA pays IOTLB misses.', why=mode.why) + aside,
        evidence=mode.evidence, expected=N_('IOMMU groups of type identity (iommu=pt)'),
        observed=mode.why, impact=Impact(50 if p2p else 5,
                                         N_('P2P and GPUDirect RDMA slow down, fail or hang; DMA mapping overhead on every transfer') if p2p else N_('IOTLB overhead on host-device DMA'), basis=(N_('NVIDIA GPUDirect RDMA and NCCL troubleshooting guides: with DMA translation on, peer-to-peer traffic goes up to the root complex to be translated; they recommend iommu=pt') if p2p else N_('each host-device DMA is mapped through the IOMMU; the cost is small for large transfers'))),
        fix=make("kernel_args", add=[PT], remove=list(remove), os_family=os_family(facts.host.os_release),
                notes=N_('Needs a reboot. Keep intel_iommu=on if VFIO or SR-IOV is used: iommu=pt leaves the IOMMU on for those and passes host DMA through. ') + grub_note(facts.host.os_release)),
        references=REFERENCES, related=tuple(g.address for g in gpus[:8]), confidence=mode.confidence)
