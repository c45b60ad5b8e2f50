"""pcie.replay: GPU PCIe replay counter (link-level retransmissions) non-zero.

Growth cannot be judged from one sample: ``nvidia-smi`` reports the total since the driver loaded
(or the last GPU reset), and a snapshot holds one reading. The check therefore grades the total by
magnitude and says so; re-read it twice a few minutes apart to see whether it grows.
"""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import reported, smi_evidence
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import HIGH, LOW, MEDIUM, PASS, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/deploy/nvidia-smi/index.html",
              "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html")
#: (at least this many replays, severity, impact score), worst first
LEVELS = ((10_000, HIGH, 30.0), (100, MEDIUM, 10.0), (1, LOW, 2.0))


@check("pcie.replay", "GPU PCIe replay counter (link retransmissions)", "pcie", acts="hardware", fixes=("gpu_query",), needs=("gpus",))
def pcie_replay(facts: Facts) -> Iterator[Finding]:
    """Low from 1 replay, medium from 100, high from 10000 (one sample: totals since the driver loaded)."""
    gpus = [(g, rt) for g, rt in reported(facts) if rt.replays_since_reset is not None]
    if not gpus:
        return
    bad = [(g, rt) for g, rt in gpus if (rt.replays_since_reset or 0) > 0]
    for gpu, rt in bad:
        n = rt.replays_since_reset or 0
        _, sev, score = next(level for level in LEVELS if n >= level[0])
        yield Finding(
            sev, gpu_label(facts, gpu.address), N_('{n} PCIe replays since the driver loaded', n=n),
            detail=N_('Each replay is a TLP the link had to resend after a CRC or sequence error: signal integrity (riser, retimer, cable, dirty or loose slot) or a marginal Gen5 link. One sample cannot tell whether it still grows; compare two readings a few minutes apart under load.'),
            evidence=(smi_evidence(facts, gpu, f"pci/replay_counter {n}"),),
            expected=N_('0 (or not growing)'), observed=str(n),
            impact=Impact(score, N_('retransmissions eat PCIe bandwidth and can end in AER errors or Xid 79'),
                          basis=N_("each replay resends a transaction layer packet; graded by the counter's size, since one sample cannot show its rate")),
            fix=make("gpu_query",
                     N_('The command re-reads the counter: run it again under load; if it grows, reseat the GPU or its riser/cable, check retimer firmware, or cap the slot at Gen4 in the BIOS to confirm. Nothing to roll back.'), index=gpu.index, query="pcie"),
            references=REFERENCES, related=(gpu.address,))
    if not bad and not facts.host.is_vm:  # in a VM the PCIe tree is virtual: flag counts, claim nothing
        yield Finding(PASS, "node", N_('no PCIe replays on {n_gpus} GPUs', n_gpus=len(gpus)),
                      evidence=(smi_evidence(facts, gpus[0][0], "pci/replay_counter 0"),))
