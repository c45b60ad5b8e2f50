"""The TUI's plain-data logic: filters, the re-run diff, copied text, device matching and link health."""

from __future__ import annotations

from doctor.findings import CRITICAL, HIGH, INFO, LOW, PASS, Evidence, Finding, Fix
from doctor.tui.model import (
    CATEGORY_FILTERS,
    SEVERITY_FILTERS,
    about_device,
    clean,
    diff_runs,
    filter_findings,
    fix_script,
)
from doctor.tui.topology import BAD, IDLE, OK, build_topology, link_state, walk


def f(sev: str, check: str, subject: str, category: str = "pcie", **kw: object) -> Finding:
    return Finding(severity=sev, subject=subject, title=f"{check} on {subject}", check=check,
                   category=category, **kw)  # type: ignore[arg-type]


def test_filters_by_severity_and_area() -> None:
    items = [f(CRITICAL, "a", "x"), f(HIGH, "b", "y", "iommu"), f(LOW, "c", "z", "network"), f(PASS, "d", "w")]
    assert [x.check for x in filter_findings(items)] == ["a", "b", "c"]  # passes hidden by default
    high = [label for label, _ in SEVERITY_FILTERS].index(HIGH)
    assert [x.check for x in filter_findings(items, severity=high)] == ["b"]
    pcie = [label for label, _ in CATEGORY_FILTERS].index("PCIe")
    assert [x.check for x in filter_findings(items, category=pcie)] == ["a", "b"]  # iommu counts as PCIe


def test_diff_keys_on_check_and_subject_and_ignores_passes() -> None:
    before = [f(HIGH, "pcie.link", "GPU 5"), f(LOW, "numa.x", "n"), f(HIGH, "net.y", "eth0"), f(INFO, "gpu.i", "node")]
    after = [f(PASS, "pcie.link", "GPU 5"), f(LOW, "numa.x", "n"), f(CRITICAL, "net.y", "eth0"),
             f(HIGH, "rdma.z", "mlx5_0/1"), f(INFO, "gpu.i", "node")]
    d = diff_runs(before, after)
    assert [x.subject for x in d.fixed] == ["GPU 5"]
    assert [x.subject for x in d.new] == ["mlx5_0/1"]
    assert [(a.severity, b.severity) for a, b in d.changed] == [(HIGH, CRITICAL)]
    assert [x.check for x in d.unchanged] == ["numa.x", "gpu.i"]  # info is compared too (doctor/diff.py rule)
    assert d.summary == "1 fixed, 1 new, 1 changed, 2 unchanged"


def test_diff_info_that_became_a_problem_is_changed_not_new() -> None:
    d = diff_runs([f(INFO, "nccl.t", "IFNAME")], [f(HIGH, "nccl.t", "IFNAME")])
    assert (d.new, [(a.severity, b.severity) for a, b in d.changed]) == ((), [(INFO, HIGH)])


def test_fix_script_has_runtime_then_persistent_and_no_control_characters() -> None:
    finding = f(HIGH, "net.b", "tcp", fix=Fix.from_text(runtime=("sysctl -w a=1",),
                                                       persistent=("printf %s 'a = 1\n' > /etc/x",),
                                                       rollback=("sysctl -w a=0",)))
    text = fix_script(finding)
    assert text.index("sysctl -w a=1") < text.index("# make it survive a reboot:") < text.index("printf")
    assert "a=0" not in text  # the rollback is shown, not copied
    assert fix_script(f(HIGH, "x", "y")) == ""
    assert clean("a\x1b[31mb") == "a\ufffd[31mb"


def test_device_findings_prefer_those_naming_it() -> None:
    subj = f(HIGH, "pcie.link", "GPU 5 (0000:9c:00.0)")
    ev = f(CRITICAL, "runtime.env", "4242", evidence=(Evidence("sys/bus/pci/devices/0000:9c:00.0/x", "1"),))
    other = f(HIGH, "pcie.link", "GPU 3 (0000:3c:00.0)")
    near = f(HIGH, "rdma.gid", "mlx5_10/1")
    assert about_device([ev, subj, other, near], ["0000:9c:00.0", "mlx5_1"]) == [subj, ev]


def dev(addr: str, parent: str | None, cur: tuple[float, int], mx: tuple[float, int], **kw: object) -> dict[str, object]:
    return {"address": addr, "parent": parent, "cur_speed": cur[0], "cur_width": cur[1], "max_speed": mx[0],
            "max_width": mx[1], "numa_node": 0, **kw}


def test_a_link_is_bad_only_below_what_both_ends_support() -> None:
    root = dev("0000:26:01.0", None, (8.0, 8), (32.0, 8))
    x710 = dev("0000:27:00.0", "0000:26:01.0", (8.0, 8), (8.0, 8))  # Gen3 card in a Gen5 slot: fine
    assert link_state(x710, root)[0] == OK
    narrow = dev("0000:3c:00.0", "p", (32.0, 8), (32.0, 16))
    assert link_state(narrow, dev("p", None, (32.0, 16), (32.0, 16))) == (BAD, "Gen5 x8 of Gen5 x16")
    slow = dev("0000:9c:00.0", "p", (2.5, 16), (32.0, 16))
    assert link_state(slow, dev("p", None, (32.0, 16), (32.0, 16)), gpu_idle=True)[0] == IDLE
    assert link_state(slow, dev("p", None, (32.0, 16), (32.0, 16)), gpu_idle=False)[0] == BAD


def test_topology_groups_by_numa_and_folds_downstream_ports() -> None:
    inv = {"numa": [{"id": 0, "cpulist": "0-47"}, {"id": 1, "cpulist": "48-95"}],
           "gpus": [{"index": 5, "address": "0000:9c:00.0", "activity": "busy"}],
           "nics": [{"address": "0000:9d:00.0", "netdevs": ["enp157s0np0"], "rdma": ["mlx5_5/1"]}],
           "topology": [
               dev("0000:97:01.0", None, (32.0, 16), (32.0, 16), port_type="Root Port", numa_node=1),
               dev("0000:98:00.0", "0000:97:01.0", (32.0, 16), (32.0, 16), port_type="Upstream Port", numa_node=1),
               dev("0000:99:02.0", "0000:98:00.0", (2.5, 16), (32.0, 16), port_type="Downstream Port", numa_node=1),
               dev("0000:9c:00.0", "0000:99:02.0", (2.5, 16), (32.0, 16), kind="gpu", numa_node=1),
               dev("0000:99:03.0", "0000:98:00.0", (32.0, 16), (32.0, 16), port_type="Downstream Port", numa_node=1),
               dev("0000:9d:00.0", "0000:99:03.0", (32.0, 16), (32.0, 16), kind="nic", numa_node=1)]}
    numa0, numa1 = build_topology(inv)
    assert numa0.children == [] and numa1.head == "NUMA 1"
    [root] = numa1.children
    [switch] = root.children
    assert switch.kind == "switch"
    gpu, nic = switch.children  # downstream ports folded away
    assert gpu.head.startswith("GPU 5") and gpu.link == BAD
    assert nic.names == ("0000:9d:00.0", "enp157s0np0", "mlx5_5")
    assert len(walk([numa0, numa1])) == 6
    assert build_topology({}) == []
