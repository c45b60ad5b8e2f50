"""nccl.transport: NCCL variables that force a slower transport or the wrong interface."""

from __future__ import annotations

import re
from collections.abc import Iterator

from doctor.derived.gpu import all_consumer, consumer_names
from doctor.derived.net import data_nics, fastest, tcp_carries_data
from doctor.derived.procs import EnvSetting, by_place, setting_label, user_env
from doctor.derived.rdma import parse_list
from doctor.facts import Facts, NetDev
from doctor.findings import HIGH, INFO, LOW, MEDIUM, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes.startup import env_fix
from doctor.i18n import N_, capitalised, join
from doctor.lazyre import lazy
from doctor.reads import reads
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#networking-issues",
)
NCCL_VARS = ("NCCL_IB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL",
             "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_NET")
#: the other interface choices of a distributed server: Gloo's (PyTorch CPU-side groups) and vLLM's own address
IFACE_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "VLLM_HOST_IP")
IFACE_DOCS = {
    "NCCL_SOCKET_IFNAME": N_("NCCL documentation: \"The NCCL_SOCKET_IFNAME variable specifies which IP interfaces to use "
                           "for communication\" (bootstrap, and the socket transport); \"By default, the loopback "
                           "interface (lo) and docker interfaces (docker*) would not be selected unless there are no "
                           "other interfaces available\""),
    "GLOO_SOCKET_IFNAME": N_("PyTorch distributed documentation: GLOO_SOCKET_IFNAME names the network interface(s) the Gloo "
                           "backend binds to; an interface that does not exist fails init_process_group"),
    "VLLM_HOST_IP": N_("vLLM environment variables documentation: VLLM_HOST_IP is \"used in distributed environment to "
                     "determine the ip address of the current node\""),
}
#: interfaces other nodes cannot reach: loopback, docker's bridges, veth ends of containers, libvirt bridges
LOCAL_ONLY = ("lo", "docker", "veth", "virbr", "br-")
HOST_NETWORK = lazy(r"hostNetwork:\s*true|network_mode:\s*[\"']?host|--net(?:work)?[= ]host")
#: Values of NCCL_NET_GDR_LEVEL / NCCL_P2P_LEVEL that switch the feature off.
LOC_VALUES = frozenset({"LOC", "0"})
#: What each other NCCL_P2P_LEVEL does (NCCL env docs: the maximum GPU distance at which P2P is used).
P2P_LEVELS = {
    "NVL": N_('peer-to-peer only between GPUs joined by NVLink; other pairs go through host shared memory'),
    "PIX": N_('peer-to-peer only between GPUs under one PCIe switch; other pairs go through host shared memory'),
    "PXB": N_('peer-to-peer across PCIe switches but not through the CPU'),
    "PHB": N_("peer-to-peer up to the CPU's root complex (same NUMA node)"),
    "SYS": N_('peer-to-peer even across sockets, often slower than shared memory over the socket link'),
}
#: variables NCCL parses as a path level (ncclGetLevel)
LEVEL_VARS = ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL")
#: path names NCCL's parser also accepts (src/graph/paths.cc ncclGetLevel compares with strcmp, so case matters)
UNDOCUMENTED_LEVELS = frozenset({"NVB", "C2C", "PXN", "P2C"})
#: NCCL's old numeric levels (levelsOldToNew: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS)
OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")
P2P_LEVEL_DOC = N_("NCCL's documentation of NCCL_P2P_LEVEL accepts LOC, NVL, PIX, PXB, PHB and SYS (or the legacy "
                 "integers LOC 0 to SYS 4: \"Values greater than 4 will be interpreted as SYS\"), and: \"If this isn't specified, NCCL will attempt to optimally select a value based on the "
                 "architecture and environment it's run in.\"")


def p2p_level(value: str) -> str | None:
    """The level NCCL reads from ``value`` (``LOC`` ... ``SYS``), or None when NCCL ignores it.

    NCCL compares the string with its path names case-sensitively, then takes a value starting with a
    digit as an old-style number (strtol, clamped to 5); anything else leaves the level to NCCL.
    """
    text = value.strip()
    if text in P2P_LEVELS or text in LOC_VALUES or text in UNDOCUMENTED_LEVELS:
        return "LOC" if text in LOC_VALUES else text
    m = re.match(r"\d+", text)
    if m:
        return OLD_LEVELS[min(int(m.group(0)), len(OLD_LEVELS) - 1)]
    return None


