"""pcie.link_downgrade: GPU and NIC links (and every link above them) slower or narrower than both ends allow."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from doctor.derived.board import soldered_gpu
from doctor.derived.chipset import c2c_gpu
from doctor.derived.net import LineRate, is_rdma_nic, is_virtual_nic, nic_port_rates, subject_nics
from doctor.derived.pcie import (
    Link,
    PathBandwidth,
    PathCap,
    gbps,
    gen_label,
    link_label,
    make_link,
    no_link_reason,
    path_bandwidth,
    path_cap,
    upstream_links,
)
from doctor.derived.relations import gpu_activity, gpu_label
from doctor.derived.upstream import tree_only
from doctor.facts import Facts, PciDevice
from doctor.facts.chipsets import chipset_integrated_nic
from doctor.facts.link_caps import FirmwareCap, firmware_cap
from doctor.facts.pcie_gen import link_bandwidth
from doctor.facts.util import BDF
from doctor.findings import (
    HIGH,
    INFO,
    LOW,
    MEDIUM,
    PASS,
    UNKNOWN,
    Evidence,
    Finding,
    Fix,
    Impact,
    severity_order,
)
from doctor.fixes import make
from doctor.i18n import N_, Nn_, activity_name, capitalised, join
from doctor.record import record
from doctor.registry import check

REFERENCES = (
    "https://github.com/NVIDIA/nccl/blob/master/src/graph/xml.cc",
    "https://github.com/pciutils/pciutils/blob/master/ls-caps.c",
    "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
    "https://docs.kernel.org/PCI/sysfs-pci.html",
)
#: Linux commit 3fced535079a, "i40e: X722 is on the IOSF bus and does not report the PCI bus info".
X722_INTERNAL_BUS = "https://git.kernel.org/linus/3fced535079a"
#: Severity thresholds: fraction of the path's expected bandwidth lost.
HIGH_LOSS = 0.5
MEDIUM_LOSS = 0.25
#: A NIC whose whole path is slower than this (GB/s per direction, about Gen3 x4) is a management
#: port: a downgrade there is reported ``low`` at most.
SMALL_NIC_GBPS = 3.9
#: Impact score weight: GPUs and RDMA NICs carry the inference data; other NICs barely matter.
WEIGHT_DATA = 60.0
WEIGHT_OTHER = 8.0
#: Confidence when the port above the link is missing from the recording (expected = device maxima).
PARTNER_UNKNOWN_CONFIDENCE = 0.6
#: Lanes a board gives a soldered GPU by design (an AMD APU's x8 port, Intel H-series x8/x16); a soldered GPU
#: narrower than this is judged as any other link.
SOLDERED_WIDTH = 8
#: A host path that keeps less than this share of the card's own bandwidth is reported ``low`` (an x1 riser slot).
NARROW_PATH_SHARE = 0.25
_USES = {"GPU": N_('host-device copies, weight loading, KV-cache offload and GPUDirect RDMA scale with it'),
         "RDMA NIC": N_('RDMA and GPUDirect traffic through this port is capped by it'),
         "NIC": N_('traffic through this port is capped by it')}
#: how each kind of subject is named in prose
_KIND_NAMES = {"GPU": N_("GPU"), "RDMA NIC": N_("RDMA NIC"), "NIC": N_("NIC")}


@record
class _Subject:
    dev: PciDevice
    label: str
    kind: str  # "GPU", "RDMA NIC", "NIC"

    @property
    def is_gpu(self) -> bool:
        return self.kind == "GPU"


def _subjects(facts: Facts) -> list[_Subject]:
    """GPUs (from PCI, or only from the driver when the PCI folder is trimmed) and physical NICs."""
    gpus = {d.address: d for d in facts.pci.gpus}
    for gpu in facts.gpus.gpus:
        if gpu.pci is not None and gpu.pci.link_origin:
            gpus[gpu.address] = gpu.pci  # link state from the driver (NVML, nvidia-smi)
        elif gpu.address not in gpus:
            gpus[gpu.address] = gpu.pci or PciDevice(gpu.address, None, None, None, origin="GPU inventory")
    out = [_Subject(gpus[a], gpu_label(facts, a), "GPU") for a in sorted(gpus) if not gpus[a].is_vf]
    for nic in subject_nics(facts):
        if is_virtual_nic(nic):
            continue
        out.append(_Subject(nic, nic.address, "RDMA NIC" if is_rdma_nic(facts, nic) else "NIC"))
    return out


def _link_evidence(lk: Link) -> list[Evidence]:
    c, p = lk.child, lk.parent
    ev = [Evidence(c.attr("current_link_speed"), f"{lk.cur_speed:g} GT/s" if lk.cur_speed else "?"),
          Evidence(c.attr("current_link_width"), str(lk.cur_width)),
          Evidence(c.attr("max_link_speed") + " / max_link_width", link_label(c.max_speed, c.max_width))]
    if p is not None and not BDF.match(p.address):  # the host's maximum as the GPU driver reports it
        ev.append(Evidence(f"{p.origin} [{c.address}] max_host_link_gen", gen_label(p.max_speed)))
    elif p is not None:
        ev.append(Evidence(p.attr("max_link_speed") + " / max_link_width", link_label(p.max_speed, p.max_width)))
    return ev


def _runtime_evidence(facts: Facts, address: str) -> list[Evidence]:
    gpu = facts.gpus.by_address(address)
    rt = gpu.runtime if gpu else None
    if rt is None:
        return [Evidence("GPU runtime state", facts.gpus.runtime_missing or "not recorded")]
    where = facts.gpus.runtime_origin or "nvidia-smi"
    return [Evidence(where, f"performance state {rt.pstate or '?'}, utilisation "
                            f"{'?' if rt.util_gpu is None else f'{rt.util_gpu:g}%'}, idle clock reason "
                            f"{'?' if rt.idle is None else ('active' if rt.idle else 'not active')}")]


def _describe(lk: Link, subject: _Subject) -> str:
    """Where the link is: the device's own link, or a port above it."""
    if lk.parent is None:
        return N_('the link of {address} (the port above is not in this recording)', address=lk.child.address)
    if lk.child.address == subject.dev.address:
        return N_('the link between {address} and {address2}', address=subject.dev.address, address2=lk.parent.address)
    return (N_('the upstream link between {address} ({v}) and {address2}', address=lk.child.address, v=lk.child.port_type or 'bridge', address2=lk.parent.address))


