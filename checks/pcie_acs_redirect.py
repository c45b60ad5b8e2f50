"""pcie.acs_redirect: ACS request/completion redirect or egress control on ports between GPU/NIC peers."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.net import is_virtual_nic, subject_nics
from doctor.derived.paths import switch_of
from doctor.derived.relations import gpu_label
from doctor.facts import Facts, PciDevice
from doctor.findings import HIGH, INFO, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.fixes.boot import grub_note, os_family
from doctor.i18n import N_, Nn_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs",
    "https://docs.kernel.org/admin-guide/kernel-parameters.html",
    "https://github.com/NVIDIA/nccl/issues/949",
)
#: ACS control bits that send peer traffic up to the root complex (PCIe spec ACS Control register).
REDIRECT_BITS = ("ReqRedir", "CmpltRedir", "EgressCtrl")
#: Peers named in a finding; the rest are counted ("+N more").
MAX_SHOWN = 8
#: ACS Control register bits 0-6, in lspci's order.
ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
NOTES = (N_("Runtime changes are lost at reboot and do not regroup IOMMU groups. Lasting: disable ACS in the BIOS (often 'ACS Control' or 'PCIe ACS'), or the kernel parameter pci=disable_acs_redir (kernel 4.19+; newer kernels also take config_acs=). Disabling redirect weakens DMA isolation between devices below the switch; inside virtual machines ACS is needed (use ATS instead)."))


def acs_text(acs: dict[str, bool]) -> str:
    """``{"SrcValid": True, ...}`` -> lspci's ``SrcValid+ TransBlk- ...``."""
    return join(' ', (f"{bit}{'+' if acs.get(bit) else '-'}" for bit in ACS_BITS))


def acs_value(acs: dict[str, bool]) -> int:
    """The ACS Control register value these bits encode (bit 0 SrcValid ... bit 6 DirectTrans)."""
    return sum(1 << i for i, bit in enumerate(ACS_BITS) if acs.get(bit))