def _places(s: EnvSetting) -> str:
    return join(', ', [f"pid {p}" for p in s.pids] + list(s.files))


def _subject(facts: Facts, s: EnvSetting) -> str:
    return setting_label(facts, s)


def _evidence(s: EnvSetting) -> tuple[Evidence, ...]:
    return tuple(Evidence(src, val) for src, val in s.evidence)


def _fix(facts: Facts, s: EnvSetting, replacement: str | None = None) -> Fix:
    what = (N_("set {name}={value}", name=s.name, value=replacement) if replacement
            else N_("remove {name}={value}", name=s.name, value=s.value))
    return env_fix(facts, s, replacement=replacement,
                   notes=N_('{what} where the server is started ({places}); NCCL reads its environment only at start-up, so the server must restart. The rollback restores {name}={value}.', what=what, places=_places(s), name=s.name, value=s.value))


@check("nccl.transport", "NCCL transport and interface selection", "network", acts="application",
       fixes=("unit_env", "file_patch", "process_restart"), needs=("processes", "process_env", "deploy_files"),
       env=NCCL_VARS + IFACE_VARS[1:], reads=reads(env=NCCL_VARS + IFACE_VARS[1:]))
def transport(facts: Facts) -> Iterator[Finding]:
    """Flag NCCL_IB_DISABLE=1 with active RDMA, NCCL_P2P_DISABLE=1, GDR/P2P level LOC (high), NCCL_SHM_DISABLE=1
    (medium), NCCL_SOCKET_IFNAME on a slower interface (high when TCP carries data, else low) and an
    ``NCCL_IB_HCA`` entry without ``=`` that also matches other devices (low). Only user-set values count.
    """
    settings = user_env(facts, NCCL_VARS)
    if not settings and not user_env(facts, IFACE_VARS[1:]) and not (facts.gpus.gpus and (facts.processes or facts.deploy_files)):
        return
    active_rdma = [p for p in facts.rdma if p.active]
    multi_gpu = len(facts.gpus.gpus) > 1
    carries, why = tcp_carries_data(facts)
    found = False
    for s in settings:
        value = s.value.strip()
        upper = value.upper()
        if s.name in LEVEL_VARS:
            level = p2p_level(value)
            if level is None:
                found = True
                yield _unknown_level(facts, s)
                continue
            upper = level
        ev = _evidence(s)
        if s.name == "NCCL_IB_DISABLE" and value == "1" and active_rdma:
            found = True
            yield Finding(
                HIGH, _subject(facts, s), N_('NCCL_IB_DISABLE=1 forces TCP sockets although RDMA ports are active'),
                detail=(N_("{n_active_rdma} RDMA port(s) are ACTIVE ({v}{v2}), but NCCL is told not to use them: inter-node traffic goes over TCP (the log shows 'NCCL INFO Using network Socket').", n_active_rdma=len(active_rdma), v=join(', ', (p.name for p in active_rdma[:4])), v2=', ...' if len(active_rdma) > 4 else '')),
                evidence=ev + tuple(Evidence(f"{p.origin}/state", p.state or "") for p in active_rdma[:2]),
                expected=N_('NCCL_IB_DISABLE unset or 0'), observed=N_('NCCL_IB_DISABLE=1 ({places})', places=_places(s)),
                impact=Impact(80, N_('several times less inter-node bandwidth, higher latency'), basis=N_('NCCL documentation of NCCL_IB_DISABLE: the socket transport replaces RDMA, with CPU copies and TCP on the same links; applies to inter-node collectives and KV transfer')),
                fix=_fix(facts, s), references=REFERENCES)
        elif s.name in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL") and multi_gpu and all_consumer(facts) and \
                (value == "1" if s.name == "NCCL_P2P_DISABLE" else upper in LOC_VALUES):
            found = True
            yield Finding(
                INFO, _subject(facts, s), N_('{name}={value} on consumer GPUs: there is no peer-to-peer to lose', name=s.name, value=value),
                detail=(N_('{consumer_names}: GeForce cards have no PCIe peer-to-peer, so NCCL moves data through host memory anyway; the setting only avoids a P2P probe that can hang.', consumer_names=consumer_names(facts))),
                evidence=ev, observed=N_('{name}={value} ({places})', name=s.name, value=value, places=_places(s)), references=REFERENCES)
        elif s.name == "NCCL_P2P_DISABLE" and value == "1" and multi_gpu:
            found = True
            yield Finding(
                HIGH, _subject(facts, s), N_('NCCL_P2P_DISABLE=1 turns off NVLink/PCIe peer-to-peer between GPUs'),
                detail=N_('Intra-node collectives fall back to staging through host memory (SHM).'),
                evidence=ev, expected="unset", observed=N_('NCCL_P2P_DISABLE=1 ({places})', places=_places(s)),
                impact=Impact(70, N_('tensor-parallel all-reduce several times slower'), basis=N_('NCCL documentation of NCCL_P2P_DISABLE: intra-node traffic is staged through host shared memory instead of NVLink/PCIe peer copies; applies to tensor-parallel collectives')), fix=_fix(facts, s),
                references=REFERENCES)
        elif s.name in ("NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL") and upper in LOC_VALUES and \
                (multi_gpu if s.name == "NCCL_P2P_LEVEL" else bool(active_rdma)):
            found = True
            feature = "GPUDirect RDMA" if s.name == "NCCL_NET_GDR_LEVEL" else N_('GPU peer-to-peer')
            yield Finding(
                HIGH, _subject(facts, s), N_('{name}={value} switches {feature} off', name=s.name, value=value, feature=feature),
                detail=N_('At level LOC NCCL never uses {feature}; data is staged through host memory.', feature=feature),
                evidence=ev, expected=N_('unset (NCCL decides from the topology)'), observed=N_('{name}={value}', name=s.name, value=value),
                impact=Impact(60, N_('no {feature}: extra copies through host memory', feature=feature), basis=N_('NCCL documentation: level LOC never uses the feature, so data is copied through host memory')), fix=_fix(facts, s),
                references=REFERENCES)
        elif s.name == "NCCL_P2P_LEVEL" and multi_gpu and upper in P2P_LEVELS:
            found = True
            yield Finding(
                LOW, _subject(facts, s), N_('NCCL_P2P_LEVEL={value}: {P2P_LEVELS}', value=value, P2P_LEVELS=P2P_LEVELS[upper]),
                detail=(N_('{effect}. NCCL\'s documentation: "If this isn\'t specified, NCCL will attempt to optimally select a value based on the architecture and environment it\'s run in." Keep it only where NCCL\'s own choice was shown to be wrong.', effect=capitalised(P2P_LEVELS[upper]))),
                evidence=ev, expected=N_('unset (NCCL decides from the topology)'), observed=N_('NCCL_P2P_LEVEL={value}', value=value),
                impact=Impact(10 if upper in ("NVL", "PIX") else 5, P2P_LEVELS[upper],
                              basis=N_('NCCL documentation of NCCL_P2P_LEVEL: the level caps which paths may use P2P')),
                fix=_fix(facts, s),
                references=REFERENCES)
        elif s.name == "NCCL_SHM_DISABLE" and value == "1":
            found = True
            yield Finding(
                MEDIUM, _subject(facts, s), N_('NCCL_SHM_DISABLE=1 disables the shared-memory transport'),
                detail=N_('Where P2P is unavailable NCCL falls back to the network transport within the node.'),
                evidence=ev, expected="unset", observed=N_('NCCL_SHM_DISABLE=1 ({places})', places=_places(s)),
                impact=Impact(20, N_('intra-node traffic may loop through the NIC'), basis=N_('NCCL documentation of NCCL_SHM_DISABLE: where P2P is unavailable, intra-node traffic uses the network transport')), fix=_fix(facts, s), references=REFERENCES)
        elif s.name == "NCCL_SOCKET_IFNAME":
            finding = _socket_ifname(facts, s, carries, why)
            if finding is not None:
                found = found or finding.severity not in (PASS, INFO)
                yield finding
        elif s.name == "NCCL_IB_HCA":
            names = sorted({p.device for p in facts.rdma})
            extra = parse_list(value).loose_extra(names)
            if extra:
                found = True
                listed = join('; ', (N_('{k} also matches {v}', k=k, v=', '.join(v)) for k, v in extra.items()))
                yield Finding(
                    LOW, _subject(facts, s), N_('NCCL_IB_HCA={value} matches more devices than listed', value=value),
                    detail=(N_("Without a leading '=' each entry is a prefix: {listed}. Prefix it with '=' to select exactly the devices named.", listed=listed)),
                    evidence=ev, expected=N_('NCCL_IB_HCA=={v}', v=value.lstrip('^=')), observed=N_('NCCL_IB_HCA={value}', value=value),
                    impact=Impact(5, N_('NCCL may use unintended (frontend or slower) HCAs'), basis=N_('NCCL documentation of NCCL_IB_HCA: entries without a leading = are prefixes; the extra devices are in the detail')),
                    fix=_fix(facts, s, "=" + value.lstrip("=")), references=REFERENCES)
    for finding in _interface_choices(facts):
        found = found or finding.severity not in (PASS, INFO)
        yield finding
    if not any(s.name == "NCCL_SOCKET_IFNAME" for s in settings) and carries:
        finding = _socket_ifname_unset(facts, why)
        if finding is not None:
            found = True
            yield finding
    if not found:
        yield Finding(PASS, "node", N_('no NCCL variable forces a slower transport'),
                      evidence=tuple(e for s in settings for e in _evidence(s)))