def _fix(lk: Link) -> Fix:
    port = lk.port_above
    notes = (
        N_("A retrain rarely helps and changes no setting, so there is nothing to undo. The lasting fixes are physical or in firmware: reseat the card, replace the riser, cable or retimer (check the AER counters of both ends), set the slot's link speed to Auto/maximum in the BIOS, or move the card to a CPU-attached x16 slot. Do not set Hardware Autonomous Speed Disable (HASD) blindly."))
    if port is None:
        return Fix(notes=notes)
    return make("pcie_retrain", port=port, device=lk.child.address, notes=notes)



def severity_for_loss(loss: float) -> str:
    """``high`` at half the bandwidth or worse, ``medium`` from a quarter, else ``low``."""
    if loss >= HIGH_LOSS:
        return HIGH
    if loss >= MEDIUM_LOSS:
        return MEDIUM
    return LOW

def line_rate_severity(carried_gbps: float, rates: LineRate) -> str:
    """A NIC path judged by what it costs the ports (docs/checks.md#pcie-link-downgrade): ``info`` while it
    carries every port together; ``high`` when it cannot carry one port's line rate (``medium`` when that
    shortfall is under a quarter); else the ports together lose a share: ``medium`` from a quarter, ``low``."""
    if carried_gbps >= rates.total:
        return INFO
    if carried_gbps < rates.port:
        return HIGH if 1 - carried_gbps / rates.port >= MEDIUM_LOSS else MEDIUM
    return MEDIUM if 1 - carried_gbps / rates.total >= MEDIUM_LOSS else LOW


