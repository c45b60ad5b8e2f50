"""pcie.bifurcation: an x16-capable GPU or NIC whose port above is electrically x8 or x4 (a split slot)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.board import soldered_gpu
from doctor.derived.chipset import behind_chipset
from doctor.derived.net import is_rdma_nic, is_virtual_nic, subject_nics
from doctor.derived.pcie import gbps
from doctor.derived.relations import gpu_label
from doctor.derived.upstream import tree_only
from doctor.facts import Facts, PciDevice
from doctor.facts.pci import DOWNSTREAM, ROOT_PORT
from doctor.facts.pcie_gen import link_bandwidth
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, Nn_, join
from doctor.registry import check

REFERENCES = (
    "https://github.com/pciutils/pciutils/blob/master/ls-caps.c",
    "https://github.com/NVIDIA/nccl/blob/master/src/graph/xml.cc",
)
#: Device width that makes a card "x16-capable"; port widths at or below NARROW count as split.
FULL_WIDTH = 16
NARROW = 8
#: NICs at or above this line rate (Gb/s) get ``high`` (a 200G port needs Gen4 x16).
FAST_NIC_GBPS = 200
NOTES_ROOT = (
    N_("Firmware only: set the slot's bifurcation back to x16 in the BIOS (Intel: 'IIO PCIe Port Bifurcation' / 'IOU Configuration' for this port; AMD: 'PCIe slot bifurcation' or 'NBIO ... Link Width' Auto/x16), or move the card to a slot wired x16. Undo by restoring the previous BIOS setting."))
NOTES_SWITCH = (
    N_("The narrow port belongs to a PCIe switch: its port configuration (lane split) is set in the switch firmware or the platform's BIOS; ask the system vendor for the x16 configuration, or move the card."))


def _nic_gbps(facts: Facts, dev: PciDevice) -> float | None:
    speeds = [n.speed_mbps / 1000 for n in facts.netdevs_of(dev.address) if n.speed_mbps]
    rates = [p.rate_gbps for p in facts.rdma_of(dev.address) if p.rate_gbps]
    values = speeds + rates
    return max(values) if values else None


def _siblings(facts: Facts, port: PciDevice) -> list[PciDevice]:
    return sorted((d for d in facts.pci.devices.values() if d.is_bridge and d.address != port.address
                   and d.function_base == port.function_base and d.port_type == port.port_type),
                  key=lambda d: d.address)


@check("pcie.bifurcation", "x16 cards in x8/x4 (bifurcated) slots", "pcie", acts="hardware", needs=("pci",))
def bifurcation(facts: Facts) -> Iterator[Finding]:
    """An x16-capable GPU or NIC below a root or switch downstream port that is only x8 or x4 wide.

    Sibling ports with the same bus and device number whose widths add up to 16 or less show the
    slot was split (bifurcated) in firmware (high for a GPU or fast NIC); without siblings the slot is
    electrically narrow (medium: move the card). Soldered GPUs (laptops, APU boards) have no slot: skipped.
    """
    if facts.host.is_vm:
        return
    pci = facts.pci
    subjects: list[tuple[PciDevice, str, bool]] = [(g, gpu_label(facts, g.address), True) for g in pci.gpus]
    subjects += [(n, n.address, False) for n in subject_nics(facts) if not is_virtual_nic(n)]
    looked = found = 0
    blind: list[tuple[str, PciDevice]] = []
    for dev, label, is_gpu in subjects:
        port = pci.get(dev.parent)
        if dev.max_width is None or dev.max_width < FULL_WIDTH or port is None:
            continue
        if port.port_type not in (ROOT_PORT, DOWNSTREAM):
            continue
        if behind_chipset(facts, dev):
            continue  # chipset ports are narrow by design; pcie.chipset_slot reports the card
        if is_gpu and soldered_gpu(facts, dev.address):
            continue  # no slot: the board wires the lanes (pcie.link_downgrade reports the limit, info)
        if port.max_width is None:
            if tree_only(port):
                blind.append((label, port))  # the port is known from lspci -t, its registers are not
            continue
        looked += 1
        if port.max_width > NARROW:
            continue
        siblings = _siblings(facts, port)
        split = bool(siblings) and sum(s.max_width or 0 for s in siblings) + port.max_width <= FULL_WIDTH
        speed = min(s for s in (dev.max_speed, port.max_speed) if s is not None) \
            if dev.max_speed is not None or port.max_speed is not None else None
        got, full = link_bandwidth(speed, port.max_width), link_bandwidth(speed, FULL_WIDTH)
        loss = 1 - (got or 0) / full if full else 0.0
        nic_rate = None if is_gpu else _nic_gbps(facts, dev)
        important = is_gpu or (nic_rate is not None and nic_rate >= FAST_NIC_GBPS) or (
            nic_rate is None and is_rdma_nic(facts, dev))
        kind = "GPU" if is_gpu else "NIC"
        where = N_('root port') if port.port_type == ROOT_PORT else N_('switch downstream port')
        if split:
            title = N_('{kind} sits in a bifurcated slot: {where} {address} is x{max_width}', kind=kind, where=where, address=port.address, max_width=port.max_width)
            detail = (N_('{label} can use x{max_width}, but its {where} is x{max_width2} and its siblings {v} share the same lanes: the slot was split in firmware.', label=label, max_width=dev.max_width, where=where, max_width2=port.max_width, v=join(', ', (f'{s.address} (x{s.max_width})' for s in siblings))))
        else:
            title = N_('{kind} sits in an electrically x{max_width} slot ({where} {address})', kind=kind, max_width=port.max_width, where=where, address=port.address)
            detail = (N_('{label} can use x{max_width}, but its {where} is only x{max_width2} wide (an x16 connector wired with fewer lanes, or a riser that splits the slot).', label=label, max_width=dev.max_width, where=where, max_width2=port.max_width))
        evidence = [Evidence(dev.attr("max_link_width"), str(dev.max_width)),
                    Evidence(port.attr("max_link_width"), str(port.max_width))]
        evidence += [Evidence(s.attr("max_link_width"), str(s.max_width)) for s in siblings[:3]]
        found += 1
        # a split slot is firmware configuration (high for the data path); a slot wired narrow is the board's
        # design, recovered by moving the card: medium
        severity = HIGH if important and split else MEDIUM if important or split else LOW
        yield Finding(
            severity, label, title, detail=detail, evidence=tuple(evidence),
            expected=N_('x{FULL_WIDTH} port for an x{max_width} card', FULL_WIDTH=FULL_WIDTH, max_width=dev.max_width), observed=N_('x{max_width} port', max_width=port.max_width),
            impact=Impact(round(60 * loss if important else 10 * loss, 1),
                          N_('at most {got} per direction instead of {full} ({loss} less)', got=gbps(got), full=gbps(full), loss=format(loss, ".0%")), basis=N_("PCIe bandwidth = transfer rate x lanes (less 128b/130b encoding): the port's lanes against the device's")),
            fix=Fix(notes=NOTES_ROOT if port.port_type == ROOT_PORT else NOTES_SWITCH),
            references=REFERENCES, related=(port.address, *(s.address for s in siblings)))
    if blind:
        yield Finding(UNKNOWN, "node", Nn_('slot width not recorded for {n} card', 'slot width not recorded for {n} cards', len(blind)),
                      detail=N_("{v}: the tree (lspci -t) names the port above, but this recording holds none of its link registers (LnkCap width), so whether the slot is narrower than the card cannot be told.", v=join(', ', (f"{label} below {port.address}" for label, port in blind))),
                      evidence=tuple(Evidence(port.attr("max_link_width"), "missing") for _, port in blind[:8]),
                      related=tuple(port.address for _, port in blind))
    if looked and not found:
        yield Finding(PASS, "node", Nn_('{n} x16 GPU/NIC slot checked', '{n} x16 GPU/NIC slots checked', looked),
                      evidence=(Evidence(pci.origin or "pci", "max_link_width of each card and its port"),))
