"""Tests for doctor.parsers.nvidia_smi.

Samples are trimmed copies of real outputs:
- XML_T4: influxdata/telegraf plugins/inputs/nvidia_smi/testdata/tesla-t4.xml (driver 515, v11 DTD,
  ``clocks_throttle_reasons``, two processes).
- XML_A100_MIG: influxdata/telegraf .../testdata/a100-sxm4-v12.xml (driver 535, ``clocks_event_reasons``,
  ``gpu_util`` N/A under MIG).
- XML_L4: a public Go test fixture (driver 555.42.06, NVIDIA L4, P0 with Idle active).
- TEXT_3090: a public C++ test fixture of ``nvidia-smi -q`` (driver 535.154.05).
- TEXT_PROCS: processes block from a public issue (driver 530.30.02).
- TEXT_OLD: PCI section from NVIDIA/nvidia-docker#821 with an old driver's
  ``Clocks Throttle Reasons``.
"""

from __future__ import annotations

import pytest

from doctor.parsers.nvidia_smi import (
    SmiGpu,
    SmiProcess,
    SmiReport,
    parse_nvidia_smi_text,
    parse_nvidia_smi_xml,
)

EMPTY = SmiReport(driver_version=None, cuda_version=None, timestamp=None, gpus=())

# The module docstring sample, verbatim.
XML_DOC = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
    <driver_version>555.42.06</driver_version>
    <cuda_version>12.5</cuda_version>
    <gpu id="00000000:01:00.0">
        <product_name>NVIDIA L4</product_name>
        <pci>
            <pci_gpu_link_info>
                <pcie_gen>
                    <max_link_gen>4</max_link_gen>
                    <current_link_gen>1</current_link_gen>
                </pcie_gen>
                <link_widths><max_link_width>16x</max_link_width></link_widths>
            </pci_gpu_link_info>
        </pci>
        <performance_state>P0</performance_state>
        <clocks_event_reasons>
            <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
        </clocks_event_reasons>
        <utilization><gpu_util>0 %</gpu_util></utilization>
    </gpu>
</nvidia_smi_log>
"""

XML_T4 = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">
<nvidia_smi_log>
    <timestamp>Mon Apr 24 16:22:39 2023</timestamp>
    <driver_version>515.105.01</driver_version>
    <cuda_version>11.7</cuda_version>
    <attached_gpus>1</attached_gpus>
    <gpu id="00000000:00:1E.0">
        <product_name>Tesla T4</product_name>
        <persistence_mode>Disabled</persistence_mode>
        <mig_devices>
            None
        </mig_devices>
        <serial>0000000000000</serial>
        <uuid>GPU-d37e67a5-91dd-3774-a5cb-99096249601a</uuid>
        <pci>
            <pci_bus_id>00000000:00:1E.0</pci_bus_id>
            <pci_gpu_link_info>
                <pcie_gen>
                    <max_link_gen>3</max_link_gen>
                    <current_link_gen>3</current_link_gen>
                </pcie_gen>
                <link_widths>
                    <max_link_width>16x</max_link_width>
                    <current_link_width>8x</current_link_width>
                </link_widths>
            </pci_gpu_link_info>
            <replay_counter>0</replay_counter>
            <replay_rollover_counter>0</replay_rollover_counter>
        </pci>
        <performance_state>P0</performance_state>
        <clocks_throttle_reasons>
            <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
            <clocks_throttle_reason_applications_clocks_setting>Not Active</clocks_throttle_reason_applications_clocks_setting>
            <clocks_throttle_reason_sw_power_cap>Not Active</clocks_throttle_reason_sw_power_cap>
            <clocks_throttle_reason_hw_slowdown>Not Active</clocks_throttle_reason_hw_slowdown>
            <clocks_throttle_reason_hw_thermal_slowdown>Not Active</clocks_throttle_reason_hw_thermal_slowdown>
            <clocks_throttle_reason_hw_power_brake_slowdown>Not Active</clocks_throttle_reason_hw_power_brake_slowdown>
            <clocks_throttle_reason_sync_boost>Not Active</clocks_throttle_reason_sync_boost>
            <clocks_throttle_reason_sw_thermal_slowdown>Not Active</clocks_throttle_reason_sw_thermal_slowdown>
            <clocks_throttle_reason_display_clocks_setting>Not Active</clocks_throttle_reason_display_clocks_setting>
        </clocks_throttle_reasons>
        <utilization>
            <gpu_util>0 %</gpu_util>
            <memory_util>0 %</memory_util>
        </utilization>
        <processes>
            <process_info>
                <gpu_instance_id>N/A</gpu_instance_id>
                <compute_instance_id>N/A</compute_instance_id>
                <pid>675</pid>
                <type>G</type>
                <process_name>/usr/lib/xorg/Xorg</process_name>
                <used_memory>22 MiB</used_memory>
            </process_info>
            <process_info>
                <gpu_instance_id>N/A</gpu_instance_id>
                <compute_instance_id>N/A</compute_instance_id>
                <pid>5762</pid>
                <type>C</type>
                <process_name>python</process_name>
                <used_memory>1005 MiB</used_memory>
            </process_info>
        </processes>
        <accounted_processes>
        </accounted_processes>
    </gpu>

</nvidia_smi_log>"""

