"""nvidia-bug-report logs as a source: recognised by content, bounded, their sections read as specs.

The hand-made logs follow ``nvidia-bug-report.sh`` of driver 580 (sections after 44 underscores, ``*** <path>``
file sections, several nvidia-smi commands in one section, ``dmesg:``); the nvidia-smi output is a real one
(tests/realworld/cases/azhpc-nd-a100-v4). tests/realworld/bugreport holds a real log of driver 352.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.errors import DoctorError
from doctor.facts import Facts
from doctor.sources import bugreport as br
from doctor.sources import open_source
from tests.helpers import run

HERE = Path(__file__).resolve().parent.parent
SMI_Q = (HERE / "realworld/cases/azhpc-nd-a100-v4/sos_commands/nvidia/nvidia-smi_-q").read_text()
REAL = HERE / "realworld/bugreport/caffe-titanx-352/nvidia-bug-report.log.gz"
SEP = "____________________________________________\n\n"
LSPCI = ("0001:00:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 40GB] [10de:20b0] (rev a1)\n"
         "\tSubsystem: NVIDIA Corporation Device [10de:134f]\n"
         "\tCapabilities: [68] Express (v2) Endpoint, MSI 00\n"
         "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
         "\t\tLnkSta:\tSpeed 16GT/s, Width x16\n"
         "\tKernel driver in use: nvidia\n"
         "00: de 10 b0 20 46 05 10 00 a1 00 02 03 00 00 00 00\n")
DMESG = ("[    2.339523] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n"
         "[ 1843.308145] NVRM: Xid (PCI:0001:00:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n")


def _log(smi: str = SMI_Q, dmesg: str = DMESG, extra: str = "") -> str:
    return (
        f"{SEP}Start of NVIDIA bug report log file.  Please include this file, along\n"
        "with a detailed description of your problem, when reporting a graphics\n\n"
        "nvidia-bug-report.sh Version: 35398123\n\n"
        "Date: Thu Aug 25 20:30:39 UTC 2025\n"
        "uname: Linux gpu-node-7 6.8.0-45-generic #45-Ubuntu SMP x86_64 GNU/Linux\ncommand line flags: \n\n"
        f"{SEP}*** /sys/bus/pci/devices/0001:00:00.0/power/control\n"
        "*** ls: -rw-r--r-- 1 root root 4096 2025-08-25 20:30:39.5 +0000 /sys/bus/pci/devices/0001:00:00.0/power/control\n"
        "on\n\n"
        f"{SEP}*** /etc/os-release\n*** ls: -rw-r--r-- 1 root root 386 2025-08-01 /etc/os-release\n"
        'PRETTY_NAME="Ubuntu 24.04.1 LTS"\n\n'
        f"{SEP}*** /var/log/nvidia-installer.log does not exist\n\n"
        f"{SEP}/usr/bin/lspci -nntv\n\n-[0000:00]-+-00.0  Intel Corporation [8086:1237]\n\n"
        f"{SEP}/usr/bin/lspci -nnDvvvxxxx\n\n{LSPCI}\n"
        f"{SEP}/usr/sbin/dmidecode\n\n# dmidecode 3.5\n\nHandle 0x0001, DMI type 1, 27 bytes\n"
        "System Information\n\tManufacturer: Microsoft Corporation\n\tProduct Name: Virtual Machine\n\n"
        f"{SEP}dmesg:\n\n{dmesg}\n"
        f"{SEP}*** /proc/cmdline\n*** ls: -r--r--r-- 1 root root 0 2025-08-25 /proc/cmdline\n"
        "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt\n\n"
        f"{SEP}*** /proc/driver/nvidia/./version\n*** ls: -r--r--r-- 1 root root 0 2025 /proc/driver/nvidia/./version\n"
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 21:21:55 UTC 2021\n\n"
        f"{SEP}/usr/bin/nvidia-smi --query\n\n{smi}\n\n"
        "/usr/bin/nvidia-smi --query --unit\n\n\n==============NVSMI LOG==============\n\nAttached Units : 0\n\n"
        "/usr/bin/nvidia-smi nvlink --errorcounters\n\n\n"
        f"{extra}{SEP}End of NVIDIA bug report log file.\n"
    )


def _write(tmp: Path, text: str, name: str = "nvidia-bug-report.log.gz", zipped: bool = True) -> str:
    path = tmp / name
    path.write_bytes(gzip.compress(text.encode()) if zipped else text.encode())
    return str(path)


@pytest.mark.parametrize("name,zipped", [("nvidia-bug-report.log.gz", True), ("nvidia-bug-report.log", False),
                                         ("ticket-4711.bin", True), ("attachment", False)])
def test_recognised_by_content_gzip_or_plain(tmp_path: Path, name: str, zipped: bool) -> None:
    src = open_source(_write(tmp_path, _log(), name, zipped))
    assert src.kind == br.BUGREPORT
    assert src.read_text("proc/cmdline") == "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt\n"
    assert src.read_line("proc/driver/nvidia/version").startswith("NVRM version")  # "./" dropped
    assert src.read_line("hostname") == "gpu-node-7" and src.collected_at() == "2025-08-25T20:30:39"
    assert src.read_line("sys/class/dmi/id/sys_vendor") == "Microsoft Corporation"
    # the report's scattered sys/bus/pci power files must not pass for a sysfs tree
    assert src.listdir("sys/bus/pci/devices") == [] and not src.exists("var/log/nvidia-installer.log")


def test_command_sections_answer_specs_and_name_their_section(tmp_path: Path) -> None:
    src = open_source(_write(tmp_path, _log()))
    smi = src.command("nvidia_smi_q")
    assert smi.text is not None and "A100-SXM4-40GB" in smi.text and "Attached Units" not in smi.text
    assert smi.where.endswith("nvidia-bug-report.log.gz: /usr/bin/nvidia-smi --query")
    lspci = src.command("lspci_vvv")
    assert lspci.text is not None and "LnkCap" in lspci.text and "-nnDvvvxxxx" in lspci.where
    assert src.command("nvlink_errors").text is None  # printed nothing
    xml = src.command("nvidia_smi_xml")
    assert xml.text is None and "no such section" in (xml.reason or "")


def test_nvidia_smi_section_feeds_gpu_facts_and_dmesg_reaches_xid(tmp_path: Path) -> None:
    f = Facts(open_source(_write(tmp_path, _log())))
    assert [g.name for g in f.gpus.gpus][:1] == ["A100-SXM4-40GB"] and len(f.gpus.gpus) == 8
    assert f.host.is_vm is True and f.host.hostname == "gpu-node-7"
    xid = [x for x in run(f, only=["gpu.xid_errors"]).findings if x.check == "gpu.xid_errors"]
    assert xid and xid[0].severity in ("high", "critical") and "79" in xid[0].title + str(xid[0].evidence)


@pytest.mark.parametrize("failure", [
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest "
    "NVIDIA driver is installed and running.",
    "No devices were found",
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
    "Driver is properly installed and present in your system.",
])
def test_nvidia_smi_failure_is_evidence_not_a_pass(tmp_path: Path, failure: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, _log(smi=failure, dmesg="[ 3.1] NVRM: RmInitAdapter failed! (0x22:0x56:762)\n"))
    smi = open_source(path).command("nvidia_smi_q")
    assert smi.text is None and failure[:20] in (smi.reason or "")
    result = run(Facts(open_source(path)))
    by_check = {x.check: x.severity for x in result.findings}
    for check_id in ("gpu.clock_throttle", "gpu.ecc", "gpu.persistence_mode"):
        assert by_check.get(check_id) != "pass"  # no nvidia-smi data: never judged healthy
    assert main(["check", path]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # truncated download
    lambda data: data[:10] + bytes(b ^ 0x55 for b in data[10:40]) + data[40:],  # corrupt deflate stream
])
def test_truncated_or_corrupt_gzip_is_refused_in_one_line(tmp_path: Path, damage,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nvidia-bug-report.log.gz"
    path.write_bytes(damage(gzip.compress(_log().encode() * 3)))
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gnd: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert "nvidia-bug-report" in err


def test_oversized_log_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(br, "MAX_LOG_BYTES", 64 * 1024)
    path = _write(tmp_path, _log(extra=SEP + "dmesg:\n\n" + "x" * 100_000 + "\n"))
    with pytest.raises(DoctorError, match="larger than"):
        open_source(path)


def test_a_repeated_section_is_read_once(tmp_path: Path) -> None:
    noise = (SEP + "*** /proc/cmdline\n*** ls: x\nrepeated\n\n") * 10_000
    src = open_source(_write(tmp_path, _log(extra=noise)))
    assert src.read_line("proc/cmdline") == "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt"


def test_real_driver_352_report(capsys: pytest.CaptureFixture[str]) -> None:
    """tests/realworld/bugreport/PROVENANCE.md: a healthy GTX TITAN X at Gen3 x16, no Xid; old ``lspci -v``."""
    src = open_source(str(REAL))
    f = Facts(src)
    assert [g.name for g in f.gpus.gpus] == ["GeForce GTX TITAN X"] and f.host.hostname == "shield-616-2"
    assert "lspci -d" in src.command("lspci_vvv").where and src.command("dmesg").text
    findings = run(f).findings
    alarms = [x for x in findings if x.severity in ("low", "medium", "high", "critical")]
    assert not alarms, alarms
    assert not [x for x in findings if x.check == "gpu.xid_errors" and x.severity != "pass"]
    assert main(["check", str(REAL)]) == 0


def test_a_ticket_folder_with_one_report_is_read_as_the_report(tmp_path: Path) -> None:
    """A folder someone attached a bug report to (with other files) reads as that report; two reports: refused."""
    folder = tmp_path / "ticket-1234"
    folder.mkdir()
    (folder / "nvidia-bug-report.log.gz").write_bytes(gzip.compress(_log().encode()))
    (folder / "notes.txt").write_text("GPU slow since Tuesday\n")
    src = open_source(str(folder))
    assert src.kind == "bugreport" and src.location.endswith("nvidia-bug-report.log.gz")
    (folder / "nvidia-bug-report-2.log").write_text(_log())
    with pytest.raises(DoctorError, match="not a snapshot or sosreport"):
        open_source(str(folder))


def test_a_twelve_hour_date_is_read() -> None:
    assert br._date("Date: Wed Feb 14 03:05:25 PM EST 2024") == "2024-02-14T15:05:25"
    assert br._date("Date: Wed Feb 14 12:05:25 AM EST 2024") == "2024-02-14T00:05:25"
    assert br._date("Date: Mo 30. Okt 10:18:57 CET 2023") is None


def test_missing_user_space_driver_makes_the_bound_gpus_unreachable(tmp_path: Path) -> None:
    """The kernel module is loaded and bound, but nvidia-smi cannot find libnvidia-ml.so (the user-space half of the
    driver is not installed): neither NVML nor CUDA can use the GPU, whatever the kernel log says."""
    lib = ("NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display "
           "Driver is properly installed and present in your system.\n"
           "Please also try adding directory that contains libnvidia-ml.so to your system PATH.")
    path = _write(tmp_path, _log(smi=lib, dmesg="[ 3.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  470.82.01\n"))
    found = [x for x in run(Facts(open_source(path)), only=["gpu.unreachable"]).findings if x.severity == "critical"]
    assert found and all("libnvidia-ml.so" in x.title for x in found)


SCAN = (SEP + "Scanning kernel log files for NVIDIA kernel messages:\n\n"
        "  /var/log/kern.log:\n"
        "Mar 13 21:37:00 node kernel: [    6.614228] NVRM: GPU 0001:00:00.0: RmInitAdapter failed! (0x62:0x0:1835)\n"
        "Mar 21 20:18:56 node kernel: [   65.315783] NVRM: Xid (PCI:0001:00:00): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus.\n\n"
        "  journalctl -b -0:\n{boot0}\n"
        "  journalctl -b -1:\n"
        "Mar 21 20:18:56 node kernel: NVRM: Xid (PCI:0001:00:00): 48, pid=1, name=x, An uncorrectable double bit error\n\n")


def _xid_and_unreachable(path: str) -> list[tuple[str, str, str]]:
    found = run(Facts(open_source(path)), only=["gpu.xid_errors", "gpu.unreachable"]).findings
    return [(x.check, str(x.severity), x.title) for x in found if x.severity in ("low", "medium", "high", "critical")]


def test_earlier_boots_in_the_kernel_log_scan_are_history(tmp_path: Path) -> None:
    """The report's ``Scanning kernel log files`` section quotes kern.log and ``journalctl -b -1`` of earlier boots
    (the real ThinkPad report of driver 525 holds RmInitAdapter failures and an Xid 79 of boots before the one it
    describes): the current boot is what ``dmesg:`` says; an old boot's failure is no alarm about the GPU now."""
    clean = "[    4.031319] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05\n"
    path = _write(tmp_path, _log(dmesg=clean, extra=SCAN.format(boot0=clean)))
    assert _xid_and_unreachable(path) == []


