"""gpu.xid_errors and gpu.row_remap on the HGX fixture with a kernel log or nvidia-smi state overlaid."""

from __future__ import annotations

import re

from doctor.facts import Facts
from doctor.sources import SosreportSource
from doctor.sources.tree import OsTree, OverlayTree
from tests.helpers import HEALTHY, SICK, facts, findings_of

SMI = "commands/nvidia-smi_-q_-x"
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


def _smi(gpu_bus: str, **fields: str) -> str:
    """The healthy fixture's nvidia-smi XML with fields changed inside one GPU's block."""
    text = (HEALTHY / SMI).read_text()
    start = text.index(f'<gpu id="00000000:{gpu_bus.upper()}:00.0">')
    end = text.index("</gpu>", start)
    block = text[start:end]
    for tag, value in fields.items():
        block, n = re.subn(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{value}</{tag}>", block)
        assert n, tag
    return text[:start] + block + text[end:]


# --- gpu.xid_errors ------------------------------------------------------------------------------


def test_xid_79_is_critical_on_the_gpu_with_reset_and_rma_advice() -> None:
    (f,) = findings_of(facts({DMESG: BOOT + XID79 * 3 + LIMITED}), "gpu.xid_errors")
    assert f.severity == "critical" and f.subject == "0000:3a:00.0"
    assert "GPU 2" in f.title and "Xid 79" in f.title
    assert f.evidence[0].source == DMESG and f.evidence[0].value.endswith("GPU has fallen off the bus. (x3)")
    assert any("limited by 8.0 GT/s" in e.value for e in f.evidence)  # probe-time link as extra evidence
    assert f.fix.runtime == ("nvidia-smi -r -i 2",)
    assert "Drain" in f.fix.notes and "RMA" in f.fix.notes and "power-cycle" in f.fix.notes


def test_xid_94_is_high_and_app_fault_13_alone_is_low() -> None:
    (high,) = findings_of(facts({DMESG: BOOT + XID94 + XID13}), "gpu.xid_errors")
    assert high.severity == "high" and high.subject == "0000:9c:00.0" and "GPU 5" in high.title
    assert [e.value.split("): ")[1][:2] for e in high.evidence] == ["94", "13"]  # worst first
    (low,) = findings_of(facts({DMESG: BOOT + XID13}), "gpu.xid_errors")
    assert low.severity == "low" and low.fix.runtime == ()


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


def test_healthy_fixture_stays_quiet_at_low_and_above() -> None:
    for check_id in ("gpu.xid_errors", "gpu.row_remap"):
        found = findings_of(facts(), check_id)
        assert not [x for x in found if x.severity in ("critical", "high", "medium", "low")]


# --- gpu.row_remap -------------------------------------------------------------------------------


def test_row_remap_healthy_fixture_passes() -> None:
    (f,) = findings_of(facts(), "gpu.row_remap")
    assert f.severity == "pass" and "8 GPUs" in f.title


def test_pending_remap_is_high_and_asks_for_a_reset() -> None:
    (f,) = findings_of(facts({SMI: _smi("3a", remapped_row_pending="Yes")}), "gpu.row_remap")
    assert (f.severity, f.subject) == ("high", "0000:3a:00.0") and "GPU 2" in f.title and "Pending" in f.title
    assert f.fix.runtime == ("nvidia-smi -r -i 2",)


def test_remap_failure_is_critical_and_mentions_rma() -> None:
    (f,) = findings_of(facts({SMI: _smi("9c", remapped_row_failure="Yes", remapped_row_pending="Yes")}),
                       "gpu.row_remap")
    assert f.severity == "critical" and f.subject == "0000:9c:00.0" and "RMA" in f.fix.notes
    assert len(f.evidence) == 2


def test_volatile_uncorrectable_ecc_is_high() -> None:
    text = _smi("18").replace("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>4</dram_uncorrectable>", 1)
    (f,) = findings_of(facts({SMI: text}), "gpu.row_remap")
    assert (f.severity, f.subject) == ("high", "0000:18:00.0") and "uncorrectable ECC errors: 4" in f.title


def test_silent_without_row_remapper_data() -> None:
    text = re.sub(r"<remapped_rows>.*?</remapped_rows>", "", (HEALTHY / SMI).read_text(), flags=re.S)
    text = re.sub(r"<ecc_errors>.*?</ecc_errors>", "", text, flags=re.S)
    assert findings_of(facts({SMI: text}), "gpu.row_remap") == []