XML_A100_MIG = """\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
    <timestamp>Fri Aug  4 11:44:30 2023</timestamp>
    <driver_version>535.54.03</driver_version>
    <cuda_version>12.2</cuda_version>
    <gpu id="00000000:01:00.0">
        <product_name>NVIDIA A100-SXM4-80GB</product_name>
        <persistence_mode>Disabled</persistence_mode>
        <serial>1650522003820</serial>
        <uuid>GPU-513536b6-7d19-9063-b049-1e69664bb298</uuid>
        <pci>
            <pci_bus_id>00000000:01:00.0</pci_bus_id>
            <pci_gpu_link_info>
                <pcie_gen>
                    <max_link_gen>4</max_link_gen>
                    <current_link_gen>4</current_link_gen>
                    <device_current_link_gen>4</device_current_link_gen>
                    <max_device_link_gen>4</max_device_link_gen>
                    <max_host_link_gen>4</max_host_link_gen>
                </pcie_gen>
                <link_widths>
                    <max_link_width>16x</max_link_width>
                    <current_link_width>16x</current_link_width>
                </link_widths>
            </pci_gpu_link_info>
            <replay_counter>0</replay_counter>
        </pci>
        <performance_state>P0</performance_state>
        <clocks_event_reasons>
            <clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
            <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
            <clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>
        </clocks_event_reasons>
        <utilization>
            <gpu_util>N/A</gpu_util>
        </utilization>
        <processes>
        </processes>
    </gpu>
</nvidia_smi_log>
"""

XML_L4 = """\
<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
    <timestamp>Mon Jul 15 13:41:56 2024</timestamp>
    <driver_version>555.42.06</driver_version>
    <cuda_version>12.5</cuda_version>
    <attached_gpus>2</attached_gpus>
    <gpu id="00000000:01:00.0">
        <product_name>NVIDIA L4</product_name>
        <persistence_mode>Disabled</persistence_mode>
        <serial>1654523003308</serial>
        <uuid>GPU-c5533cd4-5a60-059e-348d-b6d7466932e4</uuid>
        <pci>
            <pci_gpu_link_info>
                <pcie_gen>
                    <max_link_gen>4</max_link_gen>
                    <current_link_gen>4</current_link_gen>
                    <device_current_link_gen>4</device_current_link_gen>
                    <max_device_link_gen>4</max_device_link_gen>
                    <max_host_link_gen>5</max_host_link_gen>
                </pcie_gen>
                <link_widths>
                    <max_link_width>16x</max_link_width>
                    <current_link_width>16x</current_link_width>
                </link_widths>
            </pci_gpu_link_info>
            <replay_counter>0</replay_counter>
        </pci>
        <performance_state>P0</performance_state>
        <clocks_event_reasons>
            <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
            <clocks_event_reason_applications_clocks_setting>Not Active</clocks_event_reason_applications_clocks_setting>
            <clocks_event_reason_sw_power_cap>Not Active</clocks_event_reason_sw_power_cap>
            <clocks_event_reason_hw_slowdown>Not Active</clocks_event_reason_hw_slowdown>
            <clocks_event_reason_hw_thermal_slowdown>Not Active</clocks_event_reason_hw_thermal_slowdown>
            <clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
            <clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>
            <clocks_event_reason_sw_thermal_slowdown>Not Active</clocks_event_reason_sw_thermal_slowdown>
            <clocks_event_reason_display_clocks_setting>Not Active</clocks_event_reason_display_clocks_setting>
        </clocks_event_reasons>
        <utilization>
            <gpu_util>2 %</gpu_util>
        </utilization>
        <processes>
            <process_info>
                <gpu_instance_id>N/A</gpu_instance_id>
                <compute_instance_id>N/A</compute_instance_id>
                <pid>7372</pid>
                <type>C</type>
                <process_name>ffmpeg</process_name>
                <used_memory>136 MiB</used_memory>
            </process_info>
        </processes>
    </gpu>
</nvidia_smi_log>
"""