def _mask(bits: list[int]) -> int:
    """Bit indexes as one integer, in time linear in the bits and the integer's size."""
    raw = bytearray(max(bits, default=0) // 8 + 1)
    for b in bits:
        raw[b >> 3] |= 1 << (b & 7)
    return int.from_bytes(raw, "little")


class _Peers:
    """The GDR pairs (GPU-NIC; GPU-GPU without NVSwitch) crossing each bridge, from per-subtree counts.

    Two devices meet at PIX/PXB exactly when their bridge paths share the first element (the root port),
    and :func:`~doctor.derived.paths.bridges_between` is their meeting bridge and all below it. So an
    endpoint below bridge ``t`` pairs across ``t`` when it has a partner in the root port's tree outside
    its own branch of ``t``; one outside ``t`` does when it has a partner below ``t``. Linear in the path
    lengths; peer sets are masks over the endpoints by address, built only for the ports a finding names.
    """

    def __init__(self, facts: Facts) -> None:
        pci = facts.pci
        self.p2p = not any(d.is_nvswitch for d in pci.devices.values())
        kinds = {d.address: 0 for d in pci.gpus}
        kinds.update({n.address: 1 for n in subject_nics(facts) if not is_virtual_nic(n) and n.address not in kinds})
        self.order: list[str] = []  # endpoints by address; the index is the bit
        self.kind: list[int] = []  # 0 GPU, 1 NIC
        self.root: dict[str, str] = {}  # bridge -> the root port of its tree
        self.total: dict[str, list[int]] = {}  # root port -> [GPUs, NICs] in its tree
        self.branches: dict[str, dict[tuple[str, str], list[int]]] = {}  # bridge -> branch -> [GPUs, NICs]
        self.bits: dict[str, tuple[list[int], list[int]]] = {}  # bridge -> bits of the GPUs, NICs below it
        for address in sorted(kinds):
            dev = pci.get(address)
            if dev is None or len(dev.path) < 2:
                continue
            bit, k, up = len(self.order), kinds[address], dev.path[:-1]
            self.order.append(address)
            self.kind.append(k)
            self.total.setdefault(up[0], [0, 0])[k] += 1
            for depth, bridge in enumerate(up):
                self.root[bridge] = up[0]
                branch = ("bridge", up[depth + 1]) if depth + 1 < len(up) else ("leaf", str(bit))
                self.branches.setdefault(bridge, {}).setdefault(branch, [0, 0])[k] += 1
                self.bits.setdefault(bridge, ([], []))[k].append(bit)
        self._masks: dict[tuple[str, int], int] = {}

    def _outside(self, bridge: str, counts: list[int]) -> tuple[int, int]:
        """Partners in the root port's tree outside a group holding ``counts`` [GPUs, NICs]: for its GPUs, NICs."""
        gpus, nics = self.total[self.root[bridge]]
        return nics - counts[1] + (gpus - counts[0] if self.p2p else 0), gpus - counts[0]

    def crossing(self) -> list[str]:
        """The bridges some pair crosses, sorted."""
        return sorted(b for b, branches in self.branches.items()
                      if any(c[k] and self._outside(b, c)[k] for c in branches.values() for k in (0, 1)))

    def _below(self, bridge: str, k: int) -> int:
        if (bridge, k) not in self._masks:
            self._masks[bridge, k] = _mask(self.bits[bridge][k])
        return self._masks[bridge, k]

    def at(self, bridge: str) -> int:
        """The endpoints of the pairs crossing ``bridge``, as a mask."""
        root, branches = self.root[bridge], self.branches[bridge]
        here = [sum(c[k] for c in branches.values()) for k in (0, 1)]
        out = 0
        for k in (0, 1):
            inside = self._below(bridge, k)
            for (what, name), c in branches.items():
                if c[k] and not self._outside(bridge, c)[k]:  # every partner sits in this branch
                    inside &= ~(self._below(name, k) if what == "bridge" else 1 << int(name))
            out |= inside
        partners_below = (here[1] + (here[0] if self.p2p else 0), here[0])  # for a GPU, a NIC outside
        for k in (0, 1):
            if partners_below[k] and root != bridge:
                out |= self._below(root, k) & ~self._below(bridge, k)
        return out

    def peers(self, bridges: list[str]) -> tuple[list[str], int, list[str], int]:
        """The endpoints pairing across any of ``bridges``: the first MAX_SHOWN by address and how many in all;
        the same for the GPUs among them."""
        union = 0
        for b in bridges:
            union |= self.at(b)
        gpus = union & ~_mask([i for i, k in enumerate(self.kind) if k])
        return self._first(union), union.bit_count(), self._first(gpus), gpus.bit_count()

    def _first(self, mask: int) -> list[str]:
        out: list[str] = []
        while mask and len(out) < MAX_SHOWN:
            low = mask & -mask
            out.append(self.order[low.bit_length() - 1])
            mask ^= low
        return out


def _more(total: int) -> list[str]:
    return [f"+{total - MAX_SHOWN} more"] if total > MAX_SHOWN else []


def _fix(ports: list[PciDevice], facts: Facts) -> Fix:
    return make("acs_redirect", ports={p.address: f"{acs_value(p.acs or {}):04x}" for p in ports},
                os_family=os_family(facts.host.os_release),
                notes=NOTES + " " + grub_note(facts.host.os_release))


@check("pcie.acs_redirect", "ACS redirect on ports between GPU and NIC peers", "pcie", acts="hardware", fixes=("acs_redirect",), needs=("pci",))
def acs_redirect(facts: Facts) -> Iterator[Finding]:
    """Root and switch ports on a GPU-NIC (or GPU-GPU without NVLink) peer path with ACS ReqRedir,
    CmpltRedir or EgressCtrl set: peer traffic detours through the root complex (high). ``SrcValid+``
    alone redirects nothing (info). Not checked inside virtual machines, where ACS is required.
    """
    if facts.host.is_vm:
        return
    pairs = _Peers(facts)
    crossing = pairs.crossing()
    if not crossing:
        return
    pci = facts.pci
    ports = [d for a in crossing if (d := pci.get(a)) is not None and d.is_bridge]
    if not ports:
        return
    with_acs = [p for p in ports if p.acs is not None]
    redirect = [p for p in with_acs if any(p.acs.get(b) for b in REDIRECT_BITS)]  # type: ignore[union-attr]
    redirecting = {p.address for p in redirect}
    src_only = [p for p in with_acs if p.address not in redirecting and p.acs.get("SrcValid")]  # type: ignore[union-attr]
    by_switch: dict[str, list[PciDevice]] = {}
    for port in redirect:
        by_switch.setdefault(switch_of(pci, port.address), []).append(port)
    for switch, members in sorted(by_switch.items()):
        peers, n_peers, gpu_peers, n_gpus = pairs.peers([p.address for p in members])
        names = [gpu_label(facts, a) if facts.gpus.by_address(a) else a for a in peers] + _more(n_peers)
        below = [f"GPU {g.index}" for a in gpu_peers if (g := facts.gpus.by_address(a)) is not None]
        below += _more(n_gpus) if below else []
        yield Finding(
            HIGH, N_('PCIe switch {switch}', switch=switch) + (N_(" above {devices}", devices=", ".join(below)) if below else ""), Nn_('ACS redirect on {n} port between GPU/NIC peers: peer traffic detours through the root complex', 'ACS redirect on {n} ports between GPU/NIC peers: peer traffic detours through the root complex', len(members)),
            detail=N_("Ports {v} redirect peer requests or completions upstream, so GPUDirect RDMA and P2P between {names} go through the CPU's root complex: slow transfers, hangs, or (on some platforms) bad data.", v=join(', ', (p.address for p in members)), names=join(', ', names)),
            evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}") for p in members),
            expected=N_('ACSCtl: ReqRedir- CmpltRedir- EgressCtrl- on bare metal'),
            observed=join('; ', (f"{p.address}: " + " ".join(f"{b}+" for b in REDIRECT_BITS if (p.acs or {}).get(b))
                               for p in members)),
            impact=Impact(55, N_('GPU-NIC and P2P bandwidth roughly halves (NCCL all-reduce at ~56% of line rate until ACS was disabled, NVIDIA/nccl#949)'), basis=N_('NVIDIA/nccl#949: NCCL all-reduce ran at about 56% of line rate until ACS was disabled; with ACS redirect, peer requests go up to the root port')),
            fix=_fix(members, facts), references=REFERENCES,
            related=tuple(p.address for p in members) + tuple(peers), subject_id=switch)
    if src_only:
        yield Finding(
            INFO, "node", N_('ACS source validation only (SrcValid+) on {n_src_only} peer-path port(s)', n_src_only=len(src_only)),
            detail=N_("SrcValid checks the requester ID and redirects nothing; NCCL's docs use it only as a hint that ACS is being configured."),
            evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}") for p in src_only[:4]),
            related=tuple(p.address for p in src_only), references=REFERENCES)
    if not with_acs:
        if pci.lspci_where and not pci.lspci_access_denied:
            yield Finding(PASS, "node", N_('no ACS capability on the ports between GPU/NIC peers'),
                          evidence=(Evidence(pci.lspci_where, "no ACSCtl line on those ports"),))
            return
        yield Finding(UNKNOWN, "node", N_('ACS control of the peer-path ports not recorded'),
                      detail=N_('The extended config space (where ACS is) was not readable even as root: in a VM or container the hypervisor may hide it; read it on the host.')
                      if facts.as_root else N_('Reading ACS needs the extended config space (root): record the config files as root or lspci -vvv as root.'),
                      evidence=(Evidence(pci.lspci_where or "lspci -vvv",
                                         "access denied" if pci.lspci_access_denied else "not recorded"),))
    elif not redirect:
        yield Finding(PASS, "node", N_('no ACS redirect on the {n_with_acs} port(s) between GPU/NIC peers', n_with_acs=len(with_acs)),
                      evidence=tuple(Evidence(p.acs_origin or p.origin, f"ACSCtl: {acs_text(p.acs or {})}")
                                     for p in with_acs[:2]))
