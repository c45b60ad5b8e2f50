"""Node shapes the HGX fixtures do not cover: no false alarm on healthy ones, the planted faults found."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.findings import Finding
from doctor.sources import open_source
from tests.checks import unseen_nodes as u
from tests.helpers import HEALTHY, SICK, facts, run

ALARM = ("critical", "high", "medium")


def _all(f: Facts) -> list[Finding]:
    return run(f).findings


def _alarms(found: list[Finding], levels: tuple[str, ...] = ALARM) -> list[tuple[str, str, str]]:
    return sorted((x.check, x.subject, x.severity) for x in found if x.severity in levels)


def test_dgx_a100_idle_gen1_gpus_and_ib_hcas_are_clean() -> None:
    found = _all(u.dgx_a100().facts())
    assert _alarms(found, ALARM + ("low",)) == []
    topo = next(x for x in found if x.check == "pcie.chipset_slot" and x.severity == "info")
    assert topo.title == "GPU PCIe topology: 8 GPUs each behind 1 PCIe switch below a root port, nearest NIC at PIX"
    idle = next(x for x in found if x.check == "pcie.link_downgrade" and x.severity == "info")
    assert idle.title.startswith("8 idle GPUs parked")


def test_dgx_a100_nps4_with_amd_default_iommu_flags_translation_only() -> None:
    found = _all(u.dgx_a100(nps4=True, iommu="default").facts())
    assert _alarms(found) == [("iommu.translation", "node", "high")]
    assert not [x for x in found if x.check.startswith("numa.") and x.severity not in ("pass", "info", "unknown")]
    # the generated node records no proc/interrupts: IRQ placement is unknown, naming it, never pass
    [irq] = [x for x in found if x.check == "numa.irq_affinity"]
    assert irq.severity == "unknown" and any("proc/interrupts" in e.value for e in irq.evidence)


def test_workstation_with_gpu_on_cpu_port_is_clean() -> None:
    found = _all(u.workstation().facts())
    # the generated workstation exposes no AER counter files: on bare metal that is "cannot tell", not health;
    # nor sys/devices/system/cpu, proc/meminfo, sys/kernel/mm: the inputs of those checks are missing; nor
    # /proc/interrupts or msi_irqs/: whether its GPU is on MSI or its INTx line cannot be told either
    assert sorted(_alarms(found, ALARM + ("low", "unknown"))) == sorted(
        [("gpu.interrupts", "GPU 0 (0000:01:00.0)", "unknown")]
        + [(c, "node", "unknown") for c in ("cpu.governor", "kernel.hugepages", "kernel.thp", "pcie.aer")])
    assert [x.title for x in found if x.check == "gpu.inventory"] == ["1 GPU: NVIDIA GeForce RTX 4090"]


def test_workstation_gpu_behind_pch_is_high_once() -> None:
    found = _all(u.workstation(gpu_behind_pch=True).facts())
    assert _alarms(found) == [("pcie.chipset_slot", "GPU 0 (0000:06:00.0)", "high")]
    assert "0000:00:1c.4" in next(x for x in found if x.severity == "high").title


@pytest.mark.parametrize("unknown_links", [False, True])
def test_cloud_vm_only_says_it_is_virtual(unknown_links: bool) -> None:
    found = _all(u.cloud_vm(link_unknown=unknown_links).facts())
    assert _alarms(found) == []
    assert not [x for x in found if x.check.startswith(("pcie.", "iommu.", "vfio.")) and x.severity != "info"]
    assert any(x.check == "gpu.inventory" and "virtual machine" in x.title for x in found)
    assert not [x for x in found if x.check == "rdma.gid_index"]  # EFA link layer "Unknown": no RoCE rule


def test_gh200_is_clean_and_a_narrow_c2c_link_is_only_info() -> None:
    n = u.gh200()
    assert _alarms(_all(n.facts()), ALARM + ("low",)) == []
    gpu_dir = "sys/devices/pci0009:00/0009:00:00.0/" + u.GH200_GPU
    n.files[f"{gpu_dir}/current_link_width"] = "4\n"
    found = [x for x in _all(n.facts()) if x.check == "pcie.link_downgrade" and x.severity != "pass"]
    assert [(x.subject, x.severity) for x in found] == [("GPU 0 (0009:01:00.0)", "info")]
    assert "NVLink-C2C" in found[0].title


def test_l40s_server_is_clean() -> None:
    found = _all(u.l40s().facts())
    assert _alarms(found, ALARM + ("low",)) == []
    node = [x for x in found if x.check == "numa.gpu_nic_locality"]
    assert [(x.subject, x.severity) for x in node] == [("node", "info")] and "(NODE)" in node[0].title


def test_l40s_worker_pinned_to_the_far_socket_is_medium() -> None:
    found = _all(u.l40s(gpu0=u.L40S_NODES[1]).facts())
    assert _alarms(found) == [("numa.process_affinity", "VLLM::Worker (pid 7001)", "medium")]


def test_passthrough_host_vfio_gpus_are_info_and_mig_gpus_do_not_make_iommu_high() -> None:
    found = _all(u.passthrough_host().facts())
    assert _alarms(found) == []
    assert sorted((x.subject, x.severity) for x in found if x.check == "vfio.binding" and x.severity != "pass") == [
        ("GPU 2 (0000:cb:00.0)", "info"), ("GPU 3 (0000:e2:00.0)", "info")]
    assert [x.severity for x in found if x.check == "iommu.translation"] == ["low"]


def test_vfio_gpus_without_a_hypervisor_are_high() -> None:
    found = _all(u.passthrough_host(hypervisor=False).facts())
    assert _alarms(found) == [("vfio.binding", "GPU 2 (0000:cb:00.0)", "high"),
                              ("vfio.binding", "GPU 3 (0000:e2:00.0)", "high")]


def _sos(tmp_path: Path, **kw: object) -> list[Finding]:
    root = tmp_path / "sosreport-hgx-sos-01"
    for name, text in u.sosreport_files(**kw).items():  # type: ignore[arg-type]
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    f = Facts(open_source(str(root)))
    assert f.source.kind == "sosreport" and f.pci.origin == "lspci" and len(f.gpus.gpus) == 8
    return _all(f)


def test_sosreport_idle_hgx_has_no_alarm_and_says_numa_is_unknown(tmp_path: Path) -> None:
    found = _sos(tmp_path)
    assert _alarms(found, ALARM + ("low",)) == []
    # a sosreport keeps no process environments, and nvidia-smi -q -d PERFORMANCE (sos 4.0) holds no recovery
    # action: what they would hold is unknown, never "nothing found"
    # and this one records no sys/class/net, proc/modules, proc/meminfo, CPU or mm folders: the checks
    # resting on them are unknown, naming the folder
    # nor proc/interrupts: each GPU's interrupt mode is unknown (one finding per GPU)
    assert sorted({x.check for x in found if x.severity == "unknown"}) == [
        "cpu.governor", "gpu.interrupts", "gpu.recovery", "kernel.hugepages", "kernel.thp", "nccl.transport", "net.drops", "net.link",
        "net.multirail", "numa.irq_affinity", "numa.unknown_locality", "rdma.gdr_module", "rdma.gid_index",
        "rdma.lossless", "rdma.mtu", "runtime.debug_env", "runtime.device_order"]
    assert all(any("not recorded" in e.value for e in x.evidence)
               for x in found if x.check.startswith(("net.", "rdma.")) and x.severity != "pass")


def test_sosreport_gpu_at_x8_is_found_from_lspci(tmp_path: Path) -> None:
    found = _sos(tmp_path, gpu_x8="ba", pcie_gen=5)
    assert _alarms(found) == [("pcie.link_downgrade", "GPU 6 (0000:ba:00.0)", "high")]


PROSE = ("add ", "put ", "restore ", "start ", "remove ")


@pytest.mark.parametrize("base", [HEALTHY, SICK])
def test_fixture_fixes_roll_back_with_commands_not_prose(base: Path) -> None:
    for x in _all(facts(base=base)):
        for line in (*x.fix.rollback, *x.fix.persistent):
            assert not line.lower().startswith(PROSE), (x.check, line)


def test_healthy_fixture_has_nothing_above_info() -> None:
    found = _all(facts(base=HEALTHY))
    assert _alarms(found, ALARM + ("low",)) == []
    topo = next(x for x in found if x.check == "pcie.chipset_slot" and x.severity == "info")
    assert "each behind 1 PCIe switch" in topo.title