def _downgrade(facts: Facts, subject: _Subject, links: list[Link], real: list[Link], busy_ok: bool) -> Finding:
    path: PathBandwidth = path_bandwidth(links, ignore_speed=subject.is_gpu and not busy_ok)
    neck = path.bottleneck if path.bottleneck in real else min(
        real, key=lambda lk: (lk.current_bw or 0) / (lk.expected_bw or 1))
    loss = path.loss
    severity = severity_for_loss(loss)
    weight = WEIGHT_DATA if subject.kind in ("GPU", "RDMA NIC") else WEIGHT_OTHER
    if subject.kind == "NIC":
        cap = LOW if (path.expected_bw or 0) < SMALL_NIC_GBPS else MEDIUM
        if severity_order(severity) < severity_order(cap):
            severity = cap
    what = []
    if neck.width_short:
        what.append(N_("x{width} of x{expected}", width=neck.cur_width, expected=neck.exp_width))
    if neck.speed_short and (busy_ok or not subject.is_gpu):  # an idle GPU's speed is power saving
        what.append(N_("{speed} of {expected} GT/s", speed=format(neck.cur_speed, "g"), expected=format(neck.exp_speed, "g")))
    where = _describe(neck, subject)
    own = neck.child.address == subject.dev.address
    title = (N_('{kind} link runs at {what}', kind=_KIND_NAMES[subject.kind], what=join(N_(' and '), what)) if own
             else N_('{kind} is limited by a narrow or slow upstream link ({what})', kind=_KIND_NAMES[subject.kind], what=join(N_(' and '), what)))
    ends = N_('both ends support') if neck.partner_known else N_('the device supports')
    detail = (N_('{where} trained at {link_label} although {ends} {link_label2}.', where=capitalised(where), link_label=link_label(neck.cur_speed, neck.cur_width), ends=ends, link_label2=link_label(neck.exp_speed, neck.exp_width)))
    if subject.is_gpu:
        detail += N_(' The GPU is {gpu_activity}', gpu_activity=activity_name(gpu_activity(facts, subject.dev.address)))
        detail += N_(', so a lower speed is not idle power saving.') if busy_ok else \
            N_('; only the width is counted (an idle GPU may lower its speed on purpose).')
    if not neck.partner_known and neck.parent is not None and tree_only(neck.parent):
        detail += N_(" The port above ({address}) is known only from the tree (lspci -t), which holds no link registers, so the device's own maxima are the expectation.", address=neck.parent.address)
    elif not neck.partner_known:
        detail += N_(" The port above is missing, so the device's own maxima are the expectation.")
    evidence = _link_evidence(neck)
    if subject.is_gpu:
        evidence += _runtime_evidence(facts, subject.dev.address)
    related = _addresses(neck.ports)
    confidence = 1.0 if neck.partner_known else PARTNER_UNKNOWN_CONFIDENCE
    soldered = soldered_gpu(facts, subject.dev.address) if subject.is_gpu else None
    rates = nic_port_rates(facts, subject.dev) if subject.kind != "GPU" else None
    carried = path.current_bw * 8 if path.current_bw is not None else None  # Gb/s per direction
    if soldered and not neck.partner_known and neck.width_short and (neck.cur_width or 0) >= SOLDERED_WIDTH \
            and not (neck.speed_short and busy_ok):
        severity, confidence = INFO, 0.7
        title = N_("soldered GPU wired x{cur} of its x{exp}: the board's design", cur=neck.cur_width, exp=neck.exp_width)
        detail += N_(" {soldered}: its lanes are wired on the board (a laptop or APU design commonly gives the discrete "
                     "GPU eight), so this is a slot limit, not a fault to fix.", soldered=capitalised(soldered))
    elif rates is not None and carried is not None:
        severity = line_rate_severity(carried, rates)
        what_text = join(N_(' and '), what)
        if severity == INFO:
            title = N_('NIC path ({what}) still carries its line rate ({rate} Gb/s)', what=what_text, rate=format(rates.total, "g"))
            detail += N_(' The path carries {bw} per direction ({gbit} Gb/s), more than the chip\'s ports can send together ({how}): nothing is lost.', bw=gbps(path.current_bw), gbit=format(carried, ".0f"), how=rates.how)
        elif carried < rates.port:
            title = N_('{kind} path ({what}) carries {gbit} Gb/s, below one port\'s line rate ({rate} Gb/s)', kind=_KIND_NAMES[subject.kind], what=what_text, gbit=format(carried, ".0f"), rate=format(rates.port, "g"))
            detail += N_(' The path carries {bw} per direction ({gbit} Gb/s): not even one port can reach its line rate ({how}); {short} of it is lost on the PCIe link.', bw=gbps(path.current_bw), gbit=format(carried, ".0f"), how=rates.how, short=format(1 - carried / rates.port, ".0%"))
        else:
            title = N_('{kind} path ({what}) carries one port\'s line rate but not all ports together ({gbit} of {rate} Gb/s)', kind=_KIND_NAMES[subject.kind], what=what_text, gbit=format(carried, ".0f"), rate=format(rates.total, "g"))
            detail += N_(' The path carries {bw} per direction ({gbit} Gb/s): each port alone reaches its line rate, the ports together ({how}) lose {short}.', bw=gbps(path.current_bw), gbit=format(carried, ".0f"), how=rates.how, short=format(1 - carried / rates.total, ".0%"))
        evidence.append(Evidence("line rate", rates.how))
    return Finding(
        severity, subject.label, title, detail=detail, evidence=tuple(evidence),
        expected=N_('{link_label} ({expected_bw} per direction)', link_label=link_label(neck.exp_speed, neck.exp_width), expected_bw=gbps(neck.expected_bw)),
        observed=N_('{link_label} ({current_bw} per direction)', link_label=link_label(neck.cur_speed, neck.cur_width), current_bw=gbps(neck.current_bw)),
        impact=Impact(round(weight * loss, 1),
                      N_('path to the CPU carries {current_bw} per direction instead of {expected_bw} ({loss} lost); ', current_bw=gbps(path.current_bw), expected_bw=gbps(path.expected_bw), loss=format(loss, ".0%")) + _USES[subject.kind], basis=N_('PCIe bandwidth = transfer rate x lanes (less encoding overhead); the slowest link on the path to the CPU sets the limit. Applies to host-device copies, not to NVLink traffic')),
        fix=_fix(neck), references=REFERENCES, related=related, confidence=confidence)