TEXT_DOC = """\
Driver Version                            : 535.154.05
GPU 00000000:04:00.0
    Product Name                          : NVIDIA GeForce RTX 3090
    PCI
        GPU Link Info
            PCIe Generation
                Max                       : 3
                Current                   : 1
            Link Width
                Max                       : 16x
                Current                   : 16x
    Performance State                     : P8
    Clocks Event Reasons
        Idle                              : Active
    Utilization
        Gpu                               : 0 %
    Processes                             : None
"""

TEXT_3090 = """\

==============NVSMI LOG==============

Timestamp                                 : Mon Mar 31 10:11:18 2025
Driver Version                            : 535.154.05
CUDA Version                              : 12.2

Attached GPUs                             : 1
GPU 00000000:04:00.0
    Product Name                          : NVIDIA GeForce RTX 3090
    Product Brand                         : GeForce
    Persistence Mode                      : Disabled
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : N/A
    GPU UUID                              : GPU-6b1d0869-fb77-7f91-fcea-007340e02271
    PCI
        Bus                               : 0x04
        Device                            : 0x00
        Domain                            : 0x0000
        Device Id                         : 0x220410DE
        Bus Id                            : 00000000:04:00.0
        Sub System Id                     : 0x00007377
        GPU Link Info
            PCIe Generation
                Max                       : 3
                Current                   : 3
                Device Current            : 3
                Device Max                : 4
                Host Max                  : 3
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
        Tx Throughput                     : 0 KB/s
        Rx Throughput                     : 0 KB/s
    Fan Speed                             : 30 %
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    FB Memory Usage
        Total                             : 24576 MiB
        Used                              : 0 MiB
    Utilization
        Gpu                               : 2 %
        Memory                            : 0 %
    Clocks
        Graphics                          : 1695 MHz
        SM                                : 1695 MHz
    Max Clocks
        Graphics                          : 2100 MHz
    Fabric
        State                             : N/A
        Status                            : N/A
    Processes                             : None
"""

TEXT_PROCS = """\
==============NVSMI LOG==============

Timestamp                                 : Wed Jul  5 20:15:20 2023
Driver Version                            : 530.30.02
CUDA Version                              : 12.1

Attached GPUs                             : 2
GPU 00000000:3B:00.0
    Product Name                          : Tesla T4
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : N/A
    Fabric
        State                             : N/A
        Status                            : N/A
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 25384
            Type                          : C
            Name                          : nvidia-cuda-mps-server
            Used GPU Memory               : 26 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 12810
            Type                          : M+C
            Name                          : /home/user/.miniconda3/envs/torch/bin/python
            Used GPU Memory               : 6757 MiB

GPU 00000000:D8:00.0
    Product Name                          : Tesla T4
    Processes
        Process ID                        : 1152
            Type                          : C+G
            Name                          : C:\\Windows\\System32\\dwm.exe
            Used GPU Memory               : Not available in WDDM driver model
"""