def test_an_empty_dmesg_falls_back_to_the_current_boot_journal_only(tmp_path: Path) -> None:
    """``dmesg:`` printed nothing (a restricted ring buffer): the ``journalctl -b -0`` lines stand in for it, never
    kern.log or ``-b -1`` (here an Xid 48 that only an earlier boot had)."""
    boot0 = "Aug 25 20:01:02 node kernel: NVRM: Xid (PCI:0001:00:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
    src = open_source(_write(tmp_path, _log(dmesg="", extra=SCAN.format(boot0=boot0))))
    dmesg = src.command("dmesg")
    assert dmesg.text is not None and "79" in dmesg.text and ": 48," not in dmesg.text
    assert "journalctl -b -0" in dmesg.where
    found = _xid_and_unreachable(str(src.location))
    assert any(check == "gpu.xid_errors" and "79" in title for check, _, title in found), found
    assert not any("48" in title for _, _, title in found), found


def _sysfs_file(path: str, value: str) -> str:
    return f"{SEP}*** {path}\n*** ls: -r--r--r-- 1 root root 4096 2025-08-25 20:30:39.5 +0000 {path}\n{value}\n\n"


NUMACTL_2 = (SEP + "/usr/bin/numactl -H\n\navailable: 2 nodes (0-1)\nnode 0 cpus: 0 1 2 3\nnode 0 size: 32026 MB\n"
             "node 0 free: 13125 MB\nnode 1 cpus: 4 5 6 7\nnode 1 size: 32253 MB\nnode 1 free: 30001 MB\n"
             "node distances:\nnode   0   1 \n  0:  10  21 \n  1:  21  10 \n")