BIOS_LINK_SPEED = (
    N_("Set the slot's link speed back to Auto (or the highest generation) in the BIOS/UEFI setup: Intel platforms call it 'PCIe Link Speed' or 'Link Speed' per root port (PCH-IO or IIO/Processor configuration, often 'Gen1/Gen2/Gen3/Auto'); AMD platforms 'PCIe Link Speed', 'PCIe x16 Link Speed' or 'Target Link Speed' (NBIO/AMD CBS). Some vendors force Gen1-Gen3 for risers or compatibility: if a riser was the reason, replace it rather than keep the cap. The setting persists across reboots; nothing on the OS changes it lastingly."))


def _firmware_capped(facts: Facts, subject: _Subject, lk: Link, cap: FirmwareCap, activity: str) -> Finding:
    """Medium (high on a busy GPU): the port is configured below what both ends of the link can do."""
    severity = HIGH if subject.is_gpu and activity == "busy" else MEDIUM
    port = cap.port.address
    lost = 1 - cap.allowed / cap.capable if cap.capable else 0.0
    detail = (N_("The link above {address} can train only to {gen_label} although it could run {gen_label2}: {how}. This is a configuration (BIOS/firmware) limit, not the slot's wiring, so it can be changed.", address=lk.child.address, gen_label=gen_label(cap.allowed), gen_label2=gen_label(cap.capable), how=cap.how))
    if subject.is_gpu:
        detail += N_(' The GPU is {gpu_activity}.', gpu_activity=activity_name(gpu_activity(facts, subject.dev.address)))
    width = lk.cur_width or lk.exp_width
    return Finding(
        severity, subject.label, N_('{kind} link capped by firmware at {gen_label} (can do {gen_label2})', kind=_KIND_NAMES[subject.kind], gen_label=gen_label(cap.allowed), gen_label2=gen_label(cap.capable)),
        detail=detail, evidence=tuple(Evidence(a, b) for a, b in cap.evidence) + tuple(
            _runtime_evidence(facts, subject.dev.address) if subject.is_gpu else ()),
        expected=link_label(cap.capable, width), observed=link_label(cap.allowed, width),
        impact=Impact(round((WEIGHT_DATA if subject.kind != "NIC" else WEIGHT_OTHER) * lost, 1),
                      N_("{lost} of the link's bandwidth unavailable; ", lost=format(lost, ".0%")) + _USES[subject.kind], basis=N_("PCIe bandwidth = transfer rate x lanes (less encoding overhead): the link's current speed and width against its capability")),
        fix=make("inspect_pci", BIOS_LINK_SPEED, address=port, flags="-vvv"),
        references=REFERENCES + (X722_INTERNAL_BUS,), related=_addresses(lk.ports), confidence=0.8)


def _limited_note(lk: Link) -> str:
    """A sentence when the port above caps the device below its own maximum (slot- or host-limited)."""
    if not lk.slot_limited or lk.parent is None:
        return ""
    return (N_(" The device can do {link_label} but the port above allows at most {gen_label}: under load it will run at the port's maximum.", link_label=link_label(lk.child.max_speed, lk.child.max_width), gen_label=gen_label(lk.parent.max_speed)))


