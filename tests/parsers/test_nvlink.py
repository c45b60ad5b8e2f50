"""nvidia-smi nvlink -s / -e parsers and the data-centre fields of nvidia-smi -q (XML and text)."""

from __future__ import annotations

import pytest

from doctor.parsers.nvidia_smi import parse_nvidia_smi_text, parse_nvidia_smi_xml
from doctor.parsers.nvlink import parse_nvlink_errors, parse_nvlink_status
from tests.helpers import HEALTHY

# RTX A6000 pair with an NVLink bridge, third card without one (public benchmark README)
A6000 = """\
GPU 0: NVIDIA RTX A6000 (UUID: GPU-5baec991-de63-c196-1766-04c38407e133)
\t Link 0: 14.062 GB/s
\t Link 1: 14.062 GB/s
\t Link 2: 14.062 GB/s
\t Link 3: 14.062 GB/s
GPU 2: NVIDIA RTX A6000 (UUID: GPU-02c05ee3-bdb5-aac7-f9e8-a4c8f3f725b3)
NVML: Unable to retrieve NVLink information as all links are inActive
"""
ERRORS = """\
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0d1b8a8f-3f4b-7c7e-2a3e-5f1d2c3b4a59)
\t Link 0: Replay Errors: 12
\t Link 0: Recovery Errors: 1
\t Link 0: CRC Errors: 0
\t Link 1: Replay Errors: 0
\t Link 1: Recovery Errors: 0
\t Link 1: CRC Errors: 3
"""


def test_status_speeds_inactive_links_and_the_all_inactive_message() -> None:
    g0, g2 = parse_nvlink_status(A6000 + "\t Link 9: <inactive>\n".replace("9", "9"))
    assert (g0.index, g0.uuid, g0.speeds) == (0, "GPU-5baec991-de63-c196-1766-04c38407e133",
                                              {0: 14.062, 1: 14.062, 2: 14.062, 3: 14.062})
    assert g2.index == 2 and g2.all_inactive and g2.speeds == {9: None}


def test_errors_per_link_with_short_counter_names() -> None:
    (g,) = parse_nvlink_errors(ERRORS)
    assert g.errors == {0: {"replay": 12, "recovery": 1, "crc": 0}, 1: {"replay": 0, "recovery": 0, "crc": 3}}


def test_fixture_outputs_parse_to_eight_gpus_of_eighteen_links() -> None:
    status = parse_nvlink_status((HEALTHY / "commands/nvidia-smi_nvlink_-s").read_text())
    errors = parse_nvlink_errors((HEALTHY / "commands/nvidia-smi_nvlink_-e").read_text())
    assert [len(g.speeds) for g in status] == [18] * 8 and {s for g in status for s in g.speeds.values()} == {26.562}
    assert [len(g.errors) for g in errors] == [18] * 8


@pytest.mark.parametrize("text", ["", "garbage\n\0\xff", "Link 0: 1 GB/s\n", "GPU x: y\n\t Link 99999: 1 GB/s\n",
                                  "GPU 0: A (UUID: GPU-1)\n\t Link 0: Replay Errors: many\n"])
def test_garbage_never_raises(text: str) -> None:
    for g in (*parse_nvlink_status(text), *parse_nvlink_errors(text)):
        assert all(k < 64 for k in g.speeds) and all(isinstance(v, int) for c in g.errors.values() for v in c.values())


def test_xml_data_centre_fields_of_the_fixture() -> None:
    g = parse_nvidia_smi_xml((HEALTHY / "commands/nvidia-smi_-q_-x").read_text()).gpus[0]
    assert (g.ecc_mode, g.ecc_mode_pending, g.mig_mode, g.mig_mode_pending) == (True, True, False, False)
    assert (g.compute_mode, g.fb_total_mib, g.bar1_total_mib) == ("Default", 81559, 131072)
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")


def test_text_data_centre_fields() -> None:
    text = """\
Driver Version                            : 550.90.07
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    MIG Mode
        Current                           : Enabled
        Pending                           : Disabled
    FB Memory Usage
        Total                             : 81559 MiB
    BAR1 Memory Usage
        Total                             : 256 MiB
    Compute Mode                          : Exclusive_Process
    ECC Mode
        Current                           : Disabled
        Pending                           : Enabled
    Fabric
        State                             : In Progress
        Status                            : N/A
"""
    (g,) = parse_nvidia_smi_text(text).gpus
    assert (g.mig_mode, g.mig_mode_pending, g.ecc_mode, g.ecc_mode_pending) == (True, False, False, True)
    assert (g.compute_mode, g.fb_total_mib, g.bar1_total_mib) == ("Exclusive_Process", 81559, 256)
    assert (g.fabric_state, g.fabric_status) == ("In Progress", None)


def test_driver_580_fabric_block_with_health_children() -> None:
    # the <fabric> block as nvidia-smi 580 prints it (DTD v13); state/status N/A on a GPU without NVSwitch
    xml = ('<nvidia_smi_log><driver_version>580.159.04</driver_version><gpu id="00000000:18:00.0">'
           "<fabric><state>{}</state><status>{}</status><cliqueId>N/A</cliqueId><clusterUuid>N/A</clusterUuid>"
           "<health><summary>N/A</summary><bandwidth>N/A</bandwidth></health></fabric></gpu></nvidia_smi_log>")
    (g,) = parse_nvidia_smi_xml(xml.format("N/A", "N/A")).gpus
    assert (g.fabric_state, g.fabric_status) == (None, None)
    (g,) = parse_nvidia_smi_xml(xml.format("Completed", "Success")).gpus
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")


def test_empty_output_of_a_gpu_without_nvlink_is_no_gpu() -> None:
    # nvidia-smi 580 on a single H200 without NVLink peers prints nothing and exits 0
    assert parse_nvlink_status("") == () and parse_nvlink_errors("") == ()