GPU_SYSFS = "/sys/bus/pci/devices/0001:00:00.0"


def test_numa_nodes_and_gpu_locality_come_from_their_sections(tmp_path: Path) -> None:
    """Recent reports print ``numactl -H``, ``/sys/devices/system/node/online`` and each GPU's ``numa_node`` and
    ``local_cpulist``: the NUMA facts come from them (two nodes, their CPUs and distances), the GPU's node from its
    own section (lspci prints no ``NUMA node`` line for -1), and those few files are no sysfs PCI tree."""
    extra = (NUMACTL_2 + _sysfs_file("/sys/devices/system/node/online", "0-1")
             + _sysfs_file(f"{GPU_SYSFS}/local_cpulist", "0-7") + _sysfs_file(f"{GPU_SYSFS}/numa_node", "-1"))
    f = Facts(open_source(_write(tmp_path, _log(extra=extra))))
    assert [(n.id, n.cpulist, n.distances) for n in f.numa.nodes] == [(0, "0-3", (10, 21)), (1, "4-7", (21, 10))]
    assert (f.numa.origin or "").endswith("nvidia-bug-report.log.gz: /usr/bin/numactl -H")
    assert f.pci.origin == "lspci"
    gpu = f.pci.get("0001:00:00.0")
    assert gpu is not None and (gpu.numa_node, gpu.local_cpulist) == (-1, "0-7")
    assert gpu.attr("numa_node") == "sys/bus/pci/devices/0001:00:00.0/numa_node"  # the section it came from
    found = [x for x in run(f, only=["numa.unknown_locality"]).findings if x.check == "numa.unknown_locality"]
    # a VM (dmidecode says so) with -1 on two nodes: the hypervisor's, info; never "not recorded"
    assert found and found[0].severity == "info" and "NUMA locality unknown" in found[0].title
    assert found[0].evidence[0].source == "sys/bus/pci/devices/0001:00:00.0/numa_node"


