"""pcie.acs_redirect: ACS request/completion redirect or egress control on ports between GPU/NIC peers."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import is_virtual_nic, subject_nics
from doctor.derived.paths import GDR_WORDS, bridges_between, path_word, switch_of
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, PciDevice
from doctor.findings import HIGH, INFO, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.fixes.boot import grub_note, os_family
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs",
    "https://docs.kernel.org/admin-guide/kernel-parameters.html",
    "https://github.com/NVIDIA/nccl/issues/949",
)
#: ACS control bits that send peer traffic up to the root complex (PCIe spec ACS Control register).
REDIRECT_BITS = ("ReqRedir", "CmpltRedir", "EgressCtrl")
ACS_CTL = "ECAP_ACS+0x6.w"
#: ACS Control register bits 0-6, in lspci's order.
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
NOTES = ("Runtime changes are lost at reboot and do not regroup IOMMU groups. Lasting: disable ACS in the BIOS "
         "(often 'ACS Control' or 'PCIe ACS'), or the kernel parameter pci=disable_acs_redir (kernel 4.19+; newer "
         "kernels also take config_acs=). Disabling redirect weakens DMA isolation between devices below the "
         "switch; inside virtual machines ACS is needed (use ATS instead).")


def acs_text(acs: dict[str, bool]) -> str:
    """``{"SrcValid": True, ...}`` -> lspci's ``SrcValid+ TransBlk- ...``."""
    return " ".join(f"{bit}{'+' if acs.get(bit) else '-'}" for bit in ACS_BITS)


def acs_value(acs: dict[str, bool]) -> int:
    """The ACS Control register value these bits encode (bit 0 SrcValid ... bit 6 DirectTrans)."""
    return sum(1 << i for i, bit in enumerate(ACS_BITS) if acs.get(bit))


def _pairs(facts: Facts) -> dict[str, set[str]]:
    """Bridge address -> labels of the P2P pairs (GPU-NIC; GPU-GPU without NVSwitch) crossing it."""
    pci = facts.pci
    gpus = sorted(pci.gpus, key=lambda d: d.address)
    nics = [n for n in subject_nics(facts) if not is_virtual_nic(n)]
    pairs: list[tuple[PciDevice, PciDevice]] = [(g, n) for g in gpus for n in nics]
    if not any(d.is_nvswitch for d in pci.devices.values()):
        pairs += [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    out: dict[str, set[str]] = {}
    for a, b in pairs:
        if path_word(pci, a.address, b.address) not in GDR_WORDS:
            continue
        for bridge in bridges_between(pci, a.address, b.address):
            dev = pci.get(bridge)
            if dev is not None and dev.is_bridge:
                out.setdefault(bridge, set()).update({a.address, b.address})
    return out


def _fix(ports: list[PciDevice], facts: Facts) -> Fix:
    return make("acs_redirect", ports={p.address: f"{acs_value(p.acs or {}):04x}" for p in ports},
                os_family=os_family(facts.host.os_release),
                notes=NOTES + " " + grub_note(facts.host.os_release))


@check("pcie.acs_redirect", "ACS redirect on ports between GPU and NIC peers", "pcie", fixes=("acs_redirect",), needs=("pci",))
def acs_redirect(facts: Facts) -> Iterator[Finding]:
    """Root and switch ports on a GPU-NIC (or GPU-GPU without NVLink) peer path with ACS ReqRedir,
    CmpltRedir or EgressCtrl set: peer traffic detours through the root complex (high). ``SrcValid+``
    alone redirects nothing (info). Not checked inside virtual machines, where ACS is required.
    """
    if facts.host.is_vm:
        return
    crossing = _pairs(facts)
    if not crossing:
        return
    pci = facts.pci
    ports = [d for a in sorted(crossing) if (d := pci.get(a)) is not None]
    with_acs = [p for p in ports if p.acs is not None]
    redirect = [p for p in with_acs if any(p.acs.get(b) for b in REDIRECT_BITS)]  # type: ignore[union-attr]
    src_only = [p for p in with_acs if p not in redirect and p.acs.get("SrcValid")]  # type: ignore[union-attr]
    by_switch: dict[str, list[PciDevice]] = {}
    for port in redirect:
        by_switch.setdefault(switch_of(pci, port.address), []).append(port)
    for switch, members in sorted(by_switch.items()):
        peers = sorted(set().union(*(crossing[p.address] for p in members)))
        names = [gpu_label(facts, a) if facts.gpus.by_address(a) else a for a in peers]
        below = [f"GPU {g.index}" for a in peers if (g := facts.gpus.by_address(a)) is not None]
        yield Finding(
            HIGH, f"PCIe switch {switch}" + (f" above {', '.join(below)}" if below else ""), f"ACS redirect on {len(members)} port{'s' if len(members) != 1 else ''} "
                          f"between GPU/NIC peers: peer traffic detours through the root complex",
            detail=f"Ports {', '.join(p.address for p in members)} redirect peer requests or completions upstream, "
                   f"so GPUDirect RDMA and P2P between {', '.join(names)} go through the CPU's root complex: "
                   "slow transfers, hangs, or (on some platforms) bad data.",
            evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}") for p in members),
            expected="ACSCtl: ReqRedir- CmpltRedir- EgressCtrl- on bare metal",
            observed="; ".join(f"{p.address}: " + " ".join(f"{b}+" for b in REDIRECT_BITS if (p.acs or {}).get(b))
                               for p in members),
            impact=Impact(55, "GPU-NIC and P2P bandwidth roughly halves (NCCL all-reduce at ~56% of line rate "
                              "until ACS was disabled, NVIDIA/nccl#949)", basis="NVIDIA/nccl#949: NCCL all-reduce ran at about 56% of line rate until ACS was disabled; with ACS redirect, peer requests go up to the root port"),
            fix=_fix(members, facts), references=REFERENCES,
            related=tuple(p.address for p in members) + tuple(peers), subject_id=switch)
    if src_only:
        yield Finding(
            INFO, "node", f"ACS source validation only (SrcValid+) on {len(src_only)} peer-path port(s)",
            detail="SrcValid checks the requester ID and redirects nothing; NCCL's docs use it only as a hint "
                   "that ACS is being configured.",
            evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}") for p in src_only[:4]),
            related=tuple(p.address for p in src_only), references=REFERENCES)
    if not with_acs:
        if pci.lspci_where and not pci.lspci_access_denied:
            yield Finding(PASS, "node", "no ACS capability on the ports between GPU/NIC peers",
                          evidence=(Evidence(pci.lspci_where, "no ACSCtl line on those ports"),))
            return
        yield Finding(UNKNOWN, "node", "ACS control of the peer-path ports not recorded",
                      detail="Reading ACS needs the extended config space (root): record the config files as root "
                             "or lspci -vvv as root.",
                      evidence=(Evidence(pci.lspci_where or "lspci -vvv",
                                         "access denied" if pci.lspci_access_denied else "not recorded"),))
    elif not redirect:
        yield Finding(PASS, "node", f"no ACS redirect on the {len(with_acs)} port(s) between GPU/NIC peers",
                      evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}")
                                     for p in with_acs[:2]))
