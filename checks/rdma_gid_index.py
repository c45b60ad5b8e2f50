"""rdma.gid_index: the RoCE GID index NCCL will use on each port, and whether it can work."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.procs import EnvSetting, by_place, env_value, server_roots, setting_label, user_env
from doctor.derived.rdma import (
    AF_INET6,
    NcclGidEnv,
    choose_gid,
    configured,
    describe_gid,
    family,
    link_local,
    parse_list,
    valid,
    version,
)
from doctor.facts import Facts, Gid, RdmaPort
from doctor.findings import HIGH, LOW, MEDIUM, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.fixes.startup import env_fix
from doctor.i18n import N_, join
from doctor.reads import reads
from doctor.registry import check

GID_VARS = ("NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE", "NCCL_IB_ROCE_VERSION_NUM")
REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-gid-index",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#networking-issues",
    "https://github.com/NVIDIA/nccl/blob/master/src/transport/net_ib/connect.cc",
    "https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-infiniband",
)
UNSET_FIX_NOTES = (N_('Remove NCCL_IB_GID_INDEX where the server is started and restart the server; NCCL >= 2.21 then picks the RoCE v2 IPv4 entry on each port itself.'))


def _where(setting: EnvSetting | None) -> str:
    if setting is None:
        return "unset"
    places = [f"pid {p}" for p in setting.pids] + list(setting.files)
    return f"{setting.name}={setting.value} ({join(', ', places)})"


def _port_netdevs(facts: Facts, port: RdmaPort) -> set[str]:
    names = {n.name for n in facts.netdevs_of(port.pci_address)} if port.pci_address else set()
    return names or set(port.netdevs)


def _foreign_ndev(facts: Facts, port: RdmaPort, ndev: str | None) -> bool:
    """The entry's netdev exists and belongs to another PCI device than the port's."""
    if not ndev or not port.pci_address:
        return False
    other = facts.netdev(ndev)
    return other is not None and other.pci_address is not None and other.pci_address != port.pci_address


AUTO_NOTES = (N_('Assign the RoCE netdev an IPv4 address in netplan/NetworkManager (the kernel then adds ::ffff: GIDs of both RoCE versions), or set NCCL_IB_ADDR_FAMILY=AF_INET6 deliberately when the fabric is IPv6-only; exclude an unused port with NCCL_IB_HCA=^=<dev>.'))


def _table_evidence(port: RdmaPort) -> Evidence:
    rows = [describe_gid(g.index, g) for g in port.gids if configured(g)]
    return Evidence(f"{port.origin}/gids, gid_attrs/types, gid_attrs/ndevs", join('; ', rows) or "no configured GID")


def _unset_fix(facts: Facts, setting: EnvSetting) -> Fix:
    return env_fix(facts, setting, notes=UNSET_FIX_NOTES + N_(' The rollback restores {name}={value}.', name=setting.name, value=setting.value))


@check("rdma.gid_index", "RoCE GID index NCCL will use", "rdma", acts="application",
       fixes=("unit_env", "file_patch", "process_restart", "show_addresses"), env=GID_VARS,
       reads=reads(env=(*GID_VARS, "NCCL_IB_HCA")), needs=("netdevs", "rdma"))
def gid_index(facts: Facts) -> Iterator[Finding]:
    """Reproduce NCCL's GID choice per RoCE port; flag a forced or automatic choice that cannot route.

    ``NCCL_IB_GID_INDEX`` pointing at an empty, RoCE v1, ``fe80::`` or foreign-netdev entry is high;
    a RoCE port whose table has no IPv4 entry (NCCL stays on link-local index 0) is high unless
    ``NCCL_IB_ADDR_FAMILY=AF_INET6`` with a routable RoCE v2 IPv6 entry. InfiniBand ports do not apply.
    """
    ports = list(facts.rdma)
    if not ports:
        return
    settings = {name: env_value(facts, name) for name in GID_VARS}
    #: every place that forces an index, each judged with its own value and fixed on its own
    forcings = [p for s in user_env(facts, ["NCCL_IB_GID_INDEX"]) for p in by_place(s)]
    env = NcclGidEnv.from_values(None, *(s.value if s else None for name, s in settings.items()
                                         if name != "NCCL_IB_GID_INDEX"))
    forced_envs = [NcclGidEnv.from_values(f.value, env.addr_family, env.addr_range, str(env.roce_version))
                   for f in forcings]
    hca = env_value(facts, "NCCL_IB_HCA")
    hca_list = parse_list(hca.value) if hca else None
    env_ev = [Evidence(src, val) for name, s in settings.items() if s and name != "NCCL_IB_GID_INDEX"
              for src, val in s.evidence]
    forced_hits: list[dict[str, list[tuple[RdmaPort, str, str, set[str]]]]] = [{} for _ in forcings]
    v1_ports: list[tuple[RdmaPort, str]] = []
    for port in ports:
        if port.link_layer is not None and port.link_layer.lower() != "ethernet":
            continue  # InfiniBand: NCCL uses index 0 or the routable-FLID index; no RoCE rule applies
        if hca_list is not None and not hca_list.matches(port.device, port.port):
            continue
        if not port.gids:
            yield Finding(UNKNOWN, port.name, N_('GID table of {name} not recorded', name=port.name),
                          detail=N_("{v}: NCCL's GID choice cannot be reproduced.", v=port.gids_missing or 'no gids/ files'),
                          evidence=(Evidence(port.origin, port.gids_missing or "no GID entries"),))
            continue
        if (port.link_layer or "").lower() != "ethernet":
            continue  # link layer not recorded: no RoCE rule can be applied
        own = _port_netdevs(facts, port)
        evidence = (_table_evidence(port), *env_ev)
        for n, forced_env in enumerate(forced_envs):
            forced = choose_gid(port, forced_env)
            if not forced.forced:
                continue
            problem = _forced_problem(facts, port, forced.gid, own, env.roce_version)
            forced_hits[n].setdefault(problem or "", []).append((port, forced.describe, choose_gid(port, env).describe,
                                                                  own))
        if any(e.gid_index is not None for e in forced_envs):
            continue
        choice = choose_gid(port, env)
        gid = choice.gid
        if valid(gid) and version(gid) == 1 and env.roce_version == 1:
            v1_ports.append((port, choice.describe))
            continue
        if valid(gid) and (version(gid) == env.roce_version):
            yield Finding(PASS, port.name, N_('NCCL picks GID {describe} on {name}', describe=choice.describe, name=port.name),
                          evidence=evidence)
            continue
        if not port.active:
            continue  # a down port is reported by rdma.port_state / net.link
        routable_v6 = [g for g in port.gids if family(g) == AF_INET6 and valid(g) and version(g) == 2]
        if valid(gid):
            yield Finding(
                LOW, port.name, N_('NCCL picks RoCE v{version} GID {describe} on {name}', version=version(gid), describe=choice.describe, name=port.name),
                detail=(N_('No RoCE v{roce_version} entry in the wanted family exists, so NCCL uses {describe}. RoCE v1 is not routable across L3 subnets.', roce_version=env.roce_version, describe=choice.describe)),
                evidence=evidence, expected=N_('a RoCE v{roce_version} entry', roce_version=env.roce_version), observed=choice.describe,
                impact=Impact(5, N_('works inside one L2 segment only'), basis=N_('RoCE v1 frames are layer-2 only and are not routed across subnets')), references=REFERENCES,
                related=tuple(sorted(own)))
            continue
        has_v4 = any(family(g) != AF_INET6 and valid(g) for g in port.gids)
        if has_v4:
            what = N_('no RoCE v{roce_version} IPv4 entry; NCCL falls back to {describe}', roce_version=env.roce_version, describe=choice.describe)
        else:
            what = N_('no IPv4 GID at all; NCCL stays on {describe}', describe=choice.describe)
        v6_hint = (N_(' The table holds routable RoCE v2 IPv6 entries; NCCL_IB_ADDR_FAMILY=AF_INET6 would use them.')
                   if routable_v6 else "")
        netdev = sorted(own)[0] if own else None
        yield Finding(
            HIGH, port.name, N_('RoCE port {name} has {split}', name=port.name, split=what.split(';')[0]),
            detail=(N_('{what}. A link-local or RoCE v1 GID is not routable: NCCL connections across subnets fail or time out (Mooncake#1617 shows such a table).{v6_hint}', what=what, v6_hint=v6_hint)),
            evidence=evidence, expected=N_('a valid RoCE v2 ::ffff:a.b.c.d entry (give the netdev an IPv4 address)'),
            observed=N_('auto pick {describe}', describe=choice.describe),
            impact=Impact(85, N_('multi-node NCCL/KV transfer over this port fails or falls back'), basis=N_('a link-local or RoCE v1 GID is not routable across subnets, so connections fail (NCCL troubleshooting guide; Mooncake#1617)')),
            fix=make("show_addresses", netdev=netdev, notes=AUTO_NOTES) if netdev else Fix(notes=AUTO_NOTES),
            references=REFERENCES, related=tuple(sorted(own)))
    for forcing, hits in zip(forcings, forced_hits):
        yield from _forced_findings(facts, forcing, hits, env_ev + [Evidence(src, val) for src, val in forcing.evidence],
                                    by_setting=len(forcings) > 1)
    version_setting = settings["NCCL_IB_ROCE_VERSION_NUM"]
    if v1_ports and version_setting is not None:
        for place in by_place(version_setting):
            yield _roce_v1(facts, place, v1_ports)


def _forced_problem(facts: Facts, port: RdmaPort, gid: Gid | None, own: set[str], roce_version: int) -> str | None:
    """Why a forced GID entry cannot work on ``port``, or None when it is a usable entry."""
    if gid is None or not configured(gid):
        return N_("an empty slot")
    if link_local(gid):
        return N_("a link-local fe80:: entry (not routable)")
    if version(gid) == 1 and roce_version != 1:
        return N_("a RoCE v1 entry (L2 only, not routable)")
    if _foreign_ndev(facts, port, gid.ndev):
        return N_("an entry of netdev {ndev}, not of this port ({v})", ndev=gid.ndev, v=", ".join(sorted(own)) or "?")
    return None


def _consequence(facts: Facts, problem: str) -> str:
    """What a forced unusable entry does, said so that it stays true on a node that is serving now."""
    if problem == "an empty slot":
        what = N_("NCCL cannot create connections over these ports (ibv_modify_qp fails; NCCL hints that an incorrect GID index is forced)")
    elif problem.startswith("an entry of netdev"):
        what = N_("NCCL sends with another interface's address: replies come back over that interface's rail, so "
                  "connections fail or run over the wrong rail")
    else:
        what = N_("NCCL's connections over these ports to nodes in another subnet fail or hang (ibv_modify_qp or "
                  "connection timeouts); peers in the same L2 segment still connect")
    if server_roots(facts):
        what += N_(". A server runs now, so it is either single-node (NCCL does not use these ports inside a node) or its "
                   "peers share the L2 segment: the first multi-node or cross-subnet deployment breaks")
    return what + N_(".")


#: NCCL env.html: "NCCL_IB_ROCE_VERSION_NUM ... Defines the RoCE version associated to the infiniband GID
#: dynamically selected by NCCL when NCCL_IB_GID_INDEX is left unset." Default 2.
ROCE_V1_BASIS = N_("NCCL documentation of NCCL_IB_ROCE_VERSION_NUM: it sets the RoCE version of the GID NCCL selects "
                 "(default 2). The kernel's sysfs-class-infiniband ABI names the two types \"IB/RoCE v1\" and "
                 "\"RoCE v2\"; RoCE v1 is an Ethernet frame without an IP header, so it is not routed and carries no "
                 "ECN marking for DCQCN congestion control")


def _roce_v1(facts: Facts, s: EnvSetting, ports: list[tuple[RdmaPort, str]]) -> Finding:
    names = [p.name for p, _ in ports]
    where = N_("{n} port(s) ({ports})", n=len(names), ports=", ".join(names[:3]) + (", ..." if len(names) > 3 else ""))
    places = ", ".join([f"pid {p}" for p in s.pids] + list(s.files))
    return Finding(
        MEDIUM, setting_label(facts, s), N_('{name}={value} makes NCCL use RoCE v1 GIDs on {where}', name=s.name, value=s.value, where=where),
        detail=("; ".join(f"{p.name}: {used}" for p, used in ports[:8]) + N_(". RoCE v1 traffic is plain Ethernet: it stays inside one L2 segment (no routing between racks or subnets), gets no ECN marks, so the switches' DCQCN congestion control cannot slow senders down, and cannot be spread over ECMP paths. Multi-node tensor/pipeline parallel traffic and KV-cache transfer then either fail across subnets or rely on PFC pauses alone.")),
        evidence=tuple(_table_evidence(p) for p, _ in ports[:4]) + tuple(Evidence(a, b) for a, b in s.evidence),
        expected=N_('NCCL_IB_ROCE_VERSION_NUM unset (2: the routable RoCE v2 entry)'), observed=f"{s.name}={s.value} ({places})",
        impact=Impact(40, N_('inter-node RDMA limited to one L2 segment, without ECN congestion control'),
                      basis=ROCE_V1_BASIS),
        fix=env_fix(facts, s, notes=(N_('Remove {name} where the server is started ({places}) and restart it; NCCL then selects the RoCE v2 entry. The rollback restores {name}={value}.', name=s.name, places=places, value=s.value))),
        references=REFERENCES, related=tuple(names))


def _forced_findings(facts: Facts, forced: EnvSetting, hits: dict[str, list[tuple[RdmaPort, str, str, set[str]]]],
                     env_ev: list[Evidence], by_setting: bool = False) -> Iterator[Finding]:
    """One finding per kind of problem a forced NCCL_IB_GID_INDEX causes, listing every port it hits
    (named after the setting when several places force an index, so each is told apart and fixed)."""
    for problem, rows in sorted(hits.items()):
        names = [port.name for port, _, _, _ in rows]
        subject = names[0] if len(names) == 1 and not by_setting else setting_label(facts, forced)
        where = names[0] if len(names) == 1 else N_("{n} ports ({ports})", n=len(names),
                                                       ports=", ".join(names[:3]) + (", ..." if len(names) > 3 else ""))
        evidence = tuple(_table_evidence(port) for port, _, _, _ in rows[:4]) + tuple(env_ev)
        per_port = join('; ', (N_('{name}: uses {used}, auto would pick {auto}', name=port.name, used=used, auto=auto) for port, used, auto, _ in rows))
        related = tuple(names) + tuple(sorted({n for _, _, _, own in rows for n in own}))
        if problem:
            yield Finding(
                HIGH, subject, N_('{name}={value} forces {problem} on {where}', name=forced.name, value=forced.value,
                                  problem=problem, where=where),
                detail=N_("{per_port}. ", per_port=per_port) + _consequence(facts, problem),
                evidence=evidence, expected=N_('NCCL_IB_GID_INDEX unset (NCCL picks the RoCE v2 IPv4 entry per port)'),
                observed=N_('forced via {where}', where=_where(forced)),
                impact=Impact(90, N_('multi-node NCCL and KV transfer over these ports time out or fail'), basis=N_('NCCL troubleshooting guide: connections on an empty, link-local or RoCE v1 GID fail in ibv_modify_qp')),
                fix=_unset_fix(facts, forced), references=REFERENCES, related=related)
        else:
            yield Finding(
                LOW, subject, N_('{name}={value} is set (a usable entry on {where})', name=forced.name, value=forced.value, where=where),
                detail=(N_('The entry is a valid routable GID today, but NCCL >= 2.21 documents that the variable should not be set; a fixed index breaks when tables differ across nodes (pods, VLANs, SLAAC). {per_port}.', per_port=per_port)),
                evidence=evidence, expected=N_('NCCL_IB_GID_INDEX unset'), observed=_where(forced),
                impact=Impact(5, N_('fragile across nodes whose GID tables differ'), basis=N_('NCCL >= 2.21 documentation: NCCL_IB_GID_INDEX should not be set; a fixed index breaks where tables differ')),
                fix=_unset_fix(facts, forced), references=REFERENCES, related=related)
