"""gpu.nvlink: inactive or slow NVLinks, and NVLink error counters (replay, recovery, CRC).

Counters are totals since the driver loaded: one snapshot cannot show how fast they grow, so they
are graded by magnitude (recoveries weigh most: each one retrains the link) and the finding says so.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, capitalised, join
from doctor.parsers.nvlink import NvlinkGpu
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",
              "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html")
_RESET_NOTE = (N_('Re-read after stopping all GPU work and resetting every GPU together (`nvidia-smi -r`) with the Fabric Manager restarted; links that stay inactive are hardware (baseboard, NVSwitch tray): open a support case. Nothing to roll back.'))
#: A link slower than this share of the node's fastest link is degraded.
SLOW_SHARE = 0.9
#: (replay + CRC errors at least, or recoveries at least, severity, score), worst first
ERROR_LEVELS = ((100_000, 100, HIGH, 30.0), (1_000, 1, MEDIUM, 10.0), (1, 10**12, LOW, 2.0))


def _gpu_of(facts: Facts, link: NvlinkGpu) -> Gpu | None:
    if link.uuid:
        for g in facts.gpus.gpus:
            if g.runtime and g.runtime.uuid and g.runtime.uuid.lower() == link.uuid.lower():
                return g
    return facts.gpus.gpus[link.index] if 0 <= link.index < len(facts.gpus.gpus) else None


def _label(facts: Facts, link: NvlinkGpu) -> tuple[str, str | None]:
    gpu = _gpu_of(facts, link)
    return (gpu_label(facts, gpu.address), gpu.address) if gpu else (f"GPU {link.index}", None)


@check("gpu.nvlink", "Inactive or slow NVLinks and NVLink error counters", "gpu", acts="hardware", fixes=("gpu_query",), needs=("gpus",))
def gpu_nvlink(facts: Facts) -> Iterator[Finding]:
    """High when a GPU has inactive NVLinks (or all of them) while its peers' are up, medium when links run
    below the node's link speed; replay/CRC/recovery counters: low from 1, medium from 1000 (or any
    recovery), high from 100000 (or 100 recoveries). Quiet on PCIe-only GPUs (no active link anywhere), except
    that an SXM GPU, or any GPU of a system with NVSwitches, with every link inactive is high.
    A recording that holds ``nvlink -s`` but no PCI view of the GPUs (a trimmed sosreport) is still read."""
    if not facts.gpus.gpus and facts.runs_commands:
        return  # no GPU: do not even run nvidia-smi nvlink on a live host
    nv = facts.nvlink
    active = {g.index: [s for s in g.speeds.values() if s is not None] for g in nv.gpus}
    if not any(active.values()):
        nvswitch = any(d.is_nvswitch for d in facts.pci.devices.values())
        stranded = [g for g in nv.gpus if (g.all_inactive or (g.speeds and not active[g.index]))
                    and (nvswitch or "SXM" in (g.name or "").upper())]
        for g in stranded:  # an SXM board or a GPU behind NVSwitches is never PCIe-only
            label, address = _label(facts, g)
            yield Finding(
                HIGH, label, N_('all NVLinks inactive on an NVLink-only board'),
                detail=N_('{v} is an SXM module{v2}: it always has NVLinks, and nvidia-smi reports every one inactive. It is cut off from the NVLink fabric; collectives that include it fall back to PCIe or fail.', v=g.name or N_('This GPU'), v2=N_(' behind NVSwitches') if nvswitch else ''),
                evidence=(Evidence(nv.status_origin or "nvidia-smi nvlink -s", f"GPU {g.index}: all links inactive"),),
                expected=N_('every NVLink active'), observed=N_('none active'),
                impact=Impact(60, N_('tensor-parallel all-reduce slows to PCIe speed for this GPU'),
                              basis=N_('an SXM GPU without NVLink reaches its peers over PCIe only')),
                fix=make("gpu_query", _RESET_NOTE, index=g.index, query="nvlink_status"),
                references=REFERENCES, related=(address,) if address else ())
        if not stranded and nv.status_missing and nvswitch:
            yield Finding(UNKNOWN, "node", N_('NVLink state not recorded on an NVSwitch system'),
                          evidence=(Evidence("nvidia-smi nvlink -s", nv.status_missing),))
        return
    expected_links = max(len(g.speeds) for g in nv.gpus)
    top = max(s for speeds in active.values() for s in speeds)
    where = nv.status_origin or N_('nvidia-smi nvlink -s')
    found = 0
    for g in nv.gpus:
        label, address = _label(facts, g)
        related = (address,) if address else ()
        inactive = sorted(k for k, s in g.speeds.items() if s is None)
        slow = sorted(k for k, s in g.speeds.items() if s is not None and s < top * SLOW_SHARE)
        if g.all_inactive or inactive or not g.speeds:
            found += 1
            n = expected_links if (g.all_inactive or not g.speeds) else len(inactive)
            links = N_('all links') if (g.all_inactive or not g.speeds) else N_("links {numbers}", numbers=", ".join(map(str, inactive)))
            yield Finding(
                HIGH, label, N_('{n} of {expected_links} NVLinks inactive', n=n, expected_links=expected_links),
                detail=N_('{links} of this GPU are down while other GPUs have {expected_links} active. Traffic to its peers loses that bandwidth share or, with every link down, falls back to PCIe (NCCL P2P/NVLS unusable for this GPU).', links=capitalised(links), expected_links=expected_links),
                evidence=(Evidence(where, f"GPU {g.index}: {links} <inactive>"),),
                expected=N_('{expected_links} links at {top} GB/s', expected_links=expected_links, top=format(top, "g")), observed=N_('{expected_links} active', expected_links=expected_links - n),
                impact=Impact(60 if n == expected_links else 100 * n / (expected_links * 2),
                              N_("tensor-parallel all-reduce slows to the weakest GPU's NVLink bandwidth"),
                          basis=N_("ring and tree all-reduce run at the pace of the slowest link: the share of this GPU's links that are inactive")),
                fix=make("gpu_query", _RESET_NOTE, index=g.index, query="nvlink_status"),
                references=REFERENCES, related=related)
        elif slow:
            found += 1
            yield Finding(
                MEDIUM, label, N_('{n_slow} NVLinks below {top} GB/s', n_slow=len(slow), top=format(top, "g")),
                detail=N_('Some links trained at a lower rate than the rest of the node.'),
                evidence=(Evidence(where, f"GPU {g.index}: " + join(', ', (
                    f"link {k} {g.speeds[k]:g} GB/s" for k in slow[:6]))),),
                expected=N_('{top} GB/s per link', top=format(top, "g")), observed=N_('{v} GB/s', v=format(min(g.speeds[k] or 0 for k in slow), 'g')),
                impact=Impact(15, N_("less NVLink bandwidth for this GPU's collectives"),
                          basis=N_("per-link speed from nvidia-smi nvlink -s against the node's other links")),
                fix=make("gpu_query", N_('Reset the GPUs together and re-read; persistent slow links are hardware.'),
                         index=g.index, query="nvlink_status"),
                references=REFERENCES, related=related)
        totals = {"replay": 0, "recovery": 0, "crc": 0}
        for counters in g.errors.values():
            for name, value in counters.items():
                key = "crc" if "crc" in name else name
                if key in totals and value > 0:
                    totals[key] += value
        errors = totals["replay"] + totals["crc"]
        level = next((lv for lv in ERROR_LEVELS if errors >= lv[0] or totals["recovery"] >= lv[1]), None)
        if level is not None and (errors or totals["recovery"]):
            found += 1
            _, _, sev, score = level
            bad = sorted(k for k, c in g.errors.items() if any(v > 0 for v in c.values()))
            yield Finding(
                sev, label, N_('NVLink errors: {totals} replay, {totals2} recovery, {totals3} CRC', totals=totals['replay'], totals2=totals['recovery'], totals3=totals['crc']),
                detail=N_('Replays and CRC errors are retransmissions; a recovery retrains the link and stalls it. These are totals since the driver loaded: one sample cannot show whether they still grow; compare two readings a few minutes apart under load.'),
                evidence=(Evidence(nv.errors_origin or "nvidia-smi nvlink -e",
                                   f"GPU {g.index} links {join(', ', map(str, bad[:8]))}: "
                                   + join(', ', (f"{k} {v}" for k, v in totals.items()))),),
                expected=N_('0 (or not growing)'), observed=N_('{errors} events', errors=errors + totals['recovery']),
                impact=Impact(score, N_('retransmissions and link retraining cut NVLink bandwidth'),
                          basis=N_("each replay or recovery resends data or retrains the link; graded by the counter's size, since one sample cannot show its rate")),
                fix=make("gpu_query",
                         N_('Re-read under load; growing counters on one link point at the baseboard or NVSwitch tray: drain the node and open a support case. Nothing to roll back.'),
                         index=g.index, query="nvlink_errors"),
                references=REFERENCES, related=related)
    if not found:
        yield Finding(PASS, "node", N_('{n_gpus} GPUs with {expected_links} NVLinks each at {top} GB/s', n_gpus=len(nv.gpus), expected_links=expected_links, top=format(top, "g"))
                      + (N_(', no NVLink errors') if nv.errors_origin else ""),
                      evidence=(Evidence(where, f"GPU 0: {expected_links} x {top:g} GB/s"),))
