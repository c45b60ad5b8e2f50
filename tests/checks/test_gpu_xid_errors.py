"""Check gpu.xid_errors (tests moved from test_gpu_health_checks.py)."""

from __future__ import annotations

from doctor.facts import Facts
from doctor.sources import SosreportSource
from doctor.sources.tree import OsTree, OverlayTree
from tests.helpers import HEALTHY, SICK, facts, findings_of

DMESG = "commands/dmesg"
BOOT = ("[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) #45-Ubuntu SMP PREEMPT_DYNAMIC\n"
        "[    5.391045] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n")
# GPU 2 of the fixture is 0000:3a:00.0, GPU 5 is 0000:9c:00.0; Xid addresses lack the function.
XID79 = "[ 1843.308145] NVRM: Xid (PCI:0000:3a:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n"
XID94 = "[ 2001.000001] NVRM: Xid (PCI:0000:9c:00): 94, pid=4242, name=python3, Contained ECC error\n"
XID13 = ("[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:9c:00): 13, pid='<unknown>', name=<unknown>, Graphics SM "
         "Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter\n")
LIMITED = ("[    3.112233] pci 0000:3a:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link "
           "at 0000:38:00.0 (capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)\n")


def test_xid_79_is_critical_on_the_gpu_with_reset_and_rma_advice() -> None:
    (f,) = findings_of(facts({DMESG: BOOT + XID79 * 3 + LIMITED}), "gpu.xid_errors")
    assert f.severity == "critical" and f.subject == "0000:3a:00.0"
    assert "GPU 2" in f.title and "Xid 79" in f.title
    assert f.evidence[0].source == DMESG and f.evidence[0].value.endswith("GPU has fallen off the bus. (x3)")
    assert any("limited by 8.0 GT/s" in e.value for e in f.evidence)  # probe-time link as extra evidence
    assert f.fix.runtime == ("nvidia-smi -r -i 2",)
    assert "Drain" in f.fix.notes and "RMA" in f.fix.notes and "power-cycle" in f.fix.notes


def test_xid_94_is_high_and_app_fault_13_alone_is_low() -> None:
    high, low13 = findings_of(facts({DMESG: BOOT + XID94 + XID13}), "gpu.xid_errors")  # one per GPU and code
    assert high.severity == "high" and high.subject == "0000:9c:00.0" and "GPU 5" in high.title
    assert "Xid 94" in high.title and [e.value.split("): ")[1][:2] for e in high.evidence] == ["94"]
    assert low13.severity == "low" and "Xid 13" in low13.title and low13.subject == "0000:9c:00.0"
    (low,) = findings_of(facts({DMESG: BOOT + XID13}), "gpu.xid_errors")
    assert low.severity == "low" and low.fix.runtime == ()
    # who acts: an ECC fault is the GPU's (its vendor's), an application fault the workload's
    assert (high.acts, low13.acts) == ("hardware", "application")


def test_one_finding_per_gpu_and_evidence_capped_at_five() -> None:
    lines = "".join(f"[{i}.0] NVRM: Xid (PCI:0000:9c:00): 31, Ch 0000000{i}, intr 10000000\n" for i in range(8))
    found = findings_of(facts({DMESG: BOOT + XID79 + lines}), "gpu.xid_errors")
    assert [(x.subject, x.severity) for x in found] == [("0000:3a:00.0", "critical"), ("0000:9c:00.0", "low")]
    assert len(found[1].evidence) == 5 and "3 more distinct" in found[1].detail


def test_clean_log_passes() -> None:
    (f,) = findings_of(facts({DMESG: BOOT + LIMITED}), "gpu.xid_errors")
    assert f.severity == "pass" and "8 GPUs" in f.title


def test_committed_fixtures_have_no_dmesg_so_the_check_is_unknown() -> None:
    for base in (HEALTHY, SICK):
        (f,) = findings_of(facts(base=base), "gpu.xid_errors")
        assert f.severity == "unknown" and "commands/dmesg" in f.evidence[0].value


def test_sosreport_dmesg_path_is_read() -> None:
    tree = OverlayTree(OsTree(str(HEALTHY)), {"sos_commands/kernel/dmesg": BOOT + XID79})
    (f,) = findings_of(Facts(SosreportSource(tree, "<sos>")), "gpu.xid_errors")
    assert f.severity == "critical" and f.evidence[0].source == "sos_commands/kernel/dmesg"


def test_thousands_of_lines_are_one_finding_per_gpu_and_code_with_count_and_first_and_last_time() -> None:
    lines = "".join(f"[{1000 + i}.5] NVRM: Xid (PCI:0000:9c:00): 31, pid={i}, Ch 0000000{i % 9}, intr 10000000\n"
                    for i in range(20000))
    found = findings_of(facts({DMESG: BOOT + XID79 + lines + XID79}), "gpu.xid_errors")
    assert [(x.subject, x.severity, x.observed) for x in found] == [
        ("0000:3a:00.0", "critical", "Xid 79 x2"), ("0000:9c:00.0", "low", "Xid 31 x20000")]
    assert "first at [1000.5], last at [20999.5]" in found[1].detail
    assert len(found[1].evidence) == 5 and "more distinct" in found[1].detail


def test_xid_lines_naming_a_bridge_a_nic_or_no_device_are_one_node_finding_without_a_gpu_reset() -> None:
    other = ("[5.0] NVRM: Xid (PCI:0000:00:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
             "[6.0] NVRM: Xid (PCI:0000:19:00): 48, pid=1, name=x, DBE\n"
             "[7.0] NVRM: Xid (PCI:0000:ee:00): 94, pid=1, name=x, Contained ECC error\n") * 300
    (f,) = findings_of(facts({DMESG: BOOT + other}), "gpu.xid_errors")
    assert f.subject == "node" and f.severity == "medium" and not f.fix.builder and not f.fix.runtime
    assert "900 Xid line(s)" in f.title and "3 address(es)" in f.title
    assert "0000:00:00.0" in f.detail and "0000:19:00.0" in f.detail and "on no bus" in f.detail
    assert "GPU" not in f.title.replace("no GPU", "")


def test_xid_154_recovery_text_is_the_action() -> None:
    reset = "[9.0] NVRM: Xid (PCI:0000:3a:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"
    (f,) = findings_of(facts({DMESG: BOOT + reset}), "gpu.xid_errors")
    assert f.severity == "high" and f.observed == "Xid 154 x1, recovery action reset" and f.fix.builder == "gpu_reset"
    reboot = reset.replace("0x1 (GPU Reset Required)", "0x2 (Node Reboot Required)")
    (g,) = findings_of(facts({DMESG: BOOT + reset + reboot}), "gpu.xid_errors")
    assert g.severity == "critical" and g.observed.endswith("recovery action reboot") and not g.fix.builder
    assert "reboot" in g.fix.notes


def test_xid_144_to_150_keep_unit_and_subcode() -> None:
    line = ("[9.0] NVRM: Xid (PCI:0000:3a:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 04 "
            "(0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n")
    (f,) = findings_of(facts({DMESG: BOOT + line * 3}), "gpu.xid_errors")
    assert "NETIR_LINK_EVT/4 x3" in f.detail and f.severity == "high"
