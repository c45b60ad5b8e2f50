"""rdma.gid_index: the RoCE GID index NCCL will use on each port, and whether it can work."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.procs import EnvSetting, env_value, setting_label
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
from doctor.facts import Facts, RdmaPort
from doctor.findings import HIGH, LOW, PASS, UNKNOWN, Evidence, Finding, Fix, Impact
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


@check("rdma.gid_index", "RoCE GID index NCCL will use", "rdma",
       fixes=("unit_env", "file_patch", "process_restart", "show_addresses"), env=GID_VARS,
       reads=reads(env=(*GID_VARS, "NCCL_IB_HCA")))
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
    env = NcclGidEnv.from_values(*(s.value if s else None for s in settings.values()))
    hca = env_value(facts, "NCCL_IB_HCA")
    hca_list = parse_list(hca.value) if hca else None
    env_ev = [Evidence(src, val) for s in settings.values() if s for src, val in s.evidence]
    forced_hits: dict[str, list[tuple[RdmaPort, str, str, set[str]]]] = {}
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
        choice = choose_gid(port, env)
        own = _port_netdevs(facts, port)
        evidence = (_table_evidence(port), *env_ev)
        if choice.forced:
            forced = settings["NCCL_IB_GID_INDEX"]
            gid = choice.gid
            problem = None
            if gid is None or not configured(gid):
                problem = N_('an empty slot')
            elif link_local(gid):
                problem = N_('a link-local fe80:: entry (not routable)')
            elif version(gid) == 1 and env.roce_version != 1:
                problem = N_('a RoCE v1 entry (L2 only, not routable)')
            elif _foreign_ndev(facts, port, gid.ndev):
                problem = N_('an entry of netdev {ndev}, not of this port ({v})', ndev=gid.ndev, v=join(', ', sorted(own)) or '?')
            better = choose_gid(port, NcclGidEnv(None, env.addr_family, env.addr_range, env.roce_version))
            if forced is not None:
                forced_hits.setdefault(problem or "", []).append((port, choice.describe, better.describe, own))
            continue
        gid = choice.gid
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
    forced = settings["NCCL_IB_GID_INDEX"]
    if forced is not None:
        yield from _forced_findings(facts, forced, forced_hits, env_ev)


def _forced_findings(facts: Facts, forced: EnvSetting, hits: dict[str, list[tuple[RdmaPort, str, str, set[str]]]],
                     env_ev: list[Evidence]) -> Iterator[Finding]:
    """One finding per kind of problem a forced NCCL_IB_GID_INDEX causes, listing every port it hits."""
    for problem, rows in sorted(hits.items()):
        names = [port.name for port, _, _, _ in rows]
        subject = names[0] if len(names) == 1 else setting_label(facts, forced)
        where = names[0] if len(names) == 1 else f"{len(names)} ports ({join(', ', names[:3])}{', ...' if len(names) > 3 else ''})"
        evidence = tuple(_table_evidence(port) for port, _, _, _ in rows[:4]) + tuple(env_ev)
        per_port = join('; ', (N_('{name}: uses {used}, auto would pick {auto}', name=port.name, used=used, auto=auto) for port, used, auto, _ in rows))
        related = tuple(names) + tuple(sorted({n for _, _, _, own in rows for n in own}))
        if problem:
            yield Finding(
                HIGH, subject, N_('{name}={value} forces {problem} on {where}', name=forced.name, value=forced.value, problem=problem, where=where),
                detail=(N_('{per_port}. Connections fail or hang (ibv_modify_qp failed; NCCL hints that the incorrect GID index is forced).', per_port=per_port)),
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