def _idle_speed(facts: Facts, subject: _Subject, lk: Link, activity: str) -> Finding:
    evidence = tuple(_link_evidence(lk) + _runtime_evidence(facts, subject.dev.address))
    common = dict(evidence=evidence, expected=link_label(lk.exp_speed, lk.exp_width),
                  observed=link_label(lk.cur_speed, lk.cur_width), references=REFERENCES,
                  related=_addresses(lk.ports))
    if activity == "idle":
        return Finding(INFO, subject.label, N_('idle GPU parked at {cur_speed} GT/s (power saving); re-check under load', cur_speed=format(lk.cur_speed, "g")),
                       detail=N_('GPUs lower their PCIe speed when idle and raise it within milliseconds of work. Width is at its expected value.') + _limited_note(lk),
                       confidence=0.8, **common)  # type: ignore[arg-type]
    return Finding(UNKNOWN, subject.label, N_('GPU link at {cur_speed} of {exp_speed} GT/s: cannot tell idle from busy', cur_speed=format(lk.cur_speed, "g"), exp_speed=format(lk.exp_speed, "g")),
                   detail=N_("No driver view of this GPU's utilisation or performance state was recorded; an idle GPU lowers its link speed on purpose. Re-check with nvidia-smi while it is working."),
                   **common)  # type: ignore[arg-type]


def _slot_limited(subject: _Subject, lk: Link) -> Finding:
    c, p = lk.child, lk.parent
    assert p is not None
    dev_bw = link_bandwidth(c.max_speed, c.max_width)
    unused = (dev_bw or 0) - (lk.expected_bw or 0)
    return Finding(
        INFO, subject.label,
        N_('slot-limited: {address} can do {link_label}, the port above {link_label2}', address=c.address, link_label=link_label(c.max_speed, c.max_width), link_label2=link_label(p.max_speed, p.max_width) if p.max_width is not None else gen_label(p.max_speed)),
        detail=N_("The link runs at the best the slot allows; {unused} per direction of the device's capability is unused. lspci calls this '(downgraded)' but it is not a fault of the link.", unused=gbps(unused)),
        evidence=tuple(_link_evidence(lk)), expected=link_label(lk.exp_speed, lk.exp_width),
        observed=link_label(lk.cur_speed, lk.cur_width),
        impact=Impact(0, N_('{unused} per direction unused ({expected_bw} of {dev_bw})', unused=gbps(unused), expected_bw=gbps(lk.expected_bw), dev_bw=gbps(dev_bw)), basis=N_('PCIe bandwidth = transfer rate x lanes: what the slot allows against what the device supports')),
        fix=Fix(notes=N_('Only a faster slot (or a faster platform) recovers this; nothing to change on the OS.')),
        references=REFERENCES, related=_addresses((p.address,)))


def _path_limited(facts: Facts, subject: _Subject, links: list[Link], cap: PathCap) -> Finding:
    """Info (low for a path keeping under a quarter of the card): the host or the slot caps the card below its own
    capability. Said whether the link is idle or busy: the cap holds under load."""
    parts, where = [], []
    if cap.speed_capped:
        parts.append(N_("host caps the {kind} at {gen} (the card can do {card})", kind=_KIND_NAMES[subject.kind],
                        gen=gen_label(cap.speed), card=gen_label(cap.card_speed)))
        where.append(N_("{port} allows at most {gen}", port=cap.speed_port, gen=gen_label(cap.speed)))
    if cap.width_capped:
        parts.append(N_("its slot path is x{width} (the card is x{card})", width=cap.width, card=cap.card_width))
        where.append(N_("{port} is x{width} wide", port=cap.width_port, width=cap.width))
    own = links[0]
    kept = cap.kept
    soldered = soldered_gpu(facts, subject.dev.address) if subject.is_gpu else None
    severity = LOW if kept is not None and kept < NARROW_PATH_SHARE and not soldered else INFO
    top_speed = cap.speed if cap.speed_capped else cap.card_speed
    top_width = cap.width if cap.width_capped else cap.card_width
    detail = (N_("On the path from {address} to its root port, {where}: under load the link runs at most {link}",
                 address=subject.dev.address, where=join(N_(' and '), where), link=link_label(top_speed, top_width))
              + (N_(", {kept} of what the card itself supports.", kept=format(kept, ".0%")) if kept is not None
                 else "."))
    if own.known and own.cur_speed is not None and top_speed is not None and own.cur_speed < top_speed - 0.01:
        detail += N_(" The link now runs at {speed} GT/s", speed=format(own.cur_speed, "g"))
        if subject.is_gpu:
            activity = gpu_activity(facts, subject.dev.address)
            detail += (N_("; the GPU is idle (idle parking).") if activity == "idle" else
                       N_("; the GPU is busy.") if activity == "busy" else
                       N_("; the GPU is {activity}: re-check under load whether it reaches the host's maximum.",
                          activity=activity_name(activity)))
        else:
            detail += "."
    if soldered:
        detail += N_(" {soldered}: the lanes are the board's design.", soldered=capitalised(soldered))
    evidence = _link_evidence(own)
    above = own.parent.address if own.parent else None
    for port in dict.fromkeys(p for p in (cap.speed_port, cap.width_port) if p and p != above):
        dev = facts.pci.get(port)
        if dev is not None:
            evidence.append(Evidence(dev.attr("max_link_speed") + " / max_link_width", link_label(dev.max_speed, dev.max_width)))
    if subject.dev.supported_speed is not None and subject.dev.supported_speed != subject.dev.max_speed:
        evidence.append(Evidence(subject.dev.attr("config") + " LnkCap2",
                                 f"Supported Link Speeds up to {subject.dev.supported_speed:g} GT/s"))
    card_bw = link_bandwidth(cap.card_speed, cap.card_width)
    path_bw = card_bw * kept if card_bw is not None and kept is not None else None
    return Finding(
        severity, subject.label, "; ".join(parts),
        detail=detail + N_(" This is the platform's limit, not a fault of the link: only another slot or host recovers it."),
        evidence=tuple(evidence), expected=link_label(cap.card_speed, cap.card_width),
        observed=link_label(top_speed, top_width),
        impact=Impact(round(WEIGHT_OTHER * (1 - kept), 1) if kept is not None and severity == LOW else 0,
                      N_("at most {v} per direction of the card's {v2}", v=gbps(path_bw), v2=gbps(card_bw)),
                      basis=N_("PCIe bandwidth = transfer rate x lanes: the path's narrowest and slowest port against the card")),
        fix=Fix(notes=N_('Only a faster or wider slot (or a newer platform) recovers this; nothing to change on the OS.')),
        references=REFERENCES, related=_addresses(tuple(p for p in (cap.speed_port, cap.width_port) if p)),
        confidence=0.9)


