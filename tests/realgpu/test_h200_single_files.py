"""The same real H200 (fixtures/real-h200-vm/PROVENANCE.md) seen through one nvidia-smi file at a time.

``h200-xml`` holds only ``nvidia-smi -q -x`` and ``h200-text`` only ``nvidia-smi -q`` (as a sosreport
keeps it), both recorded on that node with driver 580.159.04 (serial and UUID replaced). Each alone
must give the GPU, its Gen5 x16 link and no alarm.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import facts, run

HERE = Path(__file__).resolve().parent
ALARMS = {"low", "medium", "high", "critical"}


@pytest.mark.parametrize("case", ["h200-xml", "h200-text"])
def test_one_nvidia_smi_file_is_enough(case: str) -> None:
    f = facts(base=HERE / case)
    (gpu,) = f.gpus.gpus
    assert gpu.name == "NVIDIA H200" and gpu.address == "0000:00:06.0"
    assert gpu.pci is not None and (gpu.pci.cur_speed, gpu.pci.cur_width) == (32.0, 16)
    assert gpu.runtime is not None and gpu.runtime.power_limit_w == gpu.runtime.default_power_limit_w == 700.0
    result = run(f)
    alarms = [f"{x.check} {x.severity}: {x.title}" for x in result.findings if x.severity in ALARMS]
    assert alarms == []
