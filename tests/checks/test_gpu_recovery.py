"""gpu.recovery (the driver's recovery action) and gpu.unreachable (GPUs on the bus the driver cannot reach),
on recorded nvidia-smi outputs overlaid on the HGX fixture, real recordings and an NVML stand-in."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import pytest

from doctor.facts.nvml import nvml_report
from doctor.findings import CRITICAL, HIGH, MEDIUM, PASS, UNKNOWN
from tests.checks.smi_overlay import GPUS, SMI
from tests.facts.test_nvml import fake_nvml
from tests.helpers import HEALTHY, facts, findings_of

ROOT = Path(__file__).resolve().parents[2]
REALWORLD = ROOT / "tests" / "realworld" / "cases"
H200_TEXT = ROOT / "tests" / "realgpu" / "h200-text"
H200_VM = ROOT / "fixtures" / "real-h200-vm"
XML = (HEALTHY / SMI).read_text()


def _block(text: str, index: int) -> tuple[int, int]:
    start = text.index(f'<gpu id="00000000:{GPUS[index][5:7].upper()}:00.0">')
    return start, text.index("</gpu>", start) + len("</gpu>")


def with_action(actions: dict[int, str], text: str = XML) -> str:
    """Add ``<gpu_recovery_action>`` (as R565+ drivers print it) to GPUs of the healthy XML (driver 550)."""
    for index, action in actions.items():
        start, end = _block(text, index)
        block = text[start:end].replace("<gsp_firmware_version>",
                                        f"<gpu_recovery_action>{action}</gpu_recovery_action>\n\t\t<gsp_firmware_version>")
        text = text[:start] + block + text[end:]
    return text


def recovery(changes: dict[str, Any], base: Path = HEALTHY) -> list[Any]:
    return findings_of(facts(changes, base=base), "gpu.recovery")


def unreachable(changes: dict[str, Any], base: Path = HEALTHY) -> list[Any]:
    return findings_of(facts(changes, base=base), "gpu.unreachable")


def test_healthy_datacentre_gpus_with_reset_status_no_pass() -> None:
    found = recovery({})  # driver 550: GPU Reset Status, Reset Required: No, Drain and Reset Recommended: No
    assert [(f.severity, f.observed) for f in found] == [(PASS, "none")]
    assert "8 GPUs" in found[0].title


@pytest.mark.parametrize(("action", "severity", "word"), [
    ("Reset", HIGH, "reset"),
    ("Drain and Reset", HIGH, "drain_and_reset"),
    ("Reboot", CRITICAL, "reboot"),
    ("Drain P2P", MEDIUM, "drain_p2p"),
])
def test_pending_recovery_action_is_a_finding_with_the_action_as_data(action: str, severity: str, word: str) -> None:
    found = recovery({SMI: with_action({i: "None" for i in range(8)} | {3: action})})
    assert [(f.severity, f.subject, f.observed) for f in found] == [(severity, GPUS[3], word)]
    f = found[0]
    assert f.title.startswith(f"GPU 3 ({GPUS[3]}) needs")
    assert f.evidence[0].value == f"GPU 3 ({GPUS[3]}): GPU Recovery Action: {action}"
    steps = [" ".join(s.argv) for s in f.fix.steps]
    if word in ("reset", "drain_and_reset"):
        assert steps == ["nvidia-smi -r -i 3"] and f.fix.builder == "gpu_reset"
        assert "Drain the GPU first" in f.fix.notes
    else:  # a reboot or a drain is advice: no command to run
        assert steps == []
        assert ("reboot" in f.fix.notes) == (word == "reboot")


def test_old_reset_status_fields_say_reset_required() -> None:
    start, end = _block(XML, 5)
    block = XML[start:end].replace("<reset_required>No</reset_required>", "<reset_required>Yes</reset_required>")
    found = recovery({SMI: XML[:start] + block + XML[end:]})
    assert [(f.severity, f.subject, f.observed) for f in found] == [(HIGH, GPUS[5], "reset")]
    assert "Reset Required: Yes" in found[0].evidence[0].value


def test_driver_without_the_field_is_unknown_and_says_so() -> None:
    old = re.sub(r"\s*<gpu_reset_status>.*?</gpu_reset_status>", "", XML, flags=re.DOTALL)
    found = recovery({SMI: old})
    assert [(f.severity, f.subject) for f in found] == [(UNKNOWN, "node")]
    assert "driver 550.90.07" in found[0].detail and "older drivers" in found[0].detail


def test_unrecognised_action_is_unknown_not_pass() -> None:
    found = recovery({SMI: with_action({i: "None" for i in range(8)} | {0: "Recalibrate Flux"})})
    assert [(f.severity, f.subject) for f in found] == [(UNKNOWN, GPUS[0])]


def test_real_h200_text_with_deprecated_reset_status_and_action_none_passes() -> None:
    found = recovery({}, base=H200_TEXT)  # R580 sosreport: "Requested functionality has been deprecated" + None
    assert [(f.severity, f.observed) for f in found] == [(PASS, "none")]


def test_vm_with_a_passthrough_gpu_passes() -> None:
    assert [f.severity for f in recovery({}, base=H200_VM)] == [PASS]
    assert [f.severity for f in unreachable({}, base=H200_VM)] == [PASS]


def test_consumer_card_reset_pending_warns_that_geforce_may_refuse_the_reset() -> None:
    base = REALWORLD / "telegraf-3090-v13"
    assert [f.severity for f in recovery({}, base=base)] == [PASS]
    text = (base / SMI).read_text().replace("<gpu_recovery_action>None<", "<gpu_recovery_action>Reset<")
    found = recovery({SMI: text}, base=base)
    assert [(f.severity, f.observed) for f in found] == [(HIGH, "reset")]
    assert "GeForce boards may refuse" in found[0].fix.notes


def test_node_without_gpus_has_no_finding() -> None:
    assert recovery({}, base=REALWORLD / "hotsos-vault-sos") == []
    assert unreachable({}, base=REALWORLD / "hotsos-vault-sos") == []


def test_nvml_recovery_field_and_the_deprecated_fallback() -> None:
    def values(by_field: dict[int, int]) -> Any:
        def get(handle: Any, ids: list[int]) -> list[Any]:
            fid = ids[0]
            ret = 0 if fid in by_field else 3  # NVML_ERROR_NOT_SUPPORTED
            return [types.SimpleNamespace(nvmlReturn=ret, valueType=1,
                                          value=types.SimpleNamespace(uiVal=by_field.get(fid, 0)))]
        return get

    nvml = fake_nvml()
    nvml.NVML_FI_DEV_RESET_STATUS, nvml.NVML_FI_DEV_DRAIN_AND_RESET_STATUS = 226, 227
    nvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230
    nvml.nvmlDeviceGetFieldValues = values({230: 2})
    report, _ = nvml_report(nvml)
    assert report is not None and [g.recovery_action for g in report.gpus] == ["reboot", "reboot"]
    assert report.gpus[0].recovery_text == "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 2"
    nvml.nvmlDeviceGetFieldValues = values({226: 1, 227: 0})  # a driver without field 230
    report, _ = nvml_report(nvml)
    assert report is not None and report.gpus[0].recovery_action == "reset"
    del nvml.nvmlDeviceGetFieldValues  # an old pynvml
    report, _ = nvml_report(nvml)
    assert report is not None and report.gpus[0].recovery_action is None


# ----------------------------------------------------------------------------------------- gpu.unreachable

def _without(index: int, text: str = XML) -> str:
    start, end = _block(text, index)
    return text[:start] + text[end:]


XID45 = "".join(f"[ {1000 + i}.5] NVRM: Xid (PCI:0000:18:00): 45, pid=77{i % 9}, name=python3, Ch 00000010\n"
                for i in range(3000))


def test_gpu_nvidia_smi_cannot_open_with_thousands_of_xid_45_is_critical() -> None:
    handle = "Unable to determine the device handle for GPU0000:18:00.0: Unknown Error"
    found = unreachable({SMI: handle + "\n" + _without(0), "commands/dmesg": XID45})
    assert [(f.severity, f.subject) for f in found] == [(CRITICAL, GPUS[0])]
    values = [e.value for e in found[0].evidence]
    assert values[0] == handle
    assert "Xid 45 x3000" in values and any("driver nvidia" in v for v in values)


def test_gpu_the_driver_never_brings_up_is_critical_and_xid_143_is_in_the_table() -> None:
    dmesg = ("[   12.301] NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x25:0x40:1470)\n"
             "[   12.302] NVRM: GPU 0000:18:00.0: rm_init_adapter failed, device minor number 0\n" * 2
             + "[   12.303] NVRM: Xid (PCI:0000:18:00): 143, pid='<unknown>', name=<unknown>, GPU Init Error\n")
    f = facts({SMI: "No devices were found\n", "commands/dmesg": dmesg})
    found = findings_of(f, "gpu.unreachable")
    assert {x.severity for x in found} == {CRITICAL} and {x.subject for x in found} == set(GPUS)
    first = next(x for x in found if x.subject == GPUS[0])
    values = [e.value for e in first.evidence]
    assert "NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x25:0x40:1470) (x2)" in values
    assert "No devices were found" in values and "Xid 143 x1" in values
    other = next(x for x in found if x.subject == GPUS[1])
    assert other.observed == "No devices were found"
    xid = findings_of(f, "gpu.xid_errors")
    assert [(x.severity, x.subject) for x in xid] == [(CRITICAL, GPUS[0])]
    assert "GPU initialization failure" in xid[0].title


def test_gpu_missing_from_the_list_while_bound_to_nvidia_is_critical() -> None:
    found = unreachable({SMI: _without(2)})
    assert [(f.severity, f.subject, f.observed) for f in found] == [(CRITICAL, GPUS[2], "not listed by nvidia-smi")]


def test_gpu_bound_to_vfio_is_not_expected_to_answer() -> None:
    from tests.helpers import Link
    found = unreachable({SMI: _without(2), f"sys/bus/pci/devices/{GPUS[2]}/driver":
                         Link("../../../../../../bus/pci/drivers/vfio-pci")})
    assert [f.severity for f in found] == [PASS]


def test_healthy_node_passes_and_an_old_failure_line_of_a_working_gpu_is_history() -> None:
    dmesg = "[ 5.1] NVRM: GPU 0000:18:00.0: RmInitAdapter failed! (0x25:0x40:1470)\n"
    assert [f.severity for f in unreachable({"commands/dmesg": dmesg})] == [PASS]
