"""numa.*: locality unknown, process affinity, IRQ affinity, GPU-NIC locality, kubelet and kernel policy."""

from __future__ import annotations

from tests.checks._netnuma_base import healthy, real, sick
from tests.helpers import facts, findings_of

GPU2, NIC0 = "0000:3a:00.0", "0000:19:00.0"


def _worst(found: list) -> str | None:
    order = ("critical", "high", "medium", "low", "unknown", "info", "pass")
    return min((f.severity for f in found), key=order.index, default=None)


def _numa_all(value: str) -> dict[str, str]:
    base = healthy()
    out = {}
    for dev in (base / "sys/bus/pci/devices").iterdir():
        out[real(f"sys/bus/pci/devices/{dev.name}") + "/numa_node"] = value + "\n"
    return out


def test_unknown_locality_on_two_sockets_is_medium_never_mismatch() -> None:
    f = facts(_numa_all("-1"), base=healthy())
    found = findings_of(f, "numa.unknown_locality")
    assert [(x.subject, x.severity) for x in found] == [("node", "medium")]
    assert "unverifiable" in found[0].title
    assert not [x for x in findings_of(f, "numa.gpu_nic_locality") if x.severity not in ("pass",)]


def test_unknown_locality_on_one_socket_is_silent_pass() -> None:
    changes = {**_numa_all("-1"), "sys/devices/system/node/node1": None}
    found = findings_of(facts(changes, base=healthy()), "numa.unknown_locality")
    assert [x.severity for x in found] == ["pass"]


def test_cpuless_memory_nodes_are_not_sockets() -> None:
    changes = {**_numa_all("-1"), "sys/devices/system/node/node1": None,
               "sys/devices/system/node/node250/cpulist": "\n", "sys/devices/system/node/node251/cpulist": "\n"}
    f = facts(changes, base=healthy())
    assert not f.numa.multi_node
    assert _worst(findings_of(f, "numa.unknown_locality")) == "pass"


def test_worker_on_far_node_is_medium_with_pid_subject() -> None:
    found = findings_of(facts(base=sick()), "numa.process_affinity")
    bad = [x for x in found if x.severity == "medium"]
    assert [(x.subject, x.related) for x in bad] == [("4336", (GPU2,))]
    assert "taskset -a -p -c 0-47 4336" in bad[0].fix.runtime


def test_partial_overlap_is_low_and_healthy_passes() -> None:
    status = (sick() / "proc/4336/status").read_text().replace("Cpus_allowed_list:\t48-95", "Cpus_allowed_list:\t40-55")
    found = findings_of(facts({"proc/4336/status": status}, base=sick()), "numa.process_affinity")
    assert [(x.subject, x.severity) for x in found if x.severity != "pass"] == [("4336", "low")]
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.process_affinity")] == ["pass"]


def test_far_irqs_medium_when_tcp_carries_data_and_mention_irqbalance() -> None:
    found = findings_of(facts(base=sick()), "numa.irq_affinity")
    bad = [x for x in found if x.severity != "pass"]
    assert [(x.subject, x.severity) for x in bad] == [("enp27s0np0", "medium")]
    assert "irqbalance is running" in bad[0].detail
    assert any(c == "set_irq_affinity_bynode.sh 0 enp27s0np0" for c in bad[0].fix.runtime)


def test_far_irqs_low_on_rdma_node_and_requested_mask_ignored() -> None:
    base = sick()
    env = (base / "proc/4242/environ").read_bytes().replace(b"NCCL_IB_DISABLE=1\0", b"")
    unit = (base / "etc/systemd/system/vllm.service").read_text().replace("Environment=NCCL_IB_DISABLE=1\n", "")
    found = findings_of(facts({"proc/4242/environ": env, "etc/systemd/system/vllm.service": unit}, base=base),
                        "numa.irq_affinity")
    assert [x.severity for x in found if x.severity != "pass"] == ["low"]
    # requested mask local but effective far still counts as far; effective local passes
    ok = {f"proc/irq/{n}/effective_affinity_list": "8\n" for n in range(217, 225)}
    assert [x.severity for x in findings_of(facts(ok, base=base), "numa.irq_affinity")] == ["pass"]


def test_gpu_nic_locality_sys_is_high_and_healthy_passes() -> None:
    base = healthy()
    socket0_nics = {f"sys/bus/pci/devices/0000:{b}:00.0": None for b in ("19", "1b", "3b", "3d")}
    found = findings_of(facts(socket0_nics, base=base), "numa.gpu_nic_locality")
    high = [x for x in found if x.severity == "high"]
    assert {x.subject for x in high} == {"0000:18:00.0", "0000:1a:00.0", GPU2, "0000:3c:00.0"}
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.gpu_nic_locality")] == ["pass"]


def test_kubelet_none_is_medium_with_full_procedure() -> None:
    found = findings_of(facts(base=sick()), "numa.kubelet_policy")
    assert [(x.subject, x.severity) for x in found] == [("node", "medium")]
    steps = " ".join(found[0].fix.runtime)
    for step in ("kubectl drain gpu-node-13", "systemctl stop kubelet", "rm -f /var/lib/kubelet/cpu_manager_state",
                 "cpuManagerPolicy: static", "single-numa-node", "systemctl start kubelet", "kubectl uncordon"):
        assert step in steps
    assert found[0].fix.rollback
    assert [x.severity for x in findings_of(facts(base=healthy()), "numa.kubelet_policy")] == ["pass"]


def test_kernel_policy_balancing_low_zone_reclaim_medium() -> None:
    found = findings_of(facts(base=sick()), "numa.kernel_policy")
    assert [(x.subject, x.severity) for x in found] == [("kernel.numa_balancing", "low")]
    zr = findings_of(facts({"proc/sys/vm/zone_reclaim_mode": "1\n"}, base=healthy()), "numa.kernel_policy")
    assert [(x.subject, x.severity) for x in zr] == [("vm.zone_reclaim_mode", "medium")]
    assert zr[0].fix.runtime == ("sysctl -w vm.zone_reclaim_mode=0",)
    assert "sysctl -w vm.zone_reclaim_mode=1" in zr[0].fix.rollback
