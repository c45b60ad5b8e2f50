"""A folder read by name (doctor.sources.Folder) answers exactly what the source answers for the same
paths, with the same confinement: links resolved inside the root, caps noted, nothing but regular
files read (PCI facts read every device's attributes through it)."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

from doctor.sources import SnapshotSource, Source
from doctor.sources.tree import OsTree, TarTree

DEVICE = "sys/bus/pci/devices/0000:17:00.0"
NAMES = ("vendor", "escape", "inside", "big", "fifo", "sub", "dangling", "absent", "loop")


@pytest.fixture(params=["directory", "tarball"])
def src(tmp_path: Path, request: pytest.FixtureRequest) -> Source:
    root = tmp_path / "root"
    real = root / "sys/devices/pci0000:00/0000:17:00.0"
    (real / "sub").mkdir(parents=True)
    (real / "sub/a").write_text("x")
    (real / "vendor").write_text("0x10de\n")
    (real / "big").write_bytes(b"1" * 70_000)  # over read_line's 64 KiB
    os.mkfifo(real / "fifo")
    (root / "etc").mkdir()
    (root / "etc/passwd").write_text("inside the root\n")
    (tmp_path / "outside").write_text("outside the root\n")
    os.symlink("/etc/passwd", real / "escape")  # absolute: taken from the root, as a chroot would
    os.symlink("../../../../etc/passwd", real / "inside")
    os.symlink("../../../../../outside", real / "dangling")  # climbs above the root: stays at the root
    os.symlink("loop", real / "loop")
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    os.symlink("../../../devices/pci0000:00/0000:17:00.0", root / DEVICE)
    if request.param == "tarball":
        path = tmp_path / "node.tar"
        with tarfile.open(path, "w") as tf:
            tf.add(root, arcname="node")
        return SnapshotSource(TarTree(str(path)), str(path))
    return SnapshotSource(OsTree(str(root)), str(root))


def test_a_folder_reads_what_the_source_reads(src: Source) -> None:
    folder = src.folder(DEVICE)
    assert folder.real == "sys/devices/pci0000:00/0000:17:00.0"
    for name in NAMES:
        path = f"{DEVICE}/{name}"
        assert folder.read_bytes(name) == src.read_bytes(path), name
        assert folder.read_line(name) == src.read_line(path), name
        assert folder.exists(name) == src.exists(path), name
        assert folder.link_name(name) == src.link_name(path), name
        assert folder.listdir(name) == src.listdir(path), name
    assert folder.read_line("escape") == "inside the root"
    assert folder.read_bytes("dangling") is None and folder.read_bytes("fifo") is None
    assert folder.listdir("sub") == ["a"]


def test_a_capped_read_is_noted_as_through_the_source(src: Source) -> None:
    assert src.folder(DEVICE).read_line("big") is None
    assert f"{DEVICE}/big" in src.unread


def test_a_missing_folder_has_no_names(src: Source) -> None:
    folder = src.folder("sys/bus/pci/devices/0000:99:00.0")
    assert folder.real is None and folder.kinds == {}
    assert folder.read_bytes("vendor") is None and folder.listdir("sub") == [] and not folder.exists("vendor")


def test_a_tarballs_folders_after_its_top_folder_is_cut_are_those_a_fresh_listing_gives(src: Source) -> None:
    tree = src.tree
    if not isinstance(tree, TarTree):
        pytest.skip("a directory has no top folder cut")
    kept = tree._children
    tree._children = None  # the cut keeps the folders it listed, renamed; listed again here
    assert kept == tree._folders() and "sys" in kept[""]
