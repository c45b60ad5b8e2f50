"""rdma.lossless: DCQCN (ECN notification and reaction points), PFC and DSCP trust on the priority NCCL's RoCE
traffic uses.

See docs/checks.md#rdma-lossless.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.rdma import RocePort, nccl_traffic_class, priority_of, roce_ports
from doctor.facts import Facts
from doctor.facts.roce import RoceQos
from doctor.findings import MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/explicit+congestion+notification+(ecn)",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-tc",
    "https://github.com/sosreport/sos/blob/main/sos/report/plugins/roce.py",
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/quality+of+service+(qos)",
)
NOTES = (N_('DCQCN needs both points on: the notification point (roce_np) answers ECN-marked packets with CNPs, the reaction point (roce_rp) slows the sender down. The switches must mark ECN on the same priority.'))
QOS_NOTES = (N_('Change the NIC and the switch port together: PFC on a priority the switch does not treat as lossless (or the reverse) pauses or drops traffic. mlnx_qos settings are lost when the driver reloads; reapply them at boot (a oneshot unit after the driver loads) or let DCBX/LLDP from the switch set them.'))


@check("rdma.lossless", "DCQCN (ECN) on the RoCE priority NCCL uses", "rdma", acts="os", fixes=("roce_ecn", "roce_qos"),
       needs=("netdevs", "rdma"))
def lossless(facts: Facts) -> Iterator[Finding]:
    """ECN notification or reaction point switched off on the priority of ``NCCL_IB_TC`` (medium); with
    ``NCCL_IB_TC`` set and ``mlnx_qos -i`` recorded, PFC off on the priority its DSCP maps to, or trust pcp
    while NCCL marks DSCP (medium).

    Reads ``/sys/class/net/<if>/ecn/roce_np|roce_rp/enable/<prio>``; unknown when those files are
    absent on every RoCE port (a driver without them); InfiniBand and down ports do not apply.
    """
    ports = roce_ports(facts)
    if not ports:
        return
    tc, setting = nccl_traffic_class(facts)
    prio = priority_of(tc)
    tc_text = f"NCCL_IB_TC={setting.value}" if setting else N_('NCCL_IB_TC unset (0)')
    env_ev = tuple(Evidence(src, val) for src, val in setting.evidence) if setting else ()
    unrecorded, good = [], []
    qos_unknown: list[Evidence] = []
    for rp in ports:
        if setting is not None and tc:
            qos_finding, note = _qos(facts.roce_qos.get(rp.netdev.name), rp, tc, tc_text, env_ev)
            if qos_finding is not None:
                yield qos_finding
            elif note is not None:
                qos_unknown.append(note)
    for rp in ports:
        ecn = facts.roce_ecn.get(rp.netdev.name)
        if ecn is None or not ecn.recorded:
            unrecorded.append(rp.netdev.name)
            continue
        off = {point: bits.get(prio) for point, bits in (("roce_np", ecn.np), ("roce_rp", ecn.rp))
               if bits.get(prio) is not True}
        if not off:
            good.append(rp.netdev.name)
            continue
        missing = [p for p, v in off.items() if v is None]
        if len(missing) == len(off):
            unrecorded.append(rp.netdev.name)
            continue
        name = rp.netdev.name
        evidence = tuple(Evidence(f"{ecn.origin}/{p}/enable/{prio}", "0" if v is False else "missing")
                         for p, v in off.items()) + env_ev
        yield Finding(
            MEDIUM, name, N_('DCQCN off on priority {prio} of {name} ({name2})', prio=prio, name=name, name2=rp.port.name),
            detail=(N_("{tc_text} puts NCCL's RoCE traffic on priority {prio} (DSCP trust, default map). With {off} disabled there, congestion is met only by PFC pauses (head-of-line blocking across the fabric) or by drops and go-back-N retransmission.", tc_text=tc_text, prio=prio, off=join(N_(' and '), off))),
            evidence=evidence, expected=N_('roce_np and roce_rp enable/{prio} = 1', prio=prio),
            observed=join(', ', (f"{p}={'0' if v is False else 'missing'}" for p, v in off.items())),
            impact=Impact(20, N_('throughput collapses under incast (all-to-all, KV transfer fan-in)'),
                          basis=N_('NVIDIA RoCE congestion control (DCQCN) documentation: without ECN reaction, incast fills switch buffers and drops packets')),
            fix=make("roce_ecn", NOTES, netdev=name, priority=prio,
                     previous={p: 0 for p, v in off.items() if v is False}),
            references=REFERENCES, related=(rp.port.name,))
    if unrecorded and not good:
        yield Finding(UNKNOWN, "node", N_('DCQCN state of the RoCE ports not recorded'),
                      detail=(N_('No ecn/roce_np or ecn/roce_rp switches under /sys/class/net for {unrecorded}{v} (the driver does not expose them, or the snapshot lacks them).', unrecorded=join(', ', unrecorded[:4]), v=', ...' if len(unrecorded) > 4 else '')),
                      evidence=tuple(qos_unknown[:8]), references=REFERENCES)
    elif good:
        yield Finding(PASS, "node", N_('DCQCN on for priority {prio} on {n_good} RoCE port(s)', prio=prio, n_good=len(good)),
                      evidence=env_ev + tuple(qos_unknown[:8]))


def _qos(qos: RoceQos | None, rp: RocePort, tc: int, tc_text: str,
         env_ev: tuple[Evidence, ...]) -> tuple[Finding | None, Evidence | None]:
    """PFC and trust of one port for NCCL's DSCP: a finding, or a note that ``mlnx_qos`` was not recorded."""
    name = rp.netdev.name
    if qos is None or qos.missing:
        return None, Evidence(qos.origin if qos else f"mlnx_qos -i {name}",
                              f"PFC and trust not judged: {qos.missing if qos else 'not recorded'}")
    dscp = tc >> 2
    prio = qos.priority_of_dscp(dscp)
    trust_pcp = qos.trust == "pcp"
    pfc_off = qos.pfc.get(prio) is False
    if not trust_pcp and not pfc_off:
        return None, None
    problems = []
    if trust_pcp:
        problems.append(N_("the NIC trusts pcp, so NCCL's DSCP {dscp} does not choose the priority (untagged packets land in priority 0)", dscp=dscp))
    if pfc_off:
        problems.append(N_('PFC is off on priority {prio}, where DSCP {dscp} maps under DSCP trust', prio=prio, dscp=dscp))
    vector = qos.pfc_vector
    wanted = None if vector is None else tuple(1 if p == prio else v for p, v in enumerate(vector))
    fix_params: dict[str, object] = {"netdev": name}
    if trust_pcp:
        fix_params.update(trust="dscp", previous_trust="pcp")
    if pfc_off and vector is not None and wanted is not None:
        fix_params.update(pfc=list(wanted), previous_pfc=list(vector))
    observed = join(', ', filter(None, (f"trust {qos.trust}" if qos.trust else "",
                                       "pfc " + ",".join(map(str, vector)) if vector else "")))
    title = (N_('RoCE QoS of {name} ({name2}): ', name=name, name2=rp.port.name) + join(' and ', (
        t for t, on in ((N_('trust pcp while NCCL marks DSCP'), trust_pcp), (N_('PFC off on priority {prio}', prio=prio), pfc_off)) if on)))
    return Finding(
        MEDIUM, name, title,
        detail=(N_("{tc_text} marks NCCL's RoCE packets with DSCP {dscp}; ", tc_text=tc_text, dscp=dscp) + join('; ', problems) + N_('. The traffic then rides a lossy priority: under congestion the switch drops packets and RoCE falls back to go-back-N retransmission (watch out_of_sequence and rx_discards_phy).')),
        evidence=(Evidence(qos.origin, observed or "recorded"),) + env_ev,
        expected=N_('trust dscp, PFC on priority {prio}', prio=prio), observed=observed,
        impact=Impact(25, N_('collectives and KV transfers stall on retransmission under incast'),
                      basis=N_("RoCE needs a lossless priority (PFC) for NCCL's traffic class; NVIDIA RoCE QoS docs")),
        fix=make("roce_qos", QOS_NOTES, **fix_params), references=REFERENCES, related=(rp.port.name,)), None