TEXT_OLD = """\
==============NVSMI LOG==============

Timestamp                           : Mon Oct 15 10:22:41 2018
Driver Version                      : 390.87

Attached GPUs                       : 1
GPU 00000000:00:1E.0
    Product Name                    : Tesla V100-SXM2-16GB
    Persistence Mode                : Enabled
    PCI
        Bus                         : 0x00
        GPU Link Info
            PCIe Generation
                Max                 : 3
                Current             : 3
            Link Width
                Max                 : 16x
                Current             : 16x
        Bridge Chip
            Type                    : N/A
            Firmware                : N/A
        Replays since reset         : 3
    Performance State               : P8
    Clocks Throttle Reasons
        Idle                        : Active
        Applications Clocks Setting : Not Active
        SW Power Cap                : Not Active
        HW Slowdown                 : Not Active
            HW Thermal Slowdown     : N/A
            HW Power Brake Slowdown : N/A
        Sync Boost                  : Not Active
        SW Thermal Slowdown         : Not Active
    Utilization
        Gpu                         : 0 %
    Processes                       : None
"""


# ----------------------------------------------------------------------------- XML


def test_xml_doc_sample() -> None:
    rep = parse_nvidia_smi_xml(XML_DOC)
    assert rep.driver_version == "555.42.06" and rep.cuda_version == "12.5" and rep.timestamp is None
    (g,) = rep.gpus
    assert g.address == "0000:01:00.0"
    assert (g.link_gen_current, g.link_gen_max, g.link_width_max, g.link_width_current) == (1, 4, 16, None)
    assert g.pstate == "P0" and g.util_gpu == 0.0
    assert g.clock_event_reasons == {"gpu_idle": True} and g.idle is True


def test_xml_t4_throttle_reasons_and_processes() -> None:
    rep = parse_nvidia_smi_xml(XML_T4)
    assert rep.driver_version == "515.105.01" and rep.cuda_version == "11.7"
    assert rep.timestamp == "Mon Apr 24 16:22:39 2023"
    (g,) = rep.gpus
    assert g == SmiGpu(
        address="0000:00:1e.0",
        product_name="Tesla T4",
        uuid="GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
        serial="0000000000000",
        pstate="P0",
        util_gpu=0.0,
        link_gen_current=3,
        link_gen_max=3,
        link_gen_device_max=None,
        link_gen_host_max=None,
        link_width_current=8,
        link_width_max=16,
        persistence_mode=False,
        clock_event_reasons={
            "gpu_idle": False,
            "applications_clocks_setting": False,
            "sw_power_cap": False,
            "hw_slowdown": False,
            "hw_thermal_slowdown": False,
            "hw_power_brake_slowdown": False,
            "sync_boost": False,
            "sw_thermal_slowdown": False,
            "display_clocks_setting": False,
        },
        idle=False,
        replays_since_reset=0,
        processes=(
            SmiProcess(pid=675, name="/usr/lib/xorg/Xorg", used_memory_mib=22, type="G"),
            SmiProcess(pid=5762, name="python", used_memory_mib=1005, type="C"),
        ),
    )


def test_xml_a100_mig_util_na() -> None:
    (g,) = parse_nvidia_smi_xml(XML_A100_MIG).gpus
    assert g.util_gpu is None
    assert (g.link_gen_max, g.link_gen_device_max, g.link_gen_host_max) == (4, 4, 4)
    assert g.idle is False and g.processes == ()


def test_xml_l4_idle_in_p0() -> None:
    (g,) = parse_nvidia_smi_xml(XML_L4).gpus
    assert g.pstate == "P0" and g.idle is True and g.util_gpu == 2.0
    assert g.link_gen_host_max == 5 and g.link_gen_device_max == 4
    assert g.processes == (SmiProcess(pid=7372, name="ffmpeg", used_memory_mib=136, type="C"),)