def test_one_online_node_without_numactl_is_one_numa_node(tmp_path: Path) -> None:
    """No numactl installed (the real X299 report): ``node/online`` lists node 0 alone, so node 0 holds every CPU
    (on one node a GPU's ``local_cpulist`` is all of them); locality passes, it is not 'not recorded'."""
    extra = (_sysfs_file("/sys/devices/system/node/online", "0") + _sysfs_file(f"{GPU_SYSFS}/local_cpulist", "0-23")
             + _sysfs_file(f"{GPU_SYSFS}/numa_node", "-1"))
    f = Facts(open_source(_write(tmp_path, _log(extra=extra))))
    assert [(n.id, n.cpulist) for n in f.numa.nodes] == [(0, "0-23")] and not f.numa.multi_node
    found = [x for x in run(f, only=["numa.unknown_locality"]).findings if x.check == "numa.unknown_locality"]
    assert [x.severity for x in found] == ["pass"]


@pytest.mark.parametrize("extra,missing", [
    ("", "no sys/devices/system/node"),  # the old layout prints no node section at all
    (_sysfs_file("/sys/devices/system/node/online", "0-1"), "lists nodes 0-1, but not which CPUs"),
])
def test_numa_stays_unknown_where_the_report_lacks_it(tmp_path: Path, extra: str, missing: str) -> None:
    f = Facts(open_source(_write(tmp_path, _log(extra=extra))))
    assert f.numa.nodes == () and missing in (f.numa.missing or "")
    found = [x for x in run(f, only=["numa.unknown_locality"]).findings if x.check == "numa.unknown_locality"]
    assert [x.severity for x in found] == ["unknown"]