def _missing_detail(dev: PciDevice, lk: Link | None) -> str:
    if lk is not None and lk.down:
        return N_('current_link_width is 0: the link is down or the device is in a low-power state (D3cold)')
    names = [n for n, v in (("current_link_speed", dev.cur_speed), ("current_link_width", dev.cur_width),
                            ("max_link_speed", dev.max_speed), ("max_link_width", dev.max_width)) if v is None]
    if len(names) == 4:
        return N_('no link attribute files for {address} (trimmed recording, or no PCIe link)', address=dev.address)
    return N_('{v} not recorded for {address}', v=join(', ', names) or 'link attributes', address=dev.address)


def _addresses(ports: tuple[str, ...]) -> tuple[str, ...]:
    """Related PCI addresses, without the stand-in for a host port known only from the GPU driver."""
    return tuple(dict.fromkeys(p for p in ports if BDF.match(p)))


def _host_port(dev: PciDevice) -> PciDevice:
    """The port above, known only by the maximum speed the GPU driver reports for the host."""
    return PciDevice(N_('host port above {address}', address=dev.address), None, None, None, origin=dev.link_origin or "GPU driver",
                     max_speed=dev.port_max_speed, link_origin=dev.link_origin or N_('GPU driver'))


def _links(facts: Facts, dev: PciDevice) -> list[Link]:
    """The recorded path's links; the device's own link from the driver's view when the recording lacks it."""
    links = upstream_links(facts.pci, dev.address)
    own = links[0] if links and links[0].child.address == dev.address else None
    if dev.link_origin and (own is None or not own.known):
        links = [make_link(dev, facts.pci.get(dev.parent))] + links[1:]
        own = links[0]
    if own is not None and (own.parent is None or own.parent.max_speed is None) and dev.port_max_speed is not None:
        links = [make_link(own.child, _host_port(own.child))] + links[1:]
    return links


def _no_link(facts: Facts, subject: _Subject) -> str | None:
    """Why the subject has no PCIe link to judge (:func:`no_link_reason`), when no link of its own is known."""
    links = _links(facts, subject.dev)
    if links and links[0].child.address == subject.dev.address and links[0].known:
        return None
    return no_link_reason(subject.dev)