def test_xml_entity_rejected() -> None:
    evil = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [\n<!ENTITY a "aaaaaaaaaa">\n'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n'
        "<nvidia_smi_log><driver_version>&b;</driver_version></nvidia_smi_log>"
    )
    assert parse_nvidia_smi_xml(evil) == EMPTY
    external = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        "<nvidia_smi_log><driver_version>&xxe;</driver_version></nvidia_smi_log>"
    )
    assert parse_nvidia_smi_xml(external) == EMPTY


def test_xml_undefined_entity_is_malformed() -> None:
    text = "<nvidia_smi_log><driver_version>&undefined;</driver_version></nvidia_smi_log>"
    assert parse_nvidia_smi_xml(text) == EMPTY


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not xml at all",
        "\x00\x01\xff",
        XML_T4[: len(XML_T4) // 2],
        "<other_root><gpu id='00000000:01:00.0'/></other_root>",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
    ],
)
def test_xml_garbage(text: str) -> None:
    assert parse_nvidia_smi_xml(text) == EMPTY


def test_xml_minimal_gpu_all_none() -> None:
    rep = parse_nvidia_smi_xml(
        '<nvidia_smi_log><gpu id="0000:06:00.0"><pci><replay_counter>x</replay_counter></pci></gpu></nvidia_smi_log>'
    )
    (g,) = rep.gpus
    assert g.address == "0000:06:00.0"
    assert g.product_name is None and g.link_gen_current is None and g.replays_since_reset is None
    assert g.clock_event_reasons == {} and g.idle is None and g.processes == ()


# ---------------------------------------------------------------------------- text


def test_text_doc_sample() -> None:
    rep = parse_nvidia_smi_text(TEXT_DOC)
    assert rep.driver_version == "535.154.05"
    (g,) = rep.gpus
    assert g.address == "0000:04:00.0"
    assert (g.link_gen_current, g.link_gen_max, g.link_width_current, g.link_width_max) == (1, 3, 16, 16)
    assert g.pstate == "P8" and g.idle is True and g.util_gpu == 0.0 and g.processes == ()


def test_text_3090_full() -> None:
    rep = parse_nvidia_smi_text(TEXT_3090)
    assert (rep.driver_version, rep.cuda_version, rep.timestamp) == (
        "535.154.05",
        "12.2",
        "Mon Mar 31 10:11:18 2025",
    )
    (g,) = rep.gpus
    assert g == SmiGpu(
        address="0000:04:00.0",
        product_name="NVIDIA GeForce RTX 3090",
        uuid="GPU-6b1d0869-fb77-7f91-fcea-007340e02271",
        serial=None,
        pstate="P0",
        util_gpu=2.0,
        link_gen_current=3,
        link_gen_max=3,
        link_gen_device_max=4,
        link_gen_host_max=3,
        link_width_current=16,
        link_width_max=16,
        persistence_mode=False,
        clock_event_reasons={
            "gpu_idle": True,
            "applications_clocks_setting": False,
            "sw_power_cap": False,
            "hw_slowdown": False,
            "hw_thermal_slowdown": False,
            "hw_power_brake_slowdown": False,
            "sync_boost": False,
            "sw_thermal_slowdown": False,
            "display_clocks_setting": False,
        },
        idle=True,
        replays_since_reset=0,
        processes=(),
        fb_total_mib=24576,
    )


def test_text_processes() -> None:
    rep = parse_nvidia_smi_text(TEXT_PROCS)
    assert rep.driver_version == "530.30.02"
    g1, g2 = rep.gpus
    assert g1.address == "0000:3b:00.0" and g2.address == "0000:d8:00.0"
    assert g1.processes == (
        SmiProcess(pid=25384, name="nvidia-cuda-mps-server", used_memory_mib=26, type="C"),
        SmiProcess(
            pid=12810, name="/home/user/.miniconda3/envs/torch/bin/python", used_memory_mib=6757, type="M+C"
        ),
    )
    assert g2.processes == (
        SmiProcess(pid=1152, name="C:\\Windows\\System32\\dwm.exe", used_memory_mib=None, type="C+G"),
    )
    assert g1.link_gen_current is None and g1.idle is None and g1.clock_event_reasons == {}