def _unknown_level(facts: Facts, s: EnvSetting) -> Finding:
    """A level variable set to a value NCCL does not parse: it is ignored, NCCL picks the level itself."""
    what = "peer-to-peer" if s.name == "NCCL_P2P_LEVEL" else "GPUDirect RDMA"
    return Finding(
        LOW, _subject(facts, s), N_('{name}={value} is not a level NCCL knows: NCCL ignores it', name=s.name, value=s.value),
        detail=(N_('NCCL reads {name} by comparing it case-sensitively with its path names and then as an old-style integer; {value} is neither, so NCCL behaves as if it were unset and decides where {what} is used from the topology. Whatever the setting was meant to do (work around a hang, keep traffic off the CPU) is not done. {P2P_LEVEL_DOC}', name=s.name, value=repr(s.value), what=what, P2P_LEVEL_DOC=P2P_LEVEL_DOC)),
        evidence=_evidence(s), expected=N_('unset, or one of LOC, NVL, PIX, PXB, PHB, SYS'),
        observed=f"{s.name}={s.value} ({_places(s)})",
        impact=Impact(3, N_('the setting has no effect; its intent is not applied'),
                      basis=N_("NCCL's src/graph/paths.cc (ncclGetLevel): an unmatched string leaves the level to NCCL")),
        fix=_fix(facts, s), references=REFERENCES + ("https://github.com/NVIDIA/nccl/blob/master/src/graph/paths.cc",))


