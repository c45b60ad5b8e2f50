"""gpu.nvlink: inactive links, slow links and error counters, on outputs generated like nvidia-smi's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fixtures.tools.make_node import HEALTHY as SPEC
from tests.checks import unseen_nodes as u
from tests.checks.smi_overlay import generated
from tests.helpers import HEALTHY, SICK, facts, findings_of

CHECK = "gpu.nvlink"
STATUS = "commands/nvidia-smi_nvlink_-s"
ALL_INACTIVE = ("GPU 0: NVIDIA RTX A6000 (UUID: GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3)\n"
                "NVML: Unable to retrieve NVLink information as all links are inActive\n")


def test_healthy_passes() -> None:
    (f,) = findings_of(facts(), CHECK)
    assert f.severity == "pass" and "18 NVLinks each at 26.562 GB/s" in f.title


def test_inactive_links_are_high_on_the_right_gpu() -> None:
    (f,) = findings_of(generated(replace(SPEC, nvlink_inactive={5: (2, 11)})), CHECK)
    assert f.severity == "high" and f.subject == "GPU 5 (0000:9c:00.0)" and f.title == "2 of 18 NVLinks inactive"
    assert "links 2, 11" in f.evidence[0].value and f.fix.runtime == ("nvidia-smi nvlink -s -i 5",)


def test_gpu_with_every_link_down_among_linked_peers_is_high() -> None:
    text = (HEALTHY / STATUS).read_text()
    start = text.index("GPU 7:")
    (f,) = findings_of(facts({STATUS: text[:start] + ALL_INACTIVE.replace("GPU 0", "GPU 7")}), CHECK)
    assert f.severity == "high" and f.title == "18 of 18 NVLinks inactive" and f.subject.startswith("GPU 7")


def test_slow_link_is_medium() -> None:
    text = (HEALTHY / STATUS).read_text().replace("Link 4: 26.562 GB/s", "Link 4: 13.281 GB/s", 1)
    (f,) = findings_of(facts({STATUS: text}), CHECK)
    assert f.severity == "medium" and f.subject.startswith("GPU 0") and "link 4 13.281" in f.evidence[0].value


@pytest.mark.parametrize(("counts", "severity"), [((12, 0, 0), "low"), ((0, 1, 0), "medium"),
                                                  ((2_000, 0, 0), "medium"), ((150_000, 0, 9), "high")])
def test_error_counters_graded_with_one_sample_caveat(counts: tuple[int, int, int], severity: str) -> None:
    (f,) = findings_of(generated(replace(SPEC, nvlink_errors={1: counts})), CHECK)
    assert f.severity == severity and f.subject.startswith("GPU 1") and "one sample" in f.detail
    assert f"{counts[0]} replay, {counts[1]} recovery, {counts[2]} CRC" in f.title


def test_pcie_only_gpus_are_quiet() -> None:
    assert findings_of(facts({STATUS: ALL_INACTIVE}, base=None), CHECK) == []
    assert findings_of(u.l40s().facts(), CHECK) == []


def test_missing_output_on_an_nvswitch_system_is_unknown() -> None:
    (f,) = findings_of(facts({STATUS: None}), CHECK)
    assert f.severity == "unknown" and "not in this snapshot" in f.evidence[0].value


def test_sick_fixture_flags_gpu5_link_7() -> None:
    (f,) = findings_of(facts(base=SICK), CHECK)
    assert (f.severity, f.subject, f.title) == ("high", "GPU 5 (0000:9c:00.0)", "1 of 18 NVLinks inactive")


def test_empty_nvlink_output_is_quiet_even_with_nvswitches() -> None:
    # empty output (exit 0) is what nvidia-smi prints when no link exists: recorded, not missing
    assert findings_of(facts({STATUS: "", "commands/nvidia-smi_nvlink_-e": ""}), CHECK) == []


# Real `nvidia-smi nvlink -s` of an Azure NDv2 (Azure/azhpc-diagnostics Linux/test/samples/nvlink.bad.out, MIT):
# GPU 7 has dropped off and the four peers wired to it lost those links. Trimmed to two of its seven GPUs.
NDV2 = ("GPU 0: Tesla V100-SXM2-32GB (UUID: GPU-b45d9bdf-1feb-0bd0-c8c5-9d833071005d)\n"
        + "".join(f"         Link {i}: 25.781 GB/s\n" for i in range(6))
        + "GPU 3: Tesla V100-SXM2-32GB (UUID: GPU-50b1bd2e-77ee-2731-fd2f-17c44103b7b9)\n"
        "         Link 0: 25.781 GB/s\n         Link 1: 25.781 GB/s\n         Link 2: 25.781 GB/s\n"
        "         Link 3: <inactive>\n         Link 4: 25.781 GB/s\n         Link 5: <inactive>")


def test_recording_with_nvlink_status_but_no_pci_view_is_still_read() -> None:
    """A sosreport trimmed to the nvidia plugin has no GPU in sysfs or lspci: the recorded links still count."""
    (f,) = findings_of(facts({STATUS: NDV2}, base=None), CHECK)
    assert f.severity == "high" and f.subject == "GPU 3" and f.title == "2 of 6 NVLinks inactive"
    assert "links 3, 5" in f.evidence[0].value


def test_live_host_without_gpus_does_not_read_nvlink(monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.facts import Facts
    from doctor.sources import LiveSource

    src = LiveSource("/nonexistent-root", run_commands=True)
    real = src.command
    monkeypatch.setattr(src, "command", lambda name: pytest.fail(f"ran {name} on a host without GPUs")
                        if name.startswith("nvlink") else real(name))
    assert findings_of(Facts(src), CHECK) == []


# Real `nvidia-smi nvlink -s -i 6` of an Azure ND A100 v4 (Azure/azurehpc-health-checks test/data/bad_nvlink_status.txt
# at 85922ba, MIT): one SXM4 GPU alone in the output, every link down.
SXM_ALL_INACTIVE = ("GPU 6: NVIDIA A100-SXM4-80GB (UUID: GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44)\n"
                    "NVML: Unable to retrieve NVLink information as all links are inActive\n")


def test_sxm_gpu_with_every_link_down_is_high_without_peers() -> None:
    (f,) = findings_of(facts({STATUS: SXM_ALL_INACTIVE}, base=None), CHECK)
    assert f.severity == "high" and f.subject == "GPU 6" and "all NVLinks inactive" in f.title
    assert f.fix.runtime == ("nvidia-smi nvlink -s -i 6",)


def test_pcie_card_with_every_link_down_stays_quiet_but_not_behind_nvswitches() -> None:
    assert findings_of(facts({STATUS: ALL_INACTIVE}, base=None), CHECK) == []
    # the same PCIe-style message on the NVSwitch fixture: that GPU cannot be PCIe-only
    (f,) = findings_of(facts({STATUS: ALL_INACTIVE}), CHECK)
    assert f.severity == "high" and f.subject.startswith("GPU 0")
