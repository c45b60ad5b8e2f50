"""Every fix parameter an edited result could choose is bound to the host: what a rollback restores is the
host's value now (as the check saw it), what a fix sets, loads, enables or names is what the check itself
gives it on this host's facts. Each case builds the check's own fix on its host, then refuses one edited
value; before the binding the edited value built."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from doctor.facts import Facts
from doctor.fixes.base import RECOMMENDED, SPECS, Context, Fact, FixRejected, build
from doctor.result_io import to_result
from fixtures.tools.make_node import HEALTHY as SPEC
from reports.fixscript import declared_checks, fix_scripts, own_fixes
from tests.checks.pcie_overlays import GPU0, GPU3, attrs, node
from tests.checks.smi_overlay import SMI, generated, smi
from tests.helpers import SICK, facts, run

THP = "sys/kernel/mm/transparent_hugepage/defrag"


def _qos(netdev: str, trust: str = "dscp", pfc: str = "0   0   0   1   0   0   0   0") -> dict[str, str]:
    from tests.checks.test_rdma_lossless import _qos as qos

    return qos(netdev, trust, pfc)


def _tc106() -> dict[str, Any]:
    from tests.checks.test_rdma_lossless import TC106

    return dict(TC106)


def _compose() -> str:
    from tests.fixes.test_bound import COMPOSE_TEXT

    return COMPOSE_TEXT


def _vfio(extra: dict[str, Any] | None = None) -> Facts:
    from tests.checks.test_vfio_binding import VFIO

    return node({**attrs(GPU3, driver=VFIO), **(extra or {})})


def _mtu_1500() -> Facts:
    from tests.checks._netnuma_base import healthy, real

    return facts({f"{real('sys/class/net/enp189s0np0', healthy())}/mtu": "1500\n"}, base=healthy())


def _debug_env_no_unit() -> Facts:
    """A server whose CUDA_LAUNCH_BLOCKING=1 nothing on the host sets: the fix is a manual restart."""
    from tests.helpers import HEALTHY

    return facts({"proc/4242/environ": (HEALTHY / "proc/4242/environ").read_bytes() + b"CUDA_LAUNCH_BLOCKING=1\0"})


def _no_peermem() -> dict[str, str]:
    text = (SICK.parent / "hgx-h100-healthy" / "proc/modules").read_text()
    return {"proc/modules": "".join(x for x in text.splitlines(keepends=True) if not x.startswith("nvidia_peermem "))}


#: name -> the host a case runs on
HOSTS: dict[str, Callable[[], Facts]] = {
    "sick": lambda: facts(base=SICK),
    "sick with a compose file": lambda: facts({"etc/compose/llm.yaml": _compose()}, base=SICK),
    "thp always": lambda: facts({THP: "[always] defer defer+madvise madvise never\n"}),
    "power limit 300 W": lambda: facts({SMI: smi({0: {"current_power_limit": "300.00 W",
                                                      "requested_power_limit": "300.00 W"}})}),
    "docker /dev/shm": lambda: generated(replace(SPEC, shm_options="rw,nosuid,nodev,noexec,relatime,size=65536k")),
    "hugepages short": lambda: generated(replace(SPEC, extra_cmdline=("hugepages=4096",), hugepages_2m=1200)),
    "PFC off": lambda: facts({**_tc106(), **_qos("enp61s0np0", pfc="0   0   0   0   1   0   0   0")}),
    "trust pcp": lambda: facts({**_tc106(), **_qos("enp61s0np0", trust="pcp")}),
    "driver_override": lambda: node(attrs(GPU0, driver_override="vfio-pci")),
    "ECC off": lambda: facts({SMI: smi({2: {"current_ecc": "Disabled", "pending_ecc": "Disabled"}})}),
    "MIG on": lambda: facts({SMI: smi({3: {"current_mig": "Enabled", "pending_mig": "Enabled"}})}),
    "memlock 64 KiB": lambda: generated(replace(SPEC, memlock="65536")),
    "no peermem": lambda: facts(_no_peermem()),
    "GPU on vfio-pci": lambda: _vfio({"etc/modprobe.d/vfio.conf": "options vfio-pci ids=10de:2330\n"}),
    "VFIO group for a VM": lambda: _vfio({"proc/77/status": "Name:\tqemu-system-x86\nPPid:\t1\n",
                                          "proc/77/cmdline": b"qemu-system-x86_64\0-enable-kvm\0"}),
    "one NIC at MTU 1500": _mtu_1500,
    "debug variable, no unit": _debug_env_no_unit,
    "fabric in progress": lambda: facts({SMI: smi({4: {"fabric/state": "In Progress", "fabric/status": "N/A"}})}),
}


@pytest.fixture(scope="module")
def hosts() -> dict[str, Facts]:
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    return {}


def _host(hosts: dict[str, Facts], name: str) -> Facts:
    if name not in hosts:
        hosts[name] = HOSTS[name]()
    return hosts[name]


def _ctx(f: Facts, check: str) -> Context:
    """What ``gnd fix-script`` rebuilds ``check``'s fixes against on ``f``: its facts, what the check judges
    and the fixes the check builds itself on them."""
    declared = declared_checks()[check]
    ctx = Context.from_facts(f)
    return ctx.judged_by(declared.env, declared.flags, own_fixes(declared, ctx))


def _honest(ctx: Context, builder: str, which: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    own = [dict(p) for name, p in ctx.own or () if name == builder and (which is None or which(dict(p)))]
    assert own, f"the check builds no {builder} fix on this host"
    return own[0]


NOW, REC = "now", "recommended"

#: (host, check, builder, edit, the fact that refuses it; None: what the check recommends)
CASES: list[tuple[str, str, str, dict[str, Any], Any]] = [
    # the previous session's list: rollback targets checked for shape only
    ("power limit 300 W", "gpu.clock_throttle", "gpu_power_limit", {"watts": 5000}, Fact.POWER_DEFAULT),
    ("power limit 300 W", "gpu.clock_throttle", "gpu_power_limit", {"watts": 1}, Fact.POWER_DEFAULT),
    ("thp always", "kernel.thp", "thp_defrag", {"previous": "never"}, Fact.THP_NOW),
    ("thp always", "kernel.thp", "thp_defrag", {"value": "always"}, None),
    ("thp always", "kernel.thp", "thp_defrag", {"path": "/sys/kernel/mm/redhat_transparent_hugepage/defrag"},
     Fact.THP_PATH),
    ("sick", "numa.process_affinity", "taskset", {"previous": "0"}, Fact.AFFINITY_NOW),
    ("sick", "numa.process_affinity", "taskset", {"cpus": "0"}, None),
    ("sick", "numa.process_affinity", "taskset", {"cpus": "48-95"}, None),
    ("docker /dev/shm", "runtime.shm", "shm_resize", {"previous": 1024}, Fact.SHM_NOW),
    ("docker /dev/shm", "runtime.shm", "shm_resize", {"size": "9999G"}, None),
    ("hugepages short", "kernel.hugepages", "hugepages", {"previous": 0}, Fact.HUGEPAGES_NOW),
    ("hugepages short", "kernel.hugepages", "hugepages", {"pages": 2**31 - 1}, None),
    ("PFC off", "rdma.lossless", "roce_qos", {"previous_pfc": [0] * 8}, Fact.PFC_NOW),
    ("PFC off", "rdma.lossless", "roce_qos", {"pfc": [1] * 8}, None),
    ("trust pcp", "rdma.lossless", "roce_qos", {"previous_trust": "dscp"}, Fact.TRUST_NOW),
    ("driver_override", "vfio.binding", "driver_override_clear", {"previous": "nouveau"}, Fact.OVERRIDE_NOW),
    # the audit: every other parameter an edited result could choose
    ("ECC off", "gpu.ecc", "ecc_mode", {"enable": False, "previous": True}, Fact.ECC_NOW),
    ("ECC off", "gpu.ecc", "ecc_mode", {"pending": True}, Fact.ECC_PENDING),
    ("MIG on", "gpu.mig", "mig_mode", {"enable": True, "previous": False}, Fact.MIG_NOW),
    ("memlock 64 KiB", "runtime.memlock", "prlimit_memlock", {"previous": {"1": ["unlimited", "unlimited"]}},
     Fact.MEMLOCK_NOW),
    ("no peermem", "rdma.gdr_module", "module_load", {"module": "ib_uverbs"}, None),
    ("fabric in progress", "gpu.fabric", "fabric_manager", {"enable": True, "action": "start"}, None),
    ("sick", "iommu.translation", "kernel_args", {"add": ["init=/bin/sh"]}, None),
    ("sick", "iommu.translation", "kernel_args", {"remove": ["quiet"]}, None),
    ("sick", "iommu.translation", "kernel_args", {"os_family": "rhel"}, Fact.OS_FAMILY),
    ("sick", "pcie.acs_redirect", "acs_redirect", {"ports": {"0000:99:00.0": "0000"}}, None),
    ("sick", "pcie.link_downgrade", "pcie_retrain", {"port": "0000:99:00.0"}, None),
    ("sick", "rdma.port_state", "rdma_port", {"netdevs": ["enp27s0np0"]}, None),
    ("sick", "rdma.port_state", "rdma_port", {"address": GPU0}, None),
    ("sick", "net.drops", "rdma_counters_show", {"netdev": "enp27s0np0"}, None),
    ("sick", "numa.irq_affinity", "irq_affinity", {"irqbalance": False}, None),
    ("sick", "numa.kubelet_policy", "kubelet_policy", {"settings": {"cpuManagerPolicy": ["none", True]}}, None),
    ("sick", "numa.kubelet_policy", "kubelet_policy", {"node": "another-node"}, None),
    ("sick", "numa.kubelet_policy", "kubelet_policy", {"config": "/etc/kubernetes/kubelet.yaml"}, Fact.KUBELET_CONFIG),
    # another fix's sysctl.d file: the write replaces it, the rollback removes it
    ("sick", "net.tcp_tuning", "sysctl", {"conf": "90-gnd-numa-balancing.conf"}, None),
    ("sick", "nccl.transport", "unit_env", {"set": {"NCCL_SOCKET_IFNAME": "=lo"}}, None),
    ("GPU on vfio-pci", "vfio.binding", "vfio_release", {"boot_remove": ["quiet"]}, None),
    ("GPU on vfio-pci", "vfio.binding", "vfio_release",
     {"modprobe": [["/etc/modprobe.d/nvidia.conf", "options nvidia NVreg_EnableGpuFirmware=0"]]}, None),
    ("GPU on vfio-pci", "vfio.binding", "vfio_release", {"os_family": "rhel"}, Fact.OS_FAMILY),
    ("VFIO group for a VM", "vfio.binding", "vfio_group", {"devices": {"0000:3b:00.0": "nvme"}}, Fact.DRIVERS_NOW),
    ("VFIO group for a VM", "vfio.binding", "vfio_group", {"devices": {GPU0: "nvidia"}}, None),
    ("one NIC at MTU 1500", "net.link", "link_mtu", {"mtu": 1500}, None),
    # the manual step names the process's own program, not one an edited result wrote
    ("debug variable, no unit", "runtime.debug_env", "process_restart", {"program": "sshd"}, Fact.PROGRAM),
    # the subject itself: another interface, device or process of the host than the one the check named
    ("sick", "net.link", "link_up", {"netdev": "enp27s0np0"}, None),
    ("sick", "numa.irq_affinity", "irq_affinity", {"netdev": "enp25s0np0"}, None),
    ("sick", "pcie.link_downgrade", "pcie_retrain", {"device": GPU0}, None),
    # a compose file applied as a Kubernetes manifest (kubectl apply -f on the compose file)
    ("sick with a compose file", "runtime.cuda_graphs", "file_patch", {"kind": "manifest"}, Fact.FILE_KIND),
]


@pytest.mark.parametrize("host,check,builder,edit,fact", CASES,
                         ids=[f"{b}-{'-'.join(e)}-{i}" for i, (_, _, b, e, _) in enumerate(CASES)])
def test_an_edited_value_is_refused_and_the_check_s_own_builds(hosts: dict[str, Facts], host: str, check: str,
                                                               builder: str, edit: dict[str, Any], fact: Any) -> None:
    ctx = _ctx(_host(hosts, host), check)
    which = (lambda p: "NCCL_SOCKET_IFNAME" in p["set"]) if builder == "unit_env" else None
    honest = _honest(ctx, builder, which)
    assert build(builder, honest, ctx=ctx).steps
    edited = {**honest, **edit}
    assert edited != honest
    what = RECOMMENDED if fact is None else fact.what
    with pytest.raises(FixRejected, match=re.escape(what)):
        build(builder, edited, ctx=ctx)


def test_only_read_only_choices_are_left_unbound() -> None:
    """A parameter with no fact of its own and no binding to the check's recommendation is one an edited
    result chooses freely: only which counters a read-only diagnostic shows may be."""
    free = sorted((name, key) for name, spec in SPECS.items() for key, p in spec.items()
                  if p.from_ is None and not p.own)
    assert free == [("gpu_query", "query"), ("inspect_pci", "flags")]


def test_a_saved_result_without_the_host_s_facts_is_not_checked_against_them() -> None:
    """Review-only context (a saved result's inventory): the facts are not known, so nothing is refused for
    them; the script made from it runs nothing anyway."""
    ctx = Context.from_inventory({})
    assert build("thp_defrag", {"path": "/" + THP, "value": "madvise", "previous": "never"}, ctx=ctx).steps


@pytest.mark.parametrize("base", ["sick", "sick with deployment files"])
def test_the_checks_own_fixes_all_build_on_the_sick_node(base: str) -> None:
    """Nothing the checks build themselves on the sick fixture is refused by the bindings."""
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    from tests.fixes.test_bound import APISERVER, APISERVER_TEXT, COMPOSE, COMPOSE_TEXT

    host = facts(base=SICK) if base == "sick" else facts({APISERVER: APISERVER_TEXT, COMPOSE: COMPOSE_TEXT}, base=SICK)
    result = run(host)
    script = fix_scripts(to_result(result.to_dict()), host).fix
    assert "# refused" not in script, re.findall(r"^# refused.*$", script, re.MULTILINE)
    assert sum(1 for f in result.findings if f.fix.builder) >= 20


def test_a_fix_script_runs_each_check_once_for_its_own_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a check recommends is asked once per check, not once per finding: a node with thousands of
    findings of one check gets its script in time linear in them."""
    if not SICK.exists():
        pytest.skip("fixture sick not generated yet")
    import reports.fixscript as fixscript

    host = facts(base=SICK)
    result = run(host)
    asked: list[str] = []
    real = fixscript.own_fixes

    def counting(declared: Any, ctx: Context) -> Any:
        asked.append(declared.id)
        return real(declared, ctx)

    monkeypatch.setattr(fixscript, "own_fixes", counting)
    fix_scripts(to_result(result.to_dict()), host)
    assert asked and len(asked) == len(set(asked)), asked
    assert sum(1 for f in result.findings if f.fix.builder) > len(asked)  # several findings of one check
