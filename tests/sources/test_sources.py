"""Sources: the same reads over directories, tarballs and sosreports; confinement and bad input."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from doctor.errors import DoctorError
from doctor.sources import LIVE, SNAPSHOT, SOSREPORT, LiveSource, open_source
from doctor.sources.tree import MAX_FILE_BYTES, Link, OsTree, OverlayTree


def _tree(root: Path) -> Path:
    dev = root / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "current_link_speed").write_text("16.0 GT/s PCIe\n")
    (dev.parent / "vendor").write_text("0x8086\n")
    devices = root / "sys/bus/pci/devices"
    devices.mkdir(parents=True)
    os.symlink("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0", devices / "0000:01:00.0")
    os.symlink("../../../devices/pci0000:00/0000:00:01.0", devices / "0000:00:01.0")
    (root / "commands").mkdir()
    (root / "commands/lspci_-vvv").write_text("00:01.0 PCI bridge: Intel\n")
    return root


def _tar(tmp: Path, members: list[tuple[str, bytes | None, str | None]], name: str = "s.tar.gz") -> Path:
    path = tmp / name
    with tarfile.open(path, "w:gz") as tf:
        for member, data, link in members:
            info = tarfile.TarInfo(member)
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tf.addfile(info)
            else:
                info.size = len(data or b"")
                tf.addfile(info, io.BytesIO(data or b""))
    return path


def test_directory_snapshot_reads_through_symlinks(tmp_path: Path) -> None:
    src = open_source(str(_tree(tmp_path)))
    assert src.kind == SNAPSHOT
    assert src.read_line("sys/bus/pci/devices/0000:01:00.0/vendor") == "0x10de"
    assert src.realpath("sys/bus/pci/devices/0000:01:00.0") == "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
    assert src.command("lspci_vvv").text == "00:01.0 PCI bridge: Intel\n"
    assert src.command("nvidia_smi_xml").text is None
    assert "commands/nvidia-smi_-q_-x" in (src.command("nvidia_smi_xml").reason or "")


def test_tarball_snapshot_equals_directory(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    out = tmp_path / "snap.tar.gz"
    with tarfile.open(out, "w:gz") as tf:
        tf.add(root, arcname="gpu-node-07")  # a single top folder is stripped
    src = open_source(str(out))
    assert src.kind == SNAPSHOT
    assert src.read_line("sys/bus/pci/devices/0000:01:00.0/current_link_speed") == "16.0 GT/s PCIe"
    assert src.glob("sys/bus/pci/devices/*/vendor") == [
        "sys/bus/pci/devices/0000:00:01.0/vendor", "sys/bus/pci/devices/0000:01:00.0/vendor"]


def test_sosreport_directory_answers_commands_from_sos_names(tmp_path: Path) -> None:
    (tmp_path / "sos_commands/pci").mkdir(parents=True)
    (tmp_path / "sos_commands/pci/lspci_-nnvv").write_text("00:00.0 Host bridge [0600]: Intel [8086:1234]\n")
    (tmp_path / "sos_reports").mkdir()
    src = open_source(str(tmp_path))
    assert src.kind == SOSREPORT
    out = src.command("lspci_vvv")
    assert out.text and out.where == "sos_commands/pci/lspci_-nnvv"


def test_live_source_is_default() -> None:
    assert open_source(None).kind == LIVE
    assert open_source("/").kind == LIVE


def test_links_never_leave_the_root(tmp_path: Path) -> None:
    root = _tree(tmp_path / "root")
    secret = tmp_path / "outside.txt"
    secret.write_text("secret\n")
    os.symlink("../../../../outside.txt", root / "sys/escape")
    os.symlink("/etc/passwd", root / "sys/abs")
    src = open_source(str(root))
    assert src.read_text("sys/escape") is None  # '..' clamps at the root, as in a chroot
    assert src.read_text("sys/abs") is None  # absolute targets are taken inside the root


def test_link_loops_and_fifos_read_as_missing(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    os.symlink("b", root / "sys/a")
    os.symlink("a", root / "sys/b")
    os.mkfifo(root / "sys/fifo")
    src = open_source(str(root))
    assert src.read_text("sys/a") is None
    assert src.read_text("sys/fifo") is None  # would block forever if opened blindly


def test_reads_are_capped(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    with open(root / "sys/huge", "wb") as fh:
        fh.truncate(MAX_FILE_BYTES + 10)
    src = open_source(str(root))
    assert src.read_bytes("sys/huge") is None
    assert src.read_bytes("sys/huge", cap=100) is None


@pytest.mark.parametrize("members, message", [
    ([("../evil", b"x", None)], "escapes"),
    ([("/etc/evil", b"x", None)], "absolute path"),
])
def test_malicious_tarballs_are_refused(tmp_path: Path, members: list, message: str) -> None:
    path = _tar(tmp_path, [("proc/cmdline", b"ro\n", None), *members])
    with pytest.raises(DoctorError, match=message):
        open_source(str(path))
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize("target", ["/etc/passwd", "../../etc/passwd", "../../../../../../etc/passwd"])
def test_link_targets_resolve_inside_the_tarball(tmp_path: Path, target: str) -> None:
    """Absolute or escaping link targets are taken inside the archive's root, as a chroot would."""
    path = _tar(tmp_path, [("proc/cmdline", b"ro\n", None), ("etc/passwd", b"inside\n", None),
                           ("sys/link", None, target)])
    src = open_source(str(path))
    assert src.read_text("sys/link") == "inside\n"  # never the analysing machine's /etc/passwd
    assert src.readlink("sys/link") == target


