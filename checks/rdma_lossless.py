"""rdma.lossless: DCQCN (ECN notification and reaction points) on the priority NCCL's RoCE traffic uses.

See docs/checks.md#rdma-lossless.
"""

from __future__ import annotations

from collections.abc import Iterator

from checks._roce import nccl_traffic_class, priority_of, roce_ports
from doctor.facts import Facts
from doctor.findings import MEDIUM, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/networking/display/mlnxofedv24010331/explicit+congestion+notification+(ecn)",
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-tc",
    "https://github.com/sosreport/sos/blob/main/sos/report/plugins/roce.py",
)
NOTES = ("DCQCN needs both points on: the notification point (roce_np) answers ECN-marked packets with CNPs, "
         "the reaction point (roce_rp) slows the sender down. The switches must mark ECN on the same priority; "
         "PFC on that priority is configured with mlnx_qos -i <if> --pfc and is not judged here.")


@check("rdma.lossless", "DCQCN (ECN) on the RoCE priority NCCL uses", "rdma")
def lossless(facts: Facts) -> Iterator[Finding]:
    """ECN notification or reaction point switched off on the priority of ``NCCL_IB_TC`` (medium).

    Reads ``/sys/class/net/<if>/ecn/roce_np|roce_rp/enable/<prio>``; unknown when those files are
    absent on every RoCE port (a driver without them); InfiniBand and down ports do not apply.
    """
    ports = roce_ports(facts)
    if not ports:
        return
    tc, setting = nccl_traffic_class(facts)
    prio = priority_of(tc)
    tc_text = f"NCCL_IB_TC={setting.value}" if setting else "NCCL_IB_TC unset (0)"
    env_ev = tuple(Evidence(src, val) for src, val in setting.evidence) if setting else ()
    unrecorded, good = [], []
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
            MEDIUM, name, f"DCQCN off on priority {prio} of {name} ({rp.port.name})",
            detail=(f"{tc_text} puts NCCL's RoCE traffic on priority {prio} (DSCP trust, default map). With "
                    f"{' and '.join(off)} disabled there, congestion is met only by PFC pauses (head-of-line "
                    "blocking across the fabric) or by drops and go-back-N retransmission."),
            evidence=evidence, expected=f"roce_np and roce_rp enable/{prio} = 1",
            observed=", ".join(f"{p}={'0' if v is False else 'missing'}" for p, v in off.items()),
            impact=Impact(20, "throughput collapses under incast (all-to-all, KV transfer fan-in)",
                          basis='NVIDIA RoCE congestion control (DCQCN) documentation: without ECN reaction, incast fills switch buffers and drops packets'),
            fix=make("roce_ecn", NOTES, netdev=name, priority=prio,
                     previous={p: 0 for p, v in off.items() if v is False}),
            references=REFERENCES, related=(rp.port.name,))
    if unrecorded and not good:
        yield Finding(UNKNOWN, "node", "DCQCN state of the RoCE ports not recorded",
                      detail=(f"No ecn/roce_np or ecn/roce_rp switches under /sys/class/net for "
                              f"{', '.join(unrecorded[:4])}{', ...' if len(unrecorded) > 4 else ''} (the driver "
                              "does not expose them, or the snapshot lacks them)."),
                      references=REFERENCES)
    elif good:
        yield Finding(PASS, "node", f"DCQCN on for priority {prio} on {len(good)} RoCE port(s)",
                      evidence=env_ev)
