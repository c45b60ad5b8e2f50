"""gpu.persistence_mode: data-centre GPUs without persistence mode re-initialise on every first client."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import is_datacentre
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import LOW, PASS, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_, join
from doctor.registry import check

DAEMON = "nvidia-persistenced"
REFERENCES = (
    "https://docs.nvidia.com/deploy/driver-persistence/index.html",
    "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
)


def daemon_running(facts: Facts) -> bool | None:
    """Whether nvidia-persistenced runs; None when no process list was recorded."""
    if not facts.processes:
        return None
    return any((p.name or "") == DAEMON or (p.argv and p.argv[0].rsplit("/", 1)[-1] == DAEMON)
               for p in facts.processes)


@check("gpu.persistence_mode", "Persistence mode on data-centre GPUs", "gpu", acts="os", fixes=("persistence_mode",), needs=("gpus",))
def gpu_persistence_mode(facts: Facts) -> Iterator[Finding]:
    """Low when a data-centre GPU reports ``Persistence Mode: Disabled``.

    Without persistence the driver tears the GPU down when its last client exits: the next client
    waits seconds for initialisation, and clocks, ECC and application settings are reset.
    """
    gpus = [g for g in facts.gpus.gpus if is_datacentre(g) and g.runtime is not None
            and g.runtime.persistence_mode is not None]
    if not gpus:
        return
    where = facts.gpus.runtime_origin or "nvidia-smi"
    off = [g for g in gpus if g.runtime is not None and g.runtime.persistence_mode is False]
    if not off:
        yield Finding(PASS, "node", N_('persistence mode enabled on {n_gpus} data-centre GPUs', n_gpus=len(gpus)),
                      evidence=(Evidence(where, "Persistence Mode: Enabled on every GPU"),))
        return
    daemon = daemon_running(facts)
    evidence = [Evidence(where, f"{gpu_label(facts, g.address)}: Persistence Mode Disabled") for g in off]
    if daemon is not None:
        evidence.append(Evidence("proc/*/cmdline", f"{DAEMON} {'running' if daemon else 'not running'}"))
    labels = join(', ', (gpu_label(facts, g.address) for g in off[:4])) + (" ..." if len(off) > 4 else "")
    yield Finding(
        LOW, "node", N_('persistence mode disabled on {n_off} of {n_gpus} data-centre GPUs', n_off=len(off), n_gpus=len(gpus)),
        detail=N_('{labels}. When the last CUDA client exits the driver de-initialises the GPU; the next start pays seconds of initialisation and application clocks and other settings are reset.', labels=labels)
               + (N_(' {DAEMON} is not running.', DAEMON=DAEMON) if daemon is False else ""),
        evidence=tuple(evidence), expected=N_('Persistence Mode: Enabled (nvidia-persistenced running)'),
        observed="Disabled", impact=Impact(3, N_('slow first CUDA init after idle; settings lost between jobs'), basis=N_('without persistence the driver tears the GPU state down when its last client exits; the next CUDA start pays the re-initialisation')),
        fix=make("persistence_mode",
                notes=N_('nvidia-persistenced is the supported way; `nvidia-smi -pm 1` is legacy and does not survive a reboot.')),
        references=REFERENCES)