def test_text_old_driver_throttle_reasons() -> None:
    (g,) = parse_nvidia_smi_text(TEXT_OLD).gpus
    assert g.product_name == "Tesla V100-SXM2-16GB" and g.persistence_mode is True
    assert (g.link_gen_current, g.link_gen_max, g.link_gen_device_max, g.link_gen_host_max) == (
        3,
        3,
        None,
        None,
    )
    assert g.replays_since_reset == 3
    assert g.idle is True and g.pstate == "P8"
    # N/A reasons are omitted, not False.
    assert "hw_thermal_slowdown" not in g.clock_event_reasons
    assert g.clock_event_reasons["sw_power_cap"] is False


def test_text_tabs_and_crlf() -> None:
    text = TEXT_DOC.replace("    ", "\t").replace("\n", "\r\n")
    (g,) = parse_nvidia_smi_text(text).gpus
    assert (g.link_gen_current, g.link_gen_max) == (1, 3) and g.idle is True


def test_text_subset_dump_without_header() -> None:
    # `nvidia-smi -q -d PERFORMANCE` as collected by sos (nvidia-smi_-q_-d_PERFORMANCE).
    text = (
        "\n==============NVSMI LOG==============\n\nTimestamp : x\nDriver Version : 550.54.15\n"
        "CUDA Version : 12.4\n\nAttached GPUs : 1\nGPU 00000000:17:00.0\n"
        "    Performance State                     : P0\n    Clocks Event Reasons\n"
        "        Idle                              : Not Active\n"
        "    Clocks Event Reasons Counters\n        SW Power Capping                  : 0 us\n"
    )
    (g,) = parse_nvidia_smi_text(text).gpus
    assert g.address == "0000:17:00.0" and g.idle is False
    assert g.clock_event_reasons == {"gpu_idle": False}


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n: : :\n", "\x00\xff\x10", "GPU 00000000:17:00.0\n", TEXT_3090[:400], XML_T4],
)
def test_text_garbage_never_raises(text: str) -> None:
    rep = parse_nvidia_smi_text(text)
    assert isinstance(rep, SmiReport)


def test_power_limits_and_application_clocks_across_schema_versions() -> None:
    """v12 ``power_readings/power_limit``, v13 ``gpu_power_readings/requested_power_limit``; deprecated or
    N/A application clocks read as not reported (never as 0)."""
    v12 = ("<nvidia_smi_log><gpu id=\"00000000:00:10.0\"><power_readings><power_limit>200.00 W</power_limit>"
           "<default_power_limit>350.00 W</default_power_limit><enforced_power_limit>200.00 W</enforced_power_limit>"
           "</power_readings><applications_clocks><graphics_clock>N/A</graphics_clock></applications_clocks>"
           "</gpu></nvidia_smi_log>")
    v13 = ("<nvidia_smi_log><gpu id=\"00000000:09:00.0\"><gpu_power_readings>"
           "<current_power_limit>350.00 W</current_power_limit><requested_power_limit>300.00 W"
           "</requested_power_limit><default_power_limit>350.00 W</default_power_limit></gpu_power_readings>"
           "<applications_clocks><graphics_clock>Requested functionality has been deprecated</graphics_clock>"
           "</applications_clocks><default_applications_clocks><graphics_clock>1395 MHz</graphics_clock>"
           "</default_applications_clocks></gpu></nvidia_smi_log>")
    a = parse_nvidia_smi_xml(v12).gpus[0]
    b = parse_nvidia_smi_xml(v13).gpus[0]
    assert (a.power_limit_w, a.default_power_limit_w, a.app_clock_graphics_mhz) == (200.0, 350.0, None)
    assert (b.power_limit_w, b.default_power_limit_w) == (300.0, 350.0)
    assert (b.app_clock_graphics_mhz, b.default_app_clock_graphics_mhz) == (None, 1395.0)


