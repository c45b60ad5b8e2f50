"""NVIDIA's Xid catalogue as data (doctor/xid_catalog.py) and the grades gpu.xid_errors takes from it."""

from __future__ import annotations

import pytest

from checks.gpu_xid_errors import BUCKET_GRADE, XID_TABLE
from doctor.xid_catalog import CATALOGUE, LAST_CODE, entry
from tests.helpers import facts, findings_of

BOOT = "[    5.391045] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  595.45.04  Fri May 31 09:35:42 UTC 2026\n"
#: Buckets the catalogue uses (immediate action); "" where it publishes none yet
KNOWN_BUCKETS = set(BUCKET_GRADE) | {"IGNORE", "CONTACT_SUPPORT", "WORKFLOW_XID_45", "XID_154", ""}


def test_every_code_through_the_current_branch_is_in_the_table() -> None:
    assert LAST_CODE >= 176 and sorted(CATALOGUE) == list(range(1, LAST_CODE + 1))
    assert {e.immediate for e in CATALOGUE.values()} <= KNOWN_BUCKETS
    assert entry(LAST_CODE + 1) is None and entry(0) is None


@pytest.mark.parametrize(("code", "bucket", "fatal"), [
    (79, "RESTART_BM", True), (143, "RESET_GPU", True), (154, "XID_154", False), (45, "WORKFLOW_XID_45", False),
    (13, "RESTART_APP", False), (63, "IGNORE", False), (151, "RESTART_VM", True), (149, "WORKFLOW_NVLINK5_ERR", False),
    (158, "RESET_GPU", True)])
def test_published_resolution_and_fatality(code: int, bucket: str, fatal: bool) -> None:
    e = entry(code)
    assert e is not None and e.immediate == bucket and e.fatal is fatal


def _one(code: int) -> tuple[str, str]:
    line = f"[1843.3] NVRM: Xid (PCI:0000:9c:00): {code}, pid=1234, name=python3, message\n"
    (f,) = findings_of(facts({"commands/dmesg": BOOT + line}), "gpu.xid_errors")
    return f.severity, f.title


@pytest.mark.parametrize(("code", "severity", "words"), [
    (46, "high", "RESET_GPU"),  # GPU stopped processing: not in the curated table, graded by the catalogue
    (109, "high", "RESET_GPU"),  # context-switch timeout
    (41, "low", "RESTART_APP"),  # copy engine exception: the application's fault
    (56, "info", "Unused"),  # display channel exception (a display GPU's log): no action for compute
    (160, "info", "IGNORE"),
    (171, "high", "uncorrectable DRAM"),  # no published resolution yet: graded by meaning
    (200, "info", "newer driver"),  # beyond the table: reported, never an alarm
])
def test_codes_outside_the_curated_table_take_the_catalogue_grade(code: int, severity: str, words: str) -> None:
    got, title = _one(code)
    assert got == severity and words in title and f"Xid {code}" in title


def test_curated_grades_win_over_the_bucket() -> None:
    assert _one(45)[0] == "info"  # WORKFLOW_XID_45: a symptom, context decides
    assert _one(94)[0] == XID_TABLE[94][0] == "high"
    assert _one(13)[0] == "low" and _one(79)[0] == "critical"


def _nvlink(xid: int, words: str, times: int = 1) -> object:
    line = f"[9.0] NVRM: Xid (PCI:0000:3a:00): {xid}, UNIT Fatal XC0 i0 Link 04 ({words} 0x00000000 0x00000000)\n"
    (f,) = findings_of(facts({"commands/dmesg": BOOT + line * times}), "gpu.xid_errors")
    return f


def test_xid_144_to_150_are_graded_by_the_decode_sheet() -> None:
    # NETIR_LINK_EVT link down, subcode 4: NVIDIA resolves RESET_GPU (link signal integrity to investigate)
    f = _nvlink(149, "0x004505c6 0x00000000", 3)
    assert f.severity == "high" and "NETIR_LINK_EVT/NETIR_LINK_DOWN status 0x00000000 (Link Fatal, RESET_GPU) x3" \
        in f.detail
    # the same unit, subcode 0x26: link fatal, but NVIDIA's immediate action is IGNORE (software/user side)
    assert _nvlink(149, "0x026505c6 0x00000000").severity == "medium"
    # NETIR bit-error-rate event: non-fatal, IGNORE (cables to look at): low, not a reset
    f = _nvlink(149, "0x00000226 0x00000001")
    assert f.severity == "low" and "NETIR_BER_EVENT" in f.detail and f.fix.runtime == ()
    # SAW_MVB error status 0x2 is fatal (RESET_GPU); 0x1 non-fatal
    assert _nvlink(144, "0x00000021 0x00000002").severity == "high"
    assert _nvlink(144, "0x00000021 0x00000001").severity == "low"


def test_a_combination_the_sheet_does_not_list_keeps_the_code_grade() -> None:
    f = _nvlink(149, "0x3f0003ff 0x00001234")
    assert f.severity == "high" and "decode" not in f.detail
    # a line with only one interrupt word cannot be decoded either
    line = "[9.0] NVRM: Xid (PCI:0000:3a:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 04 (0x004505c6)\n"
    (g,) = findings_of(facts({"commands/dmesg": BOOT + line}), "gpu.xid_errors")
    assert g.severity == "high"


@pytest.mark.parametrize(("value", "action", "severity"), [
    ("0x6 (Bus Reset Required)", "bus_reset", "high"), ("0x7 (System Reboot Required)", "system_reboot", "critical"),
    ("0x5 (Recover IMEX Domain)", "recover_imex_domain", "medium"), ("0x9 (Something New)", "unknown:0x9", "high")])
def test_xid_154_knows_the_newer_nvml_recovery_actions(value: str, action: str, severity: str) -> None:
    line = f"[9.0] NVRM: Xid (PCI:0000:9c:00): 154, GPU recovery action changed from 0x0 (None) to {value}\n"
    (f,) = findings_of(facts({"commands/dmesg": BOOT + line}), "gpu.xid_errors")
    assert f.observed == f"Xid 154 x1, recovery action {action}" and f.severity == severity
    if action == "recover_imex_domain":
        assert not f.fix.builder and "nvidia-imex" in f.fix.notes
    if action == "system_reboot":
        assert not f.fix.builder and "reboot" in f.fix.notes
