"""rdma.port_state: an RDMA port NCCL is told to use (or the only one) that is not ACTIVE."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.procs import env_value
from doctor.derived.rdma import parse_list
from doctor.facts import Facts, RdmaPort
from doctor.findings import MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.reads import reads
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-hca",
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-infiniband",
)


def _fix(facts: Facts, port: RdmaPort) -> Fix:
    netdevs = [n.name for n in facts.netdevs_of(port.pci_address)] if port.pci_address else []
    return make("rdma_port", device=port.device, port=port.port, address=port.pci_address or None,
                netdevs=netdevs,
                notes=N_("Check the cable/transceiver and the switch port; if the port is retired, drop it from NCCL_IB_HCA so NCCL's device list matches the hardware on every node."))


@check("rdma.port_state", "RDMA ports NCCL is told to use are up", "rdma", acts="hardware", fixes=("rdma_port",), reads=reads(env=("NCCL_IB_HCA",)),
       needs=("rdma",))
def port_state(facts: Facts) -> Iterator[Finding]:
    """A port listed in ``NCCL_IB_HCA`` (or the node's only RDMA port) whose state is not ACTIVE: medium."""
    ports = list(facts.rdma)
    if not ports:
        return
    hca = env_value(facts, "NCCL_IB_HCA")
    if hca is not None:
        wanted = parse_list(hca.value)
        chosen = [p for p in ports if not wanted.exclude and wanted.matches(p.device, p.port)]
        why = N_('listed in NCCL_IB_HCA={value}', value=hca.value)
    elif len(ports) == 1:
        chosen, why = ports, N_('the only RDMA port of this node')
    else:
        return  # NCCL uses every active port and skips down ones; net.link judges the NICs
    if not chosen:
        return
    bad = [p for p in chosen if not p.active]
    for port in bad:
        evidence = [Evidence(f"{port.origin}/state", port.state or "unreadable"),
                    Evidence(f"{port.origin}/phys_state", port.phys_state or "unreadable")]
        if hca is not None:
            evidence += [Evidence(src, val) for src, val in hca.evidence]
        yield Finding(
            MEDIUM, port.name, N_('RDMA port {name} is {v} ({why})', name=port.name, v=port.state or 'not active', why=why),
            detail=(N_('{name} ({v}, {v2}) is {v3}, physical state {v4}. NCCL skips ports that are not active, so the GPUs nearest to it send through a farther NIC or not at all.', name=port.name, v=port.link_layer or 'link layer ?', v2=port.rate_text or 'rate ?', v3=port.state or 'not ACTIVE', v4=port.phys_state or '?')),
            evidence=tuple(evidence), expected=N_('ACTIVE / LinkUp'), observed=f"{port.state} / {port.phys_state}",
            impact=Impact(40, N_('one rail fewer: less inter-node bandwidth, cross-switch traffic for its GPUs'), basis=N_('a port that is down carries nothing; NCCL uses the remaining rails')),
            fix=_fix(facts, port), references=REFERENCES,
            related=tuple(n.name for n in facts.netdevs_of(port.pci_address)) if port.pci_address else ())
    if not bad:
        yield Finding(PASS, "node", N_('{n_chosen} RDMA port(s) NCCL uses are ACTIVE', n_chosen=len(chosen)),
                      evidence=tuple(Evidence(f"{p.origin}/state", p.state or "") for p in chosen))
