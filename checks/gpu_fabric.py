"""gpu.fabric: NVSwitch fabric not ready, Fabric Manager stopped or at another version than the driver."""

from __future__ import annotations

from collections.abc import Iterator

from doctor.derived.gpu import reported, smi_evidence
from doctor.derived.relations import gpu_label
from doctor.facts import Facts
from doctor.findings import CRITICAL, PASS, UNKNOWN, Evidence, Finding, Impact
from doctor.fixes import make
from doctor.i18n import N_
from doctor.registry import check

REFERENCES = ("https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html",)
FM_PROCESS = "nv-fabricmanager"
READY = ("completed", "success")


def _fm_processes(facts: Facts) -> list[int]:
    return [p.pid for p in facts.processes
            if (p.name or "") == FM_PROCESS or (p.argv and p.argv[0].rsplit("/", 1)[-1] == FM_PROCESS)]


@check("gpu.fabric", "NVSwitch fabric state and the Fabric Manager (running, version = driver)", "gpu", acts="os",
       fixes=("fabric_manager",), needs=("gpus",))
def gpu_fabric(facts: Facts) -> Iterator[Finding]:
    """Critical when a GPU's fabric state is not Completed/Success, when NVSwitches are present but
    nv-fabricmanager is not running, or when its version differs from the driver's: CUDA fails with
    error 802 (system not yet initialized) or NCCL loses NVLink. Quiet on PCIe-only GPUs."""
    switches = [d for d in facts.pci.devices.values() if d.is_nvswitch]
    fabric = [(g, rt) for g, rt in reported(facts) if rt.fabric_state]
    if not switches and not fabric:
        return
    found = 0
    for gpu, rt in fabric:
        state, status = rt.fabric_state or "", rt.fabric_status or "N/A"
        if state.lower() == READY[0] and status.lower() == READY[1]:
            continue
        found += 1
        yield Finding(
            CRITICAL, gpu_label(facts, gpu.address), N_('NVSwitch fabric not ready: state {state}, status {status}', state=state, status=status),
            detail=N_('Until the Fabric Manager has registered this GPU with the NVSwitch fabric, CUDA calls fail with error 802 (system not yet initialized) or NCCL cannot use NVLink.'),
            evidence=(smi_evidence(facts, gpu, N_('fabric state {state}, status {status}', state=state, status=status)),),
            expected=N_('state Completed, status Success'), observed=N_('state {state}, status {status}', state=state, status=status),
            impact=Impact(100, N_('CUDA fails on this GPU or collectives drop from NVLink to PCIe'),
                          basis=N_('NVIDIA Fabric Manager user guide: until the fabric state is Completed/Success, CUDA initialisation fails (error 802)')),
            fix=make("fabric_manager",
                     N_('Read `journalctl -u nvidia-fabricmanager` first. If the state stays, stop every GPU process and reset all GPUs together (`nvidia-smi -r`), then restart the Fabric Manager.'),
                     action="restart", enable=True),
            references=REFERENCES, related=(gpu.address,))
    if switches:
        driver = facts.gpus.driver_version or facts.nvidia_driver.kernel_module_version
        fm = facts.fabric_manager
        pids = _fm_processes(facts)
        sw_ev = Evidence(switches[0].attr("class"), f"{len(switches)} NVSwitch devices (10de, class 0x0680)")
        if not facts.processes:
            found += 1
            yield Finding(UNKNOWN, "node", N_('Fabric Manager state unknown: no process list recorded'),
                          detail=N_('NVSwitches are present, so nv-fabricmanager must run; the snapshot has no /proc.'),
                          evidence=(sw_ev, Evidence("proc/*/cmdline", "not recorded")))
        elif not pids:
            found += 1
            yield Finding(
                CRITICAL, "node", N_('NVSwitch system without a running Fabric Manager'),
                detail=N_('{n_switches} NVSwitches are present but no {FM_PROCESS} process runs. Without it the GPUs cannot join the NVLink fabric: new CUDA contexts fail (error 802) or NCCL falls back to PCIe.', n_switches=len(switches), FM_PROCESS=FM_PROCESS),
                evidence=(sw_ev, Evidence("proc/*/cmdline", f"no {FM_PROCESS} among {len(facts.processes)} processes")),
                expected=N_('{FM_PROCESS} running', FM_PROCESS=FM_PROCESS), observed=N_('not running'),
                impact=Impact(100, N_('no NVLink between GPUs; CUDA may fail to initialise'),
                          basis=N_('NVIDIA Fabric Manager user guide: without the service NVSwitch systems cannot set up NVLink, and CUDA reports error 802')),
                fix=make("fabric_manager", N_("Install the nvidia-fabricmanager package of the driver's exact version if the unit does not exist."), action="start", enable=True),
                references=REFERENCES)
        if fm.version and driver and fm.version != driver:
            found += 1
            branch = driver.split(".")[0]
            yield Finding(
                CRITICAL, "node", N_('Fabric Manager {version} does not match driver {driver}', version=fm.version, driver=driver),
                detail=N_("The Fabric Manager refuses to start, or starts and fails to configure the fabric, when its version differs from the kernel driver's (typical after a driver update without the matching nvidia-fabricmanager package)."),
                evidence=(Evidence(fm.origin, f"Fabric Manager version is : {fm.version}"),
                          Evidence(facts.gpus.runtime_origin or "proc/driver/nvidia/version", f"driver {driver}")),
                expected=driver, observed=fm.version,
                impact=Impact(100, N_('NVLink fabric not (re)initialised after the next restart or reboot'),
                          basis=N_("NVIDIA Fabric Manager user guide: on NVSwitch systems the service must run at the driver's version to train the fabric")),
                fix=make("fabric_manager",
                         N_('First install the matching package (Ubuntu: nvidia-fabricmanager-{branch}={driver}-*; RHEL: nvidia-fabric-manager-{driver}) and hold it with the driver, then restart. Rollback: reinstall {version} together with its driver.', branch=branch, driver=driver, version=fm.version), action="restart", enable=False),
                references=REFERENCES)
    if not found:
        ev = [smi_evidence(facts, fabric[0][0], N_('fabric state Completed, status Success'))] if fabric else []
        if switches:
            ev.append(Evidence(f"proc/{_fm_processes(facts)[0]}/comm", FM_PROCESS))
            fm = facts.fabric_manager
            ev.append(Evidence(fm.origin, f"version {fm.version}" if fm.version else f"version unknown: {fm.missing}"))
        yield Finding(PASS, "node", N_('NVSwitch fabric ready on {n_fabric} GPUs', n_fabric=len(fabric))
                      + (N_(', Fabric Manager running') if switches else ""), evidence=tuple(ev))
