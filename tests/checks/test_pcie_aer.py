"""Check pcie.aer (tests moved from test_section10_checks.py)."""

from __future__ import annotations

from tests.checks.pcie_overlays import DSP_GPU3, GPU3, attrs, link, pairs, run_check

COR_ZERO = "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n"
UNC_ZERO = "Undefined 0\nDLP 0\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\nMalfTLP 0\nECRC 0\nUnsupReq 0\nTOTAL_ERR_{k} 0\n"




def _aer(bdf: str, cor: int = 0, nonfatal: int = 0, fatal: int = 0) -> dict:
    return attrs(bdf, aer_dev_correctable=COR_ZERO.replace("BadTLP 0", f"BadTLP {cor}").replace(
                     "TOTAL_ERR_COR 0", f"TOTAL_ERR_COR {cor}").rstrip("\n"),
                 aer_dev_nonfatal=UNC_ZERO.format(k="NONFATAL").replace("DLP 0", f"DLP {nonfatal}").replace(
                     "TOTAL_ERR_NONFATAL 0", f"TOTAL_ERR_NONFATAL {nonfatal}").rstrip("\n"),
                 aer_dev_fatal=UNC_ZERO.format(k="FATAL").replace("MalfTLP 0", f"MalfTLP {fatal}").replace(
                     "TOTAL_ERR_FATAL 0", f"TOTAL_ERR_FATAL {fatal}").rstrip("\n"))


def test_correctable_errors_low_and_medium_with_a_narrow_link() -> None:
    found = run_check(_aer(GPU3, cor=12), "pcie.aer")
    assert pairs(found) == [("GPU 3 (0000:3c:00.0)", "low")]
    assert "12 correctable" in found[0].title and "firmware-first" in found[0].detail
    narrow = run_check({**_aer(GPU3, cor=12), **link(GPU3, width=8)}, "pcie.aer")
    assert pairs(narrow) == [("GPU 3 (0000:3c:00.0)", "medium")]
    assert "downgraded" in narrow[0].title


def test_uncorrectable_error_on_the_switch_port_above_a_gpu_is_high() -> None:
    found = run_check({**_aer(GPU3), **_aer(DSP_GPU3, nonfatal=2)}, "pcie.aer")
    assert pairs(found) == [(DSP_GPU3, "high")]
    assert "GPU 3" in found[0].detail and "2 nonfatal" in found[0].title
    assert f"lspci -vvv -s {DSP_GPU3}" in found[0].fix.notes


def test_zero_counters_pass_and_vm_is_silent() -> None:
    assert pairs(run_check(_aer(GPU3), "pcie.aer")) == [("node", "pass")]
    vm = {**_aer(GPU3, fatal=1), "sys/class/dmi/id/sys_vendor": "QEMU\n"}
    assert run_check(vm, "pcie.aer") == []