# ``GPU Reset Status`` and ``GPU Recovery Action`` as drivers print them: 565 (both, No/No), 570+ (the reset
# status "deprecated", the action read), 550 (reset status only); from public nvidia-smi -q recordings.
TEXT_RECOVERY = """\
GPU 00000000:18:00.0
    GPU Reset Status
        Reset Required                    : {required}
        Drain and Reset Recommended       : {drain}
    GPU Recovery Action                   : {action}
    GSP Firmware Version                  : 570.124.06
"""


@pytest.mark.parametrize(("required", "drain", "action", "word"), [
    ("No", "No", "None", "none"),
    ("Requested functionality has been deprecated", "Requested functionality has been deprecated", "Reset", "reset"),
    ("Requested functionality has been deprecated", "Requested functionality has been deprecated",
     "Drain and Reset", "drain_and_reset"),
    ("Requested functionality has been deprecated", "Requested functionality has been deprecated", "Reboot", "reboot"),
    ("No", "No", "Drain P2P", "drain_p2p"),
    ("Yes", "No", "N/A", "reset"),
    ("Yes", "Yes", "N/A", "drain_and_reset"),
    ("Requested functionality has been deprecated", "Requested functionality has been deprecated", "N/A", None),
])
def test_recovery_action_text_and_xml(required: str, drain: str, action: str, word: str | None) -> None:
    text = parse_nvidia_smi_text(TEXT_RECOVERY.format(required=required, drain=drain, action=action)).gpus[0]
    xml = parse_nvidia_smi_xml(
        f'<nvidia_smi_log><gpu id="00000000:18:00.0"><gpu_reset_status><reset_required>{required}</reset_required>'
        f"<drain_and_reset_recommended>{drain}</drain_and_reset_recommended></gpu_reset_status>"
        f"<gpu_recovery_action>{action}</gpu_recovery_action></gpu></nvidia_smi_log>").gpus[0]
    assert text.recovery_action == xml.recovery_action == word
    assert (text.recovery_text is None) == (word is None)
    if action != "N/A":
        assert text.recovery_text == f"GPU Recovery Action: {action}"


def test_recovery_action_absent_on_old_drivers() -> None:
    g = parse_nvidia_smi_text(TEXT_3090).gpus[0]
    assert (g.recovery_action, g.recovery_text) == (None, None)


def test_nvidia_smi_failure_lines() -> None:
    from doctor.parsers.nvidia_smi import SmiError, parse_smi_errors

    text = ("Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
            "Unable to determine the device handle for GPU 0000:5e:00.0: GPU is lost.  Reboot the system to "
            "recover this GPU\n" * 2 + "No devices were found\n")
    assert parse_smi_errors(text) == (
        SmiError("0000:3b:00.0", "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"),
        SmiError("0000:5e:00.0", "Unable to determine the device handle for GPU 0000:5e:00.0: GPU is lost.  "
                                 "Reboot the system to recover this GPU"),
        SmiError(None, "No devices were found"))
    assert parse_smi_errors(TEXT_3090) == () == parse_smi_errors(None)


def test_nvidia_smi_node_failures_are_an_allowlist() -> None:
    from doctor.parsers.nvidia_smi import SmiError, parse_smi_errors

    # the user-space driver is missing (kernel module loaded, libnvidia-ml.so not installed): NVML and CUDA cannot run
    lib = ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
           "Driver is properly installed and present in your system.\n"
           "Please also try adding directory that contains libnvidia-ml.so to your system PATH.\n")
    assert [e.address for e in parse_smi_errors(lib)] == [None] and "libnvidia-ml.so" in parse_smi_errors(lib)[0].text
    assert parse_smi_errors("Failed to initialize NVML: Unknown Error\n") == (
        SmiError(None, "Failed to initialize NVML: Unknown Error"),)
    # the tool could not look: no GPU state follows from that
    assert parse_smi_errors("Failed to initialize NVML: Insufficient Permissions\n") == ()
    assert parse_smi_errors("Failed to initialize NVML: Driver/library version mismatch\n") == ()
