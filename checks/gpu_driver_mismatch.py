"""gpu.driver_mismatch: the loaded NVIDIA kernel module differs from the user-space driver (NVML)."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.facts import Facts
from doctor.facts.system import NVIDIA_VERSION
from doctor.findings import CRITICAL, PASS, Evidence, Finding, Fix, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = (
    "https://docs.nvidia.com/deploy/nvidia-smi/index.html",
    "https://github.com/lyulyul/shine-cluster/issues/30",
    "https://wiki.debian.org/UnattendedUpgrades",
)


def _fix() -> Fix:
    return make(
        "driver_reload",
        notes=N_('Stop every GPU workload (and nvidia-fabricmanager/DCGM) first, or simply reboot. Then stop unattended driver upgrades: `apt-mark hold` the nvidia-driver/libnvidia packages (or `dnf versionlock`), and blacklist `nvidia-` and `libnvidia-` in 50unattended-upgrades.'))


@check("gpu.driver_mismatch", "NVIDIA kernel module and user-space driver versions match", "gpu", acts="os",
       fixes=("driver_reload",), needs=("gpus",))
def gpu_driver_mismatch(facts: Facts) -> Iterator[Finding]:
    """Critical when NVML refuses with a version mismatch, or the two versions differ.

    This happens after an unattended driver upgrade without a reboot: NVML (nvidia-smi, the device
    plugin, DCGM) fails with ``Driver/library version mismatch`` and new CUDA contexts may fail.
    """
    if not facts.gpus.gpus:
        return
    drv = facts.nvidia_driver
    kernel = drv.kernel_module_version
    user = facts.gpus.driver_version
    missing = facts.gpus.runtime_missing or ""
    refused = drv.nvml_mismatch or ("version mismatch" in missing.lower() and missing) or None
    if refused:
        evidence = [Evidence(drv.nvml_mismatch_where or facts.gpus.runtime_origin or "NVML", refused)]
        if drv.version_line:
            evidence.append(Evidence(NVIDIA_VERSION, drv.version_line))
        yield Finding(
            CRITICAL, "node", N_('NVML refuses to start: driver/library version mismatch'),
            detail=N_('The user-space NVIDIA driver was upgraded but the old kernel module is still loaded. nvidia-smi, the Kubernetes device plugin and DCGM fail; new CUDA processes may fail too.'),
            evidence=tuple(evidence), expected=N_('kernel module and libnvidia-ml of the same version'),
            observed=refused, impact=Impact(100, N_('GPU management and new workloads fail until the module is reloaded or the node rebooted'), basis=N_('NVML and CUDA refuse to run when the loaded kernel module and the user-space library versions differ')),
            fix=_fix(), references=REFERENCES)
        return
    if kernel is None or user is None:
        return
    versions = (Evidence(NVIDIA_VERSION, drv.version_line or kernel),
                Evidence(facts.gpus.runtime_origin or "NVML", f"driver_version {user}"))
    if kernel == user:
        yield Finding(PASS, "node", N_('kernel module and NVML driver both {kernel}', kernel=kernel), evidence=versions)
        return
    yield Finding(
        CRITICAL, "node", N_('NVIDIA kernel module {kernel} but user-space driver {user}', kernel=kernel, user=user),
        detail=N_('The loaded kernel module and the user-space libraries come from different driver releases, usually an upgrade without a reboot. NVML and CUDA refuse to run across such a mismatch.'),
        evidence=versions, expected=N_('kernel module {user}', user=user), observed=N_('kernel module {kernel}', kernel=kernel),
        impact=Impact(100, N_('GPU management and new CUDA contexts fail until the module is reloaded'), basis=N_('NVML and CUDA refuse to run when the loaded kernel module and the user-space library versions differ')),
        fix=_fix(), references=REFERENCES)
