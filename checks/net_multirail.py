"""net.multirail: rp_filter/arp_ignore/arp_announce that break RoCE with several NICs on one subnet.

See docs/checks.md#net-multirail.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.rdma import roce_ports
from doctor.facts import Facts, Sysctls
from doctor.findings import MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import sysctl_fix
from doctor.i18n import N_, join
from doctor.inputs import whole
from doctor.registry import check

REFERENCES = (
    "https://docs.kernel.org/networking/ip-sysctl.html",
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/rdma+over+converged+ethernet+(roce)",
)
NOTES = (N_("With several NICs in one subnet, a strict reverse-path filter drops packets that arrive on another rail than the route back points to, and ARP answered by any interface (arp_ignore=0, arp_announce=0) sends one rail's traffic to another NIC, so RoCE connections resolve to the wrong port. Add source-based routing (one table per rail) as well."))
WANT = {"rp_filter": "not 1 (0 or 2, loose)", "arp_ignore": ">= 1", "arp_announce": "2"}


def _effective(sysctls: Sysctls, name: str, iface: str) -> tuple[int | None, list[Evidence]]:
    """The value the kernel uses: max(conf.all, conf.<if>) for these three."""
    values, evidence = [], []
    for scope in ("all", iface):
        key = f"net.ipv4.conf.{scope}.{name}"
        value = sysctls.get_int(key)
        if value is not None:
            values.append(value)
            evidence.append(Evidence(sysctls.origins.get(key, "sysctl"), f"{key} = {value}"))
    return (max(values) if len(values) == 2 else None), evidence


def _bad(name: str, value: int) -> bool:
    return {"rp_filter": value == 1, "arp_ignore": value == 0, "arp_announce": value < 2}[name]


def _single_rail(facts: Facts) -> str | None:
    """Fewer than two active RoCE interfaces (told only when the NICs and RDMA ports were read whole)."""
    if not whole(facts, "netdevs", "rdma") or len({rp.netdev.name for rp in roce_ports(facts)}) >= 2:
        return None
    return N_("fewer than two active RoCE interfaces")


@check("net.multirail", "Reverse-path and ARP settings for RoCE NICs sharing a subnet", "network", acts="os",
       fixes=("sysctl",),
       sysctls=("net.ipv4.conf.*.rp_filter", "net.ipv4.conf.*.arp_ignore", "net.ipv4.conf.*.arp_announce"),
       needs=("netdevs", "rdma", "routes", "sysctls"), applies=_single_rail)
def multirail(facts: Facts) -> Iterator[Finding]:
    """Two or more active RoCE interfaces with a connected route to the same subnet, and a strict
    ``rp_filter`` (1), ``arp_ignore`` 0 or ``arp_announce`` below 2 on them (medium)."""
    ports = roce_ports(facts)
    names = sorted({rp.netdev.name for rp in ports})
    if len(names) < 2:
        return
    routes = facts.routes
    if routes is None:
        yield Finding(UNKNOWN, "node", N_('routing table not recorded'),
                      detail=N_('proc/net/route is missing: whether RoCE NICs share a subnet cannot be told.'))
        return
    subnets: dict[tuple[str, str], list[str]] = {}
    for r in routes:
        if r.connected and r.iface in names and r.iface not in subnets.get((r.destination, r.mask), []):
            subnets.setdefault((r.destination, r.mask), []).append(r.iface)
    shared = {k: v for k, v in subnets.items() if len(v) >= 2}
    if not shared:
        return  # one subnet per rail: the settings do not matter
    sysctls = facts.sysctls
    for (dest, mask), ifaces in sorted(shared.items()):
        bad: dict[str, list[str]] = {}
        evidence: list[Evidence] = [Evidence("proc/net/route", f"{dest}/{mask} via {join(', ', ifaces)}")]
        unknown = []
        for iface in ifaces:
            for name in WANT:
                value, ev = _effective(sysctls, name, iface)
                if value is None:
                    unknown.append(f"{iface}.{name}")
                elif _bad(name, value):
                    bad.setdefault(name, []).append(iface)
                    evidence.extend(ev)
        where = N_('{n_ifaces} RoCE NICs on {dest}/{mask}', n_ifaces=len(ifaces), dest=dest, mask=mask)
        if not bad:
            if unknown:
                yield Finding(UNKNOWN, "node", N_('multi-rail ARP/rp_filter settings not recorded for {where}', where=where),
                              detail=N_('missing: {v}', v=join(', ', unknown[:6])))
            else:
                yield Finding(PASS, "node", N_('{where}: rp_filter, arp_ignore and arp_announce suit multi-rail', where=where))
            continue
        wanted: dict[str, str] = {}
        if "arp_ignore" in bad:
            wanted["net.ipv4.conf.all.arp_ignore"] = "1"
        if "arp_announce" in bad:
            wanted["net.ipv4.conf.all.arp_announce"] = "2"
        for iface in bad.get("rp_filter", []):
            wanted[f"net.ipv4.conf.{iface}.rp_filter"] = "2"
        yield Finding(
            MEDIUM, "node", N_('{where} with ', where=where) + join(', ', (f"{n} {'strict' if n == 'rp_filter' else 'unset'}"
                                                          for n in bad)),
            detail=NOTES, evidence=tuple(dict.fromkeys(evidence)),
            expected=join('; ', (f"{n} {WANT[n]}" for n in bad)),
            observed=join('; ', (N_('{n} wrong on {v}', n=n, v=', '.join(v)) for n, v in bad.items())),
            impact=Impact(40, N_('RoCE connections fail or traffic of several rails lands on one NIC'),
                          basis=N_('kernel ip-sysctl documentation: with several NICs in one subnet, rp_filter=1 and arp_ignore=0 let one NIC answer for all')),
            fix=sysctl_fix(wanted, sysctls, "90-gnd-multirail.conf", notes=NOTES),
            references=REFERENCES, related=tuple(ifaces))