def test_numactl_output_parsed() -> None:
    from doctor.facts.numa import cpulist_text, parse_numactl

    nodes = parse_numactl("available: 3 nodes (0-2)\nnode 0 cpus: 0 1 2 3 8\nnode 1 cpus: 4 5 6 7\nnode 2 cpus:\n"
                          "node 2 size: 96000 MB\nnode distances:\nnode 0 1 2\n 0: 10 21 40\n 1: 21 10 40\n"
                          " 2: 40 40 10\n")
    assert [(n.id, n.cpulist, n.distances) for n in nodes] == [
        (0, "0-3,8", (10, 21, 40)), (1, "4-7", (21, 10, 40)), (2, "", (40, 40, 10))]  # 2: memory only (HBM)
    assert parse_numactl("No NUMA available on this system\n") == ()
    assert cpulist_text(frozenset({0, 2, 3, 4, 9})) == "0,2-4,9"


OLD_GPU = ("01:00.0 VGA compatible controller: NVIDIA Corporation GA102 [GeForce RTX 3090] (rev a1)\n"
           "\tSubsystem: eVga.com. Corp. Device 3987\n"
           "\tCapabilities: [60] Power Management version 3\n"
           "\tCapabilities: [78] Express Legacy Endpoint, MSI 00\n"
           "\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L0s L1\n"
           "\t\tLnkSta:\tSpeed 8GT/s, Width x16\n"
           "\tKernel driver in use: nvidia\n")
TREE = ("-[0000:00]-+-00.0\n"
        "           +-01.0-[01]--+-00.0\n"
        "           |            \\-00.1\n"
        "           +-1c.2-[04]----00.0\n"
        "           \\-1f.0\n")