def _assess(facts: Facts, subject: _Subject) -> list[Finding]:
    dev = subject.dev
    links = _links(facts, dev)
    own = links[0] if links and links[0].child.address == dev.address else None
    if own is None or not own.known:
        return [Finding(UNKNOWN, subject.label, N_('PCIe link state not readable'),
                       detail=_missing_detail(dev, own),
                       evidence=(Evidence(dev.attr("current_link_width"), str(dev.cur_width)),))]
    integrated = None if subject.is_gpu else chipset_integrated_nic(dev)
    if integrated and own is not None:
        upstream = _judge(facts, subject, links[1:]) if any(lk.known for lk in links[1:]) else []
        if upstream or not (own.width_short or own.speed_short):
            return upstream
        return [_chipset_stub(subject, own, integrated, uplink=any(lk.known for lk in links[1:]))]
    return _judge(facts, subject, links)


#: How likely a chipset-integrated NIC's slow link registers are a real limit (i40e ignores them for the X722).
CHIPSET_STUB_CONFIDENCE = 0.4


CHIPSET_NIC_VERIFY = (
    N_("This NIC is part of the chipset, so there is no card to reseat. Before acting, measure what the port really carries (iperf3 between this host and a peer over this NIC's interface, several streams): if it reaches its line rate, the link registers describe the chipset's internal stub and nothing limits it. If it stays near 2 Gb/s, set the chipset's PCIe/LAN link options to Auto in the BIOS and update the BIOS."))


def _chipset_stub(subject: _Subject, lk: Link, integrated: str, uplink: bool) -> Finding:
    """Low: a NIC built into the chipset reads a narrow, slow link; reported, but below every GPU and RDMA path.

    Its registers may describe a stub inside the PCH rather than a real bottleneck (Linux's i40e driver skips
    its bandwidth warning for the X722), so the finding asks for a throughput test rather than a reseat.
    """
    lost = 1 - (lk.current_bw or 0) / lk.expected_bw if lk.expected_bw else 0.0
    return Finding(
        LOW, subject.label, N_('chipset NIC link reads {link_label} of {link_label2}: verify its throughput', link_label=link_label(lk.cur_speed, lk.cur_width), link_label2=link_label(lk.exp_speed, lk.exp_width)),
        detail=N_("{integrated}. Its link registers read {link_label} ({current_bw} per direction) although it supports {link_label2}. A real link this slow would cap a 10 GbE port near 2 Gb/s. But this NIC is built into the chipset, and its registers may describe a stub inside the PCH rather than its real path: Linux's i40e driver skips its PCIe bandwidth warning for the X722 for that reason. The chipset's uplink above it ", integrated=integrated, link_label=link_label(lk.cur_speed, lk.cur_width), current_bw=gbps(lk.current_bw), link_label2=link_label(lk.exp_speed, lk.exp_width))
               + (N_('runs at its expected rate.') if uplink else N_('is not in this recording.')),
        evidence=tuple(_link_evidence(lk)),
        expected=N_('{link_label} ({expected_bw} per direction)', link_label=link_label(lk.exp_speed, lk.exp_width), expected_bw=gbps(lk.expected_bw)),
        observed=N_('{link_label} ({current_bw} per direction)', link_label=link_label(lk.cur_speed, lk.cur_width), current_bw=gbps(lk.current_bw)),
        impact=Impact(round(WEIGHT_OTHER * lost * CHIPSET_STUB_CONFIDENCE, 1),
                      N_('if the link is real, {lost} of its bandwidth is unavailable; ', lost=format(lost, ".0%")) + _USES[subject.kind],
                      basis=N_("PCIe bandwidth = transfer rate x lanes, weighted by the chance that a chipset NIC's registers describe its real path")),
        fix=make("inspect_pci", CHIPSET_NIC_VERIFY, address=subject.dev.address, flags="-vvv"),
        references=REFERENCES + (X722_INTERNAL_BUS,), related=_addresses(lk.ports),
        confidence=CHIPSET_STUB_CONFIDENCE)


def _judge(facts: Facts, subject: _Subject, links: list[Link]) -> list[Finding]:
    """The findings of one device's path: a downgrade, or the host's cap and the idle-speed verdict."""
    found = _judge_one(facts, subject, links)
    cap = path_cap(links) if found is None or found.severity in (INFO, UNKNOWN) else None
    limited = cap is not None and (cap.speed_capped or cap.width_capped)
    if not limited:
        return [found] if found is not None else []
    host = _path_limited(facts, subject, links, cap)  # type: ignore[arg-type]
    if found is None or found.title.startswith("slot-limited"):
        return [host]
    return [found, host]