def _socket_ifname(facts: Facts, s: EnvSetting, carries: bool, why: str) -> Finding | None:
    lst = parse_list(s.value)
    physical = [n for n in facts.netdevs if not n.virtual]
    chosen = [n for n in physical if lst.matches(n.name)]
    best = fastest(data_nics(facts))
    if not chosen or best is None or not best.netdev.speed_mbps:
        return None
    speeds = [n.speed_mbps for n in chosen if n.speed_mbps]
    top = max(speeds) if speeds else None
    if top is None or top >= best.netdev.speed_mbps or best.netdev in chosen:
        return None
    sev = HIGH if carries else INFO
    names = join(', ', (n.name for n in chosen))
    return Finding(
        sev, setting_label(facts, s), N_('NCCL_SOCKET_IFNAME={value} selects {names} at {top} Gb/s; {name} runs {speed_mbps} Gb/s', value=s.value, names=names, top=top // 1000, name=best.name, speed_mbps=best.netdev.speed_mbps // 1000),
        detail=(N_("NCCL's socket traffic uses {names}. TCP carries data here ({why}), so inter-node bandwidth is capped by that interface.", names=names, why=why) if carries else
                N_('With RDMA active NCCL uses {names} only for bootstrap, which is fine; it matters the moment NCCL falls back to sockets.', names=names)),
        evidence=_evidence(s) + tuple(Evidence(f"{n.origin}/speed", f"{n.name} {n.speed_mbps}") for n in chosen)
        + (Evidence(f"{best.netdev.origin}/speed", f"{best.name} {best.netdev.speed_mbps}"),),
        expected=N_('the data interface ({name})', name=best.name), observed=N_('{names} ({top} Mb/s)', names=names, top=top),
        impact=Impact(70 if carries else 3, N_('socket transport limited to {top} Gb/s', top=top // 1000), basis=N_("the socket transport cannot exceed the selected interface's link speed ({top} Gb/s against {speed_mbps} Gb/s, from sysfs speed)", top=top // 1000, speed_mbps=best.netdev.speed_mbps // 1000)),
        fix=_fix(facts, s, f"={best.name}"), references=REFERENCES, related=(best.name,))


#: interfaces NCCL skips when NCCL_SOCKET_IFNAME is unset (its default filter is ``^docker,lo``; ``ib`` comes first)
SKIPPED_PREFIXES = ("docker", "lo")


def _socket_ifname_unset(facts: Facts, why: str) -> Finding | None:
    """NCCL_SOCKET_IFNAME unset while TCP carries data: NCCL takes the first interface the kernel lists
    (IPoIB ``ib*`` first), which on most servers is the onboard management NIC."""
    best = fastest(data_nics(facts))
    up = [n for n in facts.netdevs if (n.operstate or "").lower() == "up" and not n.name.startswith(SKIPPED_PREFIXES)]
    if best is None or not best.netdev.speed_mbps or len(up) < 2:
        return None
    ipoib = [n for n in up if n.name.startswith("ib")]
    pool = ipoib or up
    if any(n.ifindex is None for n in pool):
        return None  # the order NCCL sees is not recorded
    first = min(pool, key=lambda n: n.ifindex or 0)
    if first.name == best.name or (first.speed_mbps or 0) >= best.netdev.speed_mbps:
        return None
    speed = f"{first.speed_mbps // 1000} Gb/s" if first.speed_mbps else N_('an unknown speed')
    return Finding(
        MEDIUM, "NCCL_SOCKET_IFNAME", N_('NCCL_SOCKET_IFNAME unset: NCCL would pick {name} ({speed}), not {name2} ({speed_mbps} Gb/s)', name=first.name, speed=speed, name2=best.name, speed_mbps=best.netdev.speed_mbps // 1000),
        detail=(N_('TCP carries data here ({why}). Without NCCL_SOCKET_IFNAME NCCL uses the first interface the kernel lists, skipping docker* and lo and preferring ib*: {name} (ifindex {ifindex}) on this node, usually the management network.', why=why, name=first.name, ifindex=first.ifindex)),
        evidence=(Evidence(f"{first.origin}/ifindex", f"{first.name} ifindex {first.ifindex}, {first.speed_mbps} Mb/s"),
                  Evidence(f"{best.netdev.origin}/speed", f"{best.name} {best.netdev.speed_mbps} Mb/s")),
        expected=N_('NCCL_SOCKET_IFNAME=={name} (the data interfaces)', name=best.name), observed="unset",
        impact=Impact(60, N_('inter-node NCCL traffic over {name}', name=first.name),
                      basis=N_("the socket transport cannot exceed {name}'s link speed ({speed}, from sysfs)", name=first.name, speed=speed)),
        fix=Fix(notes=(N_('Set NCCL_SOCKET_IFNAME=={name} (or a prefix list of the data interfaces) in the unit, compose file or manifest that starts the server and restart it. To undo, remove it again.', name=best.name))),
        references=REFERENCES, related=(first.name, best.name))


def _same_netns(facts: Facts, s: EnvSetting) -> bool:
    """Whether the names in ``s`` are the host's: a unit or a host process, or a manifest/compose file on the
    host network (a pod or container of its own has other interfaces, eth0 for one)."""
    for path in s.files:
        df = next((d for d in facts.deploy_files if d.path == path), None)
        if df is not None and not path.endswith((".service", ".conf")) and not HOST_NETWORK.search(df.text):
            return False
    return True


def _chosen(facts: Facts, s: EnvSetting) -> list[NetDev] | None:
    """The host interfaces a setting selects; None when it names an address no recorded interface holds."""
    if s.name == "NCCL_SOCKET_IFNAME":
        lst = parse_list(s.value)
        return [n for n in facts.netdevs if lst.matches(n.name)]
    if s.name == "GLOO_SOCKET_IFNAME":
        names = {x.strip() for x in s.value.split(",") if x.strip()}
        return [n for n in facts.netdevs if n.name in names]
    ip = s.value.strip()
    if ip.startswith("127.") or ip == "::1":
        return [n for n in facts.netdevs if n.name == "lo"] or [NetDev("lo", "", None, None, None, None, None, True)]
    owners = {g.ndev for p in facts.rdma for g in p.gids if g.ipv4 == ip and g.ndev}
    return [n for n in facts.netdevs if n.name in owners] or None


def _interface_choices(facts: Facts) -> Iterator[Finding]:
    """NCCL's bootstrap, Gloo's and vLLM's interface settings judged against the host's interfaces."""
    if not facts.netdevs:
        return
    active_rdma = any(p.active for p in facts.rdma)
    gpu_nodes = {d.numa_node for g in facts.gpus.gpus if (d := facts.pci.devices.get(g.address)) and
                 d.numa_node is not None and d.numa_node >= 0}
    for setting in user_env(facts, IFACE_VARS):
        for s in by_place(setting):
            if not _same_netns(facts, s):
                continue
            chosen = _chosen(facts, s)
            if chosen is None:
                continue  # an address of an interface this source does not record: not judged
            finding = _judge_interfaces(facts, s, chosen, active_rdma, gpu_nodes)
            if finding is not None:
                yield finding


def _judge_interfaces(facts: Facts, s: EnvSetting, chosen: list[NetDev], active_rdma: bool,
                      gpu_nodes: set[int]) -> Finding | None:
    doc = IFACE_DOCS[s.name]
    places = _places(s)
    names = ", ".join(n.name for n in chosen)
    if not chosen:
        fails = {"NCCL_SOCKET_IFNAME": "NCCL finds no socket interface and communicator creation fails "
                                       "(\"Bootstrap : no socket interface found\")",
                 "GLOO_SOCKET_IFNAME": "Gloo cannot bind and init_process_group fails"}[s.name]
        return Finding(
            HIGH if len(facts.gpus.gpus) > 1 or active_rdma else LOW, _subject(facts, s),
            N_('{name}={value} matches no interface on this host', name=s.name, value=s.value),
            detail=(N_('{fails}. Interfaces here: {v}. A server that runs with it has not created a multi-process group yet, or is on one GPU.', fails=fails, v=', '.join(n.name for n in facts.netdevs[:12]))),
            evidence=_evidence(s), expected=N_('an existing data interface'), observed=f"{s.name}={s.value} ({places})",
            impact=Impact(70, N_('distributed start-up fails on this node'), basis=doc),
            fix=Fix(notes=N_('Set {name} to the data interface(s) of this node ({places}) and restart the server.', name=s.name, places=places)),
            references=REFERENCES)
    if all(n.name.startswith(LOCAL_ONLY) for n in chosen):
        return Finding(
            MEDIUM if active_rdma else INFO, _subject(facts, s),
            N_('{name}={value} selects {names}, which other nodes cannot reach', name=s.name, value=s.value, names=names),
            detail=(N_('{names} is a loopback or container bridge interface: fine while every rank is on this node, but other nodes cannot connect to it, so a multi-node deployment hangs at start-up.', names=names)
                    + (N_(' RDMA ports are active here, so this node is built for multi-node work.') if active_rdma else "")),
            evidence=_evidence(s), expected=N_('the data interface'), observed=f"{s.name}={s.value} ({places})",
            impact=Impact(40 if active_rdma else 2, N_('multi-node start-up cannot connect'), basis=doc),
            fix=Fix(notes=N_('Set {name} to the data interface ({places}) and restart the server; keep {value} only for single-node serving.', name=s.name, places=places, value=s.value)),
            references=REFERENCES, related=tuple(n.name for n in chosen))
    nodes = {d.numa_node for n in chosen if n.pci_address and (d := facts.pci.devices.get(n.pci_address))
             and d.numa_node is not None and d.numa_node >= 0}
    if nodes and gpu_nodes and not nodes & gpu_nodes:
        return Finding(
            INFO, _subject(facts, s), N_('{name}={value} uses {names} on NUMA node {v}, the GPUs are on {v2}', name=s.name, value=s.value, names=names, v=min(nodes), v2=', '.join(str(x) for x in sorted(gpu_nodes))),
            detail=(N_('Bootstrap and control traffic is small, so the remote socket costs nothing measurable; it matters only if this interface carries data over TCP (see the other nccl.transport findings).')),
            evidence=_evidence(s), observed=N_('{names} (NUMA {v})', names=names, v=min(nodes)), references=REFERENCES,
            related=tuple(n.name for n in chosen))
    return None
