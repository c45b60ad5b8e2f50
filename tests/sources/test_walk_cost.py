"""Issue 23 class 5: resolving many links that share deep folders costs a bounded number of file-system
questions per link, not one per component of every path (``build_pci`` asked ``lstat`` 35 times per
device: 745,000 calls at 20,000 devices). Counted, not timed."""

from __future__ import annotations

import os
from pathlib import Path

from doctor.sources.tree import OsTree


def _sysfs(root: Path, devices: int, depth: int) -> list[str]:
    """``devices`` endpoints under one chain of ``depth`` bridges, each linked from sys/bus/pci/devices."""
    bus = root / "sys/bus/pci/devices"
    bus.mkdir(parents=True)
    chain = "pci0000:00/" + "/".join(f"0000:{i:02x}:00.0" for i in range(depth))
    names = []
    for n in range(devices):
        name = f"0000:{0x80 + n // 32:02x}:{n % 32:02x}.0"
        (root / "sys/devices" / chain / name).mkdir(parents=True)
        (root / "sys/devices" / chain / name / "vendor").write_text("0x10de\n")
        os.symlink(f"../../../devices/{chain}/{name}", bus / name)
        names.append(name)
    return names


class Counting(OsTree):
    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.asked = 0

    def kind(self, path: str) -> str | None:
        self.asked += 1
        return super().kind(path)


def test_links_sharing_deep_folders_cost_a_few_lookups_each(tmp_path: Path) -> None:
    names = _sysfs(tmp_path, devices=256, depth=12)
    tree = Counting(str(tmp_path))
    for name in names:
        assert tree.resolve(f"sys/bus/pci/devices/{name}/vendor") is not None
    assert tree.read(tree.resolve(f"sys/bus/pci/devices/{names[-1]}/vendor") or "") == b"0x10de\n"
    # each link: itself, its target's last folder and the file read; the shared chain once
    assert tree.asked <= 4 * len(names) + 32, tree.asked
