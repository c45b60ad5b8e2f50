"""pcie.chipset_slot: GPUs or fast NICs behind the chipset (PCH/Promontory); switch hops and NCCL path words."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.chipset import amd_chipset, intel_pch
from doctor.derived.net import is_rdma_nic, is_virtual_nic, subject_nics
from doctor.derived.paths import GDR_WORDS, NicIndex, switch_hops
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, PciDevice
from doctor.facts.pcie_gen import link_bandwidth
from doctor.findings import HIGH, INFO, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, Nn_, join
from doctor.registry import check

REFERENCES = (
    "https://www.intel.com/content/dam/www/public/us/en/documents/datasheets/6-chipset-c200-chipset-datasheet.pdf",
    "https://github.com/NVIDIA/nccl/blob/master/src/include/graph.h",
    "https://github.com/NVIDIA/nccl/blob/master/src/graph/paths.cc",
)
#: A NIC counts as fast (worth a CPU slot) at this netdev speed (Mb/s) or link bandwidth (GB/s).
FAST_NIC_MBPS = 25000
FAST_NIC_LINK_GBPS = 7.8
GDR_NOTE = N_('NCCL uses GPUDirect RDMA and PCIe P2P only at PIX or PXB.')
CHIPSET_UPLINK = "DMI 3.0 x4 (about 3.9 GB/s) or DMI 4.0 x8 (about 15.8 GB/s)"


def _fast_nic(facts: Facts, nic: PciDevice) -> bool:
    if is_rdma_nic(facts, nic):
        return True
    if any((n.speed_mbps or 0) >= FAST_NIC_MBPS for n in facts.netdevs_of(nic.address)):
        return True
    bw = link_bandwidth(nic.max_speed, nic.max_width)
    return bw is not None and bw >= FAST_NIC_LINK_GBPS


def _path_source(dev: PciDevice) -> str:
    return f"readlink -f /{dev.origin}" if dev.origin.startswith("sys/") else dev.origin


def _no_path(dev: PciDevice) -> bool:
    return dev.host_bridge is None and len(dev.path) <= 1


def _chipset_finding(facts: Facts, dev: PciDevice, label: str, kind: str) -> Finding | None:
    pch = intel_pch(facts, dev)
    amd = amd_chipset(facts, dev)
    if pch is None and not amd:
        return None
    if pch is not None:
        root, why = pch
        evidence: tuple[Evidence, ...] = (Evidence(root.attr("device") + ", name", why),)
        related: tuple[str, ...] = (root.address,)
        what = N_('Intel PCH root port {address}', address=root.address)
    else:
        evidence = tuple(Evidence(b.attr("device") + ", name", why) for b, why in amd)
        related = tuple(b.address for b, _ in amd)
        what = N_('AMD chipset bridge {address}', address=amd[0][0].address)
    return Finding(
        HIGH, label, N_('{kind} is behind the chipset ({what}), not a CPU root port', kind=kind, what=what),
        detail=N_('All traffic of {label} crosses the chipset uplink, {CHIPSET_UPLINK}, shared with SATA, USB and on-board NICs; PCIe peer-to-peer with GPUs on CPU root ports is not possible.', label=label, CHIPSET_UPLINK=CHIPSET_UPLINK),
        evidence=evidence, expected=N_('a CPU-attached root port'), observed=what,
        impact=Impact(45, N_('capped by the chipset uplink ({CHIPSET_UPLINK}), shared; no P2P or GPUDirect', CHIPSET_UPLINK=CHIPSET_UPLINK), basis=N_('every device behind the chipset shares its uplink ({CHIPSET_UPLINK}); peer-to-peer and GPUDirect need a CPU-attached slot', CHIPSET_UPLINK=CHIPSET_UPLINK)),
        fix=Fix(notes=N_("Move the card to a slot wired to the CPU (see the board manual's block diagram); no OS setting changes this.")),
        references=REFERENCES, related=related)


def _hops_text(hops: int | None) -> str:
    if hops is None:
        return N_('path unknown')
    if hops == 0:
        return N_('directly below a root port')
    return Nn_('behind {n} PCIe switch below a root port', 'behind {n} PCIe switches below a root port', hops)


def _topology_info(facts: Facts, gpu: PciDevice, label: str, nics: NicIndex | None) -> tuple[Finding, str, str]:
    """The info finding for one GPU, plus its hop text and nearest-NIC word (for the summary)."""
    hops = _hops_text(switch_hops(facts.pci, gpu.address))
    root = facts.pci.root_port(gpu.address)
    near = nics.nearest(gpu.address) if nics is not None else None
    parts = [N_("{hops} ({port})", hops=hops, port=root.address if root else "?")]
    detail = ""
    word = "none"
    if near is not None:
        nic, found = near
        word = found or "unknown"
        names = [p.device for p in facts.rdma_of(nic.address)] or [n.name for n in facts.netdevs_of(nic.address)]
        parts.append(N_('nearest RDMA/fast NIC {address}{v} at {word}', address=nic.address, v=' (' + names[0] + ')' if names else '', word=word))
        if found is not None and found not in GDR_WORDS:
            detail = N_("{GDR_NOTE} This GPU's nearest NIC is at {found}: its network traffic bounces through host memory.", GDR_NOTE=GDR_NOTE, found=found)
    else:
        parts.append(N_('no RDMA or fast NIC'))
    finding = Finding(INFO, label, join('; ', parts), detail=detail,
                      evidence=(Evidence(_path_source(gpu), join(' -> ', gpu.path)),),
                      references=REFERENCES, related=((root.address,) if root else ()) + (
                          (near[0].address,) if near else ()))
    return finding, hops, word


def _summary(infos: list[tuple[Finding, str, str]]) -> Finding:
    """One info line for all GPUs: distinct hop/word patterns counted, each GPU listed in the detail."""
    shapes: dict[str, int] = {}
    for _, hops, word in infos:
        key = hops + (N_(', no RDMA or fast NIC') if word == "none" else N_(', nearest NIC at {word}', word=word))
        shapes[key] = shapes.get(key, 0) + 1
    title = N_('GPU PCIe topology: ') + join('; ', (Nn_('{n} GPU {shape}', '{n} GPUs each {shape}', n, shape=k)
                                                   for k, n in shapes.items()))
    far = [f.subject for f, _, _ in infos if f.detail]
    tail = [GDR_NOTE] + ([N_("Without a PIX/PXB NIC: {gpus}.", gpus=join(', ', far))] if far else [])
    return Finding(INFO, "node", title,
                   detail=join(' ', [*(N_("{gpu}: {path}.", gpu=f.subject, path=f.title) for f, _, _ in infos),
                                     *tail]),
                   evidence=tuple(e for f, _, _ in infos for e in f.evidence), references=REFERENCES,
                   related=tuple(dict.fromkeys(r for f, _, _ in infos for r in f.related)))


@check("pcie.chipset_slot", "GPUs and fast NICs behind the chipset; switch hops and NCCL path words", "pcie", acts="hardware", needs=("pci",))
def chipset_slot(facts: Facts) -> Iterator[Finding]:
    """A GPU or fast NIC whose root port is an Intel PCH/ICH root port, or whose path crosses an AMD chipset
    (Promontory, X570) bridge, decided by device id or lspci name (doctor.facts.chipsets): high. Also, as info, each GPU's switch hops and the
    NCCL path word (PIX/PXB/PHB/NODE/SYS) to its nearest NIC.
    """
    if facts.host.is_vm:
        return
    gpus = sorted(facts.pci.gpus, key=lambda d: d.address)
    nics = [n for n in subject_nics(facts) if not is_virtual_nic(n)]
    fast = [n for n in nics if _fast_nic(facts, n)]
    subjects = [(g, gpu_label(facts, g.address), "GPU") for g in gpus] + [(n, n.address, "NIC") for n in fast]
    if not subjects:
        return
    blind = [label for dev, label, _ in subjects if _no_path(dev)]
    found = 0
    for dev, label, kind in subjects:
        if _no_path(dev):
            continue
        finding = _chipset_finding(facts, dev, label, kind)
        if finding is not None:
            found += 1
            yield finding
    near_nics = [n for n in fast if is_rdma_nic(facts, n)] or fast
    index = NicIndex(facts.pci, near_nics, facts.numa) if near_nics else None
    infos = [_topology_info(facts, g, gpu_label(facts, g.address), index) for g in gpus if not _no_path(g)]
    if len(infos) == 1:
        yield infos[0][0]
    elif infos:
        yield _summary(infos)
    if blind:
        yield Finding(UNKNOWN, "node", N_('upstream PCI path not recorded for {n_blind} device(s)', n_blind=len(blind)),
                      detail=N_('{blind}: the sysfs link to the device folder is missing or trimmed, so the root port and switches above cannot be named.', blind=join(', ', blind)),
                      evidence=(Evidence("sys/bus/pci/devices/<bdf>", "no resolvable path"),))
    if not found and len(blind) < len(subjects):
        yield Finding(PASS, "node", N_('no GPU or fast NIC behind the chipset'),
                      evidence=(Evidence(facts.pci.origin or "pci", f"{len(subjects) - len(blind)} devices checked"),))
