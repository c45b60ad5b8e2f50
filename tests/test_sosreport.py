"""A sosreport has no sysfs PCI tree: facts come from lspci -nnvv, sysctl -a, nvidia-smi -q and ps."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.facts import Facts
from doctor.sources import SOSREPORT, open_source

LSPCI = """\
15:01.0 PCI bridge [0604]: Intel Corporation Device [8086:352a] (rev 04) (prog-if 00 [Normal decode])
\tBus: primary=15, secondary=16, subordinate=19, sec-latency=0
\tCapabilities: [40] Express (v2) Root Port (Slot+), MSI 00
\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s, Width x16
\tKernel driver in use: pcieport

16:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tBus: primary=16, secondary=17, subordinate=19, sec-latency=0
\tCapabilities: [68] Express (v2) Upstream Port, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 32GT/s, Width x16

17:01.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])
\tBus: primary=17, secondary=18, subordinate=18, sec-latency=0
\tCapabilities: [68] Express (v2) Downstream Port (Slot-), MSI 00
\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
\t\tLnkSta:\tSpeed 32GT/s, Width x8 (downgraded)
\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-

18:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
\tCapabilities: [60] Express (v2) Endpoint, MSI 00
\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
\t\tLnkSta:\tSpeed 32GT/s, Width x8 (downgraded)
\tKernel driver in use: nvidia
\tNUMA node: 0
"""

SMI = """\
==============NVSMI LOG==============

Timestamp                                 : Sun Nov 29 19:00:00 2026
Driver Version                            : 550.90.07
CUDA Version                              : 12.4

Attached GPUs                             : 1
GPU 00000000:18:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Persistence Mode                      : Enabled
    Performance State                     : P0
    Utilization
        Gpu                               : 97 %
        Memory                            : 40 %
    Clocks Event Reasons
        Idle                              : Not Active
"""

PS = """\
USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND
root           1  0.0  0.0 167000 12000 ?        Ss   Nov28   0:05 /sbin/init
root        4242 99.0 10.0 9999999 999 ?        Sl   Nov28 900:00 python3 -m vllm.entrypoints.openai.api_server --enforce-eager --api-key sk-abcdefghijklmnop1234
root           -  0.0    -      -     - -        Sl   Nov28   0:00 -
"""


def make_sosreport(root: Path) -> Path:
    files = {
        "sos_commands/pci/lspci_-nnvv": LSPCI,
        "sos_commands/nvidia/nvidia-smi_-q": SMI,
        "sos_commands/kernel/sysctl_-a": "net.core.rmem_max = 212992\nnet.ipv4.tcp_rmem = 4096\t131072\t6291456\n"
                                          "kernel.numa_balancing = 1\nsysctl: permission denied on key 'x'\n",
        "sos_commands/process/ps_auxwwwm": PS,
        "sos_reports/manifest.json": json.dumps({"version": "4.5", "start_time": "2026-11-29 19:00:00.1"}),
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz ro intel_iommu=on\n",
        "hostname": "sos-node\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_facts_from_sosreport_files(tmp_path: Path) -> None:
    src = open_source(str(make_sosreport(tmp_path / "sosreport-node-1")))
    assert src.kind == SOSREPORT
    f = Facts(src)
    assert f.pci.origin == "lspci"
    gpu = f.pci.devices["0000:18:00.0"]
    assert gpu.path == ("0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:18:00.0")
    assert [f.pci.devices[a].port_type for a in gpu.path[:-1]] == ["Root Port", "Upstream Port", "Downstream Port"]
    assert (gpu.cur_width, gpu.max_width, gpu.numa_node, gpu.driver) == (8, 16, 0, "nvidia")
    assert f.pci.devices["0000:17:01.0"].acs == {"SrcValid": True, "TransBlk": False, "ReqRedir": True,
                                                 "CmpltRedir": True, "UpstreamFwd": True, "EgressCtrl": False,
                                                 "DirectTrans": False}
    (g,) = f.gpus.gpus
    assert g.runtime is not None and g.activity == "busy" and f.gpus.driver_version == "550.90.07"
    assert f.sysctls.get("net.ipv4.tcp_rmem") == "4096 131072 6291456"
    assert f.sysctls.origins["kernel.numa_balancing"] == "sos_commands/kernel/sysctl_-a"
    proc = f.process(4242)
    assert proc is not None and "--enforce-eager" in proc.argv
    assert "sk-abcdefghijklmnop1234" not in " ".join(proc.argv)
    assert f.host.hostname == "sos-node"
    assert src.collected_at() == "2026-11-29T19:00:00.1"


def test_sosreport_tarball_checks_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_sosreport(tmp_path / "sosreport-node-1")
    archive = tmp_path / "sosreport-node-1.tar.xz"
    with tarfile.open(archive, "w:xz") as tf:
        tf.add(root, arcname=root.name)
    code = main(["check", str(archive), "--format", "json"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code in (0, 1) and data["source"]["kind"] == "sosreport"
    assert "sk-abcdefghijklmnop1234" not in out


@pytest.mark.skipif(shutil.which("sos") is None or os.geteuid() != 0, reason="needs Debian's sosreport and root")
def test_real_sosreport_of_this_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real `sos report` of the machine running the tests parses without a traceback."""
    subprocess.run(["sos", "report", "--batch", "--tmp-dir", str(tmp_path), "-o",
                    "pci,kernel,process,networking,processor,numa,host"],
                   capture_output=True, timeout=300, check=True)
    (archive,) = [p for p in tmp_path.glob("sosreport-*.tar.*") if not p.name.endswith((".md5", ".sha256"))]
    code = main(["check", str(archive), "--format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    data = json.loads(out)
    assert data["source"]["kind"] == "sosreport" and data["inventory"]["pci_origin"] == "lspci"