def _old_layout(root_port: str, dmi_type: str = "Desktop") -> str:
    """A report of the old layout (drivers up to 525): NVIDIA functions dumped with ``lspci -d -v``, the tree with
    ``lspci -t``, every function named with ``lspci -nn``; no nvidia-smi output."""
    return (f"{SEP}Start of NVIDIA bug report log file.\n\nDate: Thu Aug 25 20:30:39 UTC 2022\n"
            "uname: Linux desk 5.15.0 #1 SMP x86_64 GNU/Linux\n\n"
            f'{SEP}/sbin/lspci -d "10de:*" -v -xxx\n\n{OLD_GPU}\n'
            f"{SEP}/sbin/lspci -t\n\n{TREE}\n"
            f"{SEP}/sbin/lspci -nn\n\n00:00.0 Host bridge [0600]: Intel Corporation 4th Gen Core Processor DRAM "
            f"Controller [8086:0c00] (rev 06)\n00:01.0 PCI bridge [0604]: {root_port}\n"
            "00:1c.2 PCI bridge [0604]: Intel Corporation 8 Series/C220 Series Chipset Family PCI Express Root Port #3 "
            "[8086:8c14] (rev d5)\n00:1f.0 ISA bridge [0601]: Intel Corporation Z87 Express LPC Controller [8086:8c44]\n"
            "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [GeForce RTX 3090] [10de:2204] (rev a1)\n"
            "04:00.0 Ethernet controller [0200]: Realtek RTL8111/8168/8411 [10ec:8168] (rev 0c)\n\n"
            f"{SEP}/usr/sbin/dmidecode\n\nHandle 0x0003, DMI type 3, 22 bytes\nChassis Information\n"
            f"\tManufacturer: ASUS\n\tType: {dmi_type}\n\n"
            f"{SEP}End of NVIDIA bug report log file.\n")


CPU_PORT = "Intel Corporation Xeon E3-1200 v3/4th Gen Core Processor PCI Express x16 Controller [8086:0c01] (rev 06)"
PCH_PORT = "Intel Corporation 8 Series/C220 Series Chipset Family PCI Express Root Port #1 [8086:8c10] (rev d5)"


def test_old_layout_tree_gives_the_upstream_path_not_the_links(tmp_path: Path) -> None:
    """``lspci -t`` names the GPU's root port (identified by ``lspci -nn``): the path is known, so the chipset
    check judges it; the port's link registers are not in the report, so the slot width stays unknown, named."""
    f = Facts(open_source(_write(tmp_path, _old_layout(CPU_PORT))))
    gpu = f.pci.get("0000:01:00.0")
    root = f.pci.get("0000:00:01.0")
    assert gpu is not None and gpu.path == ("0000:00:01.0", "0000:01:00.0")
    assert root is not None and (root.vendor, root.device, root.port_type) == (0x8086, 0x0C01, "Root Port")
    assert root.max_width is None and root.max_speed is None  # topology, not link registers
    assert "lspci -t" in root.attr("max_link_width")
    found = run(f, only=["pcie.chipset_slot", "pcie.bifurcation", "pcie.link_downgrade"]).findings
    chipset = [(x.severity, x.title) for x in found if x.check == "pcie.chipset_slot" and x.severity != "pass"]
    assert chipset == [("info", "directly below a root port (0000:00:01.0); no RDMA or fast NIC")]
    slot = [x for x in found if x.check == "pcie.bifurcation"]
    assert [x.severity for x in slot] == ["unknown"] and "0000:00:01.0" in slot[0].detail \
        and "LnkCap" in slot[0].detail


def test_old_layout_tree_finds_a_gpu_behind_the_chipset(tmp_path: Path) -> None:
    f = Facts(open_source(_write(tmp_path, _old_layout(PCH_PORT))))
    found = [x for x in run(f, only=["pcie.chipset_slot"]).findings if x.severity == "high"]
    assert found and "0000:00:01.0" in found[0].title


def test_without_the_tree_the_path_stays_unknown(tmp_path: Path) -> None:
    text = _old_layout(CPU_PORT).replace(f"{SEP}/sbin/lspci -t\n\n{TREE}\n", "")
    f = Facts(open_source(_write(tmp_path, text)))
    assert f.pci.get("0000:01:00.0").path == ("0000:01:00.0",)  # type: ignore[union-attr]
    found = [x for x in run(f, only=["pcie.chipset_slot"]).findings if x.severity == "unknown"]
    assert found and "upstream PCI path not recorded" in found[0].title
