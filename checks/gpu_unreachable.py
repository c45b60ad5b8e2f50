"""gpu.unreachable: an NVIDIA GPU on the PCI bus that the driver never brought up or nvidia-smi cannot open.

Evidence, per GPU: nvidia-smi's ``Unable to determine the device handle for GPU ...`` line, the kernel's
``RmInitAdapter failed`` / ``fallen off the bus`` lines, or ``No devices were found`` while the GPU is bound
to ``nvidia``. Critical: the GPU is lost to every workload (CUDA cannot create a context on it), tools built
on NVML (the device plugin, DCGM, exporters) fail or miscount, and only a reset, reboot or power cycle brings
it back; the same grade as Xid 79 in gpu.xid_errors. A GPU bound to another driver (vfio-pci for a guest) is
not expected to answer and is left alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from doctor.derived.relations import gpu_label
from doctor.facts import Facts, Gpu
from doctor.facts.gpu import GpuFault
from doctor.findings import CRITICAL, PASS, Evidence, Finding, Fix, Impact
from doctor.i18n import N_, join
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deploy/xid-errors/index.html",
    "https://docs.nvidia.com/deploy/gpu-debug-guidelines/index.html",
)
#: evidence lines shown per GPU (fault lines first)
MAX_EVIDENCE = 6


def _fault_text(fault: GpuFault) -> str:
    return fault.text + (f" (x{fault.count})" if fault.count > 1 else "")


def _evidence(facts: Facts, gpu: Gpu, faults: list[GpuFault], unlisted: bool) -> list[Evidence]:
    out = [Evidence(f.origin, _fault_text(f)) for f in faults[:MAX_EVIDENCE - 2]]
    if unlisted:
        listed = sum(1 for g in facts.gpus.gpus if g.runtime is not None)
        out.append(Evidence(facts.gpus.runtime_origin or "nvidia-smi",
                            f"{gpu.address} not listed ({listed} of {len(facts.gpus.gpus)} GPUs listed)"))
    pci = gpu.pci
    if pci is not None:
        out.append(Evidence(pci.attr("driver"), f"{gpu.address} [{pci.vendor or 0:04x}:{pci.device or 0:04x}] "
                                                f"{pci.name or 'NVIDIA GPU'}, driver {pci.driver or 'unknown'}"))
    xids = Counter(x.xid for x in facts.kernel_log.xids_of(gpu.address))
    if xids:
        out.append(Evidence(facts.kernel_log.origin, join(', ', (f"Xid {c} x{n}" for c, n in sorted(xids.items())))))
    return out


def _fix() -> Fix:
    return Fix(notes=N_('Drain the node (cordon it; stop the workloads that use the other GPUs), then reboot it. If the GPU is still missing, power-cycle the node cold (BMC power off, wait, on), reseat the GPU and its power cables, and check the slot; if it persists or recurs, run `dcgmi diag -r 3` on the node and RMA the GPU. `nvidia-smi -r` needs a device handle, so it rarely helps here.'))


@check("gpu.unreachable", "GPUs on the PCI bus that the driver or nvidia-smi cannot reach", "gpu", acts="hardware",
       needs=("pci",))
def gpu_unreachable(facts: Facts) -> Iterator[Finding]:
    """Critical for each NVIDIA GPU on the bus that the driver failed to initialise or nvidia-smi cannot open;
    pass when every GPU on the bus answers; silent without GPUs or without a driver view and failure lines."""
    gpus = facts.gpus.gpus
    reached = [g for g in gpus if g.runtime is not None]
    node_faults = [f for f in facts.gpus.faults if f.address is None]
    flagged = 0
    for gpu in gpus:
        if gpu.runtime is not None or gpu.pci is None:
            continue
        bound = gpu.pci.driver == "nvidia"
        # a node-wide failure ("No devices were found", "couldn't communicate with the NVIDIA driver") names every
        # GPU the nvidia driver holds, and every GPU when nvidia-smi reached none (the driver is not loaded at all)
        faults = [f for f in facts.gpus.faults if f.address == gpu.address] + (
            node_faults if bound or not reached else [])
        unlisted = bound and bool(reached)
        if not faults and not unlisted:
            continue
        flagged += 1
        label = gpu_label(facts, gpu.address)
        observed = faults[0].text if faults else N_('not listed by nvidia-smi')
        yield Finding(
            CRITICAL, gpu.address, N_('{label} is on the PCI bus but the driver cannot reach it: {observed}', label=label, observed=observed),
            detail=N_('{label} is an NVIDIA GPU on the PCI bus, yet the driver did not bring it up or nvidia-smi cannot open it. CUDA cannot use it, NVML-based tools fail or skip it, and a job scheduled onto it fails. A wedged GPU usually needs a reboot or a cold power cycle.', label=label)
                   + ("" if bound else N_(" The nvidia driver is not bound to it (driver in use: {driver}): load or install the NVIDIA driver first.",
                                          driver=gpu.pci.driver or 'none')),
            evidence=tuple(_evidence(facts, gpu, faults, unlisted)),
            expected=N_('every GPU on the bus initialised and listed by nvidia-smi'), observed=observed,
            impact=Impact(95.0, N_('the GPU is out of service until the node is rebooted or power-cycled'),
                          basis=N_("the driver's own failure lines; NVIDIA's Xid catalogue resolves Xid 79 and 143 (GPU fallen off the bus, initialisation failure) with a reset or reboot")),
            fix=_fix(), references=REFERENCES, confidence=0.9 if faults else 0.75)
    if not flagged and reached:
        yield Finding(PASS, "node", N_('every GPU on the bus answers the driver ({n_reached} GPUs)', n_reached=len(reached)),
                      evidence=(Evidence(facts.gpus.runtime_origin or "nvidia-smi", f"{len(reached)} GPUs listed"),))