def test_truncated_tarball_is_one_clear_error(tmp_path: Path) -> None:
    good = _tar(tmp_path, [(f"proc/f{i}", os.urandom(2000), None) for i in range(20)])
    bad = tmp_path / "cut.tar.gz"
    bad.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(DoctorError, match="truncated or corrupt"):
        open_source(str(bad))


@pytest.mark.parametrize("setup, message", [
    (lambda p: p / "missing", "no such file"),
    (lambda p: (p / "notes.txt").write_text("hello") and p / "notes.txt", "not a directory or a tarball"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "not a snapshot or sosreport"),
])
def test_bad_sources_give_one_line(tmp_path: Path, setup, message: str) -> None:
    with pytest.raises(DoctorError, match=message) as err:
        open_source(str(setup(tmp_path)))
    assert "\n" not in str(err.value)


def test_overlay_replaces_adds_links_and_removes(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    tree = OverlayTree(OsTree(str(root)), {
        "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/vendor": "0x15b3\n",
        "sys/class/net/eth9": Link("../../devices/pci0000:00/0000:00:01.0/0000:01:00.0"),
        "commands/lspci_-vvv": None,
    })
    from doctor.sources import SnapshotSource

    src = SnapshotSource(tree, "overlay")
    assert src.read_line("sys/bus/pci/devices/0000:01:00.0/vendor") == "0x15b3"
    assert src.read_line("sys/class/net/eth9/current_link_speed") == "16.0 GT/s PCIe"
    assert src.command("lspci_vvv").text is None
    assert "eth9" in src.listdir("sys/class/net")


def test_live_source_with_root_reads_recorded_commands(tmp_path: Path) -> None:
    src = LiveSource(str(_tree(tmp_path)))
    assert src.command("lspci_vvv").text == "00:01.0 PCI bridge: Intel\n"


def test_a_prefetched_command_answers_as_one_run_on_demand(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``prefetch`` starts a command early on the live host; asking for it gives what running it then gives."""
    from doctor import specs

    script = tmp_path / "slow-echo"
    script.write_text("#!/bin/sh\nsleep 0.2\necho \"hello $LC_ALL\"\necho warn >&2\n")
    script.chmod(0o755)
    fake = {"echo": specs.Spec("echo", "test", argv=(str(script),), timeout=5),
            "missing": specs.Spec("missing", "test", argv=("no-such-program-gnd",))}
    real_get = specs.get
    monkeypatch.setattr(specs, "get", lambda name: fake.get(name) or real_get(name))
    live = LiveSource("/")
    live.prefetch(["echo", "missing"])
    assert set(live._started) == {"echo", "missing"}
    out = live.command("echo")
    assert (out.text, out.where, out.returncode) == ("hello C\n", str(script), 0)
    assert out.duration_s is not None and out.duration_s >= 0.2
    assert live.command("missing").reason == "no-such-program-gnd not found on PATH"
    assert live._started == {} and LiveSource("/").command("echo").text == out.text  # as run on demand
    recorded = LiveSource(str(_tree(tmp_path / "snap")))  # a recorded root runs nothing
    recorded.prefetch(["echo"])
    assert recorded._started == {}
    snapshot = open_source(str(_tree(tmp_path / "snap2")))
    snapshot.prefetch(["echo"])
    assert snapshot.command("lspci_vvv").text == "00:01.0 PCI bridge: Intel\n"