def _judge_one(facts: Facts, subject: _Subject, links: list[Link]) -> Finding | None:
    dev = subject.dev
    activity = gpu_activity(facts, dev.address) if subject.is_gpu else "busy"
    busy_ok = activity == "busy"
    if not any(lk.width_short for lk in links):
        for lk in links:
            cap = firmware_cap(facts.pci, lk.child, lk.parent)
            if cap is not None:
                return _firmware_capped(facts, subject, lk, cap, activity)
    real = [lk for lk in links if lk.width_short or (lk.speed_short and busy_ok)]
    if real:
        found = _downgrade(facts, subject, links, real, busy_ok)
        if subject.is_gpu and c2c_gpu(facts, dev.address):
            return replace(found, severity=INFO, title=found.title + N_(" (host traffic uses NVLink-C2C)"),
                           detail=found.detail + N_(" This GPU reaches CPU memory over NVLink-C2C; its PCIe link carries only "
                                                     "configuration and peer traffic, so this does not slow inference."),
                           impact=Impact(0, N_("none for host-device copies (NVLink-C2C)"),
                                         basis=N_("Grace Hopper GPUs reach host memory over NVLink-C2C, not over this PCIe link")), confidence=0.7)
        return found
    slow = [lk for lk in links if lk.speed_short]
    if slow:
        return _idle_speed(facts, subject, slow[0], activity)
    limited = [lk for lk in links if lk.known and lk.slot_limited]
    if limited:
        return _slot_limited(subject, limited[0])
    return None


@check("pcie.link_downgrade", "PCIe link speed and width on every GPU and NIC path", "pcie", acts="hardware",
       fixes=("pcie_retrain", "inspect_pci"), needs=("pci",))
def link_downgrade(facts: Facts) -> Iterator[Finding]:
    """Walk each GPU's and NIC's path to its root port and compare every link with both ends' maxima.

    A narrower link is a downgrade; a slower one too for NICs and busy GPUs (idle GPUs lower their
    speed on purpose: info). A device faster than its slot is slot-limited (info). Severity follows
    the bandwidth lost on the whole path; the bottleneck may be a switch uplink above the device.
    """
    subjects = _subjects(facts)
    if not subjects:
        return
    if facts.host.is_vm:
        gpus = [s for s in subjects if s.is_gpu]
        if gpus:
            yield Finding(INFO, "node", N_('virtual machine: PCIe link state is emulated, not checked'),
                          detail=N_('Inside a guest the root ports and links are virtual; link speed, width and NUMA placement are only authoritative on the hypervisor host. Run the doctor there for {v}.', v=join(', ', (s.dev.address for s in gpus))),
                          evidence=(Evidence("host", facts.host.vm_reason or "virtual machine"),),
                          confidence=0.5)
        return
    fine = 0
    idle: list[Finding] = []
    no_link: list[tuple[_Subject, str]] = []
    for subject in subjects:
        reason = _no_link(facts, subject)
        if reason is not None:
            no_link.append((subject, reason))
            continue
        found = _assess(facts, subject)
        if not found:
            fine += 1
        for finding in found:
            if finding.severity == INFO and finding.title.startswith("idle GPU"):
                idle.append(finding)
            else:
                yield finding
    if len(idle) == 1:
        yield idle[0]
    elif idle:
        yield replace(idle[0], subject="node",
                      title=N_("{n} idle GPUs parked at reduced link speed (power saving); re-check under load", n=len(idle)),
                      detail=idle[0].detail + N_(" GPUs: {list}.", list=join(", ", (N_("{gpu} at {link}", gpu=f.subject, link=f.observed) for f in idle))),
                      evidence=tuple(e for f in idle for e in f.evidence[:1]) + idle[0].evidence[-1:],
                      observed=join('; ', (f"{f.subject}: {f.observed}" for f in idle)),
                      related=tuple(r for f in idle for r in f.related))
    skipped = join(' ', (N_('Does not apply: {reason}.', reason=reason) for _, reason in no_link))
    if fine:
        yield Finding(PASS, "node", Nn_('{n} GPU/NIC path at expected speed and width', '{n} GPU/NIC paths at expected speed and width', fine),
                      detail=skipped,
                      evidence=(Evidence(facts.pci.origin or "pci", f"{len(subjects) - len(no_link)} devices checked"),)
                      + tuple(Evidence(s.dev.attr("config"), r) for s, r in no_link[:8]))
    elif no_link:
        yield Finding(PASS, "node", Nn_('no PCIe link to judge on {n} function', 'no PCIe link to judge on {n} functions', len(no_link)),
                      detail=skipped, evidence=tuple(Evidence(s.dev.attr("config"), r) for s, r in no_link[:8]),
                      related=tuple(s.dev.address for s, _ in no_link))
