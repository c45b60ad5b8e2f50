"""One output writer: every command's -o (and the TUI export, collected snapshots) refuses a destination
that is not a regular file (device, FIFO, socket, directory, link) with exit 2 and one line, never
follows a link there, refuses two outputs naming one file, and leaves no temporary file on any failure.

Device nodes are made with ``os.mknod`` in a temporary folder (this suite runs as root in CI), never
/dev/null itself."""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from doctor.errors import DoctorError
from doctor.output import atomic_file, check_outputs, write_output
from tests.hostile.conftest import SICK

#: every command that writes an -o file, as argv with OUT where the destination goes
COMMANDS: dict[str, list[str]] = {
    "check": ["check", str(SICK), "--format", "json", "-o", "OUT"],
    "report": ["report", str(SICK), "--format", "md", "-o", "OUT"],
    "diff": ["diff", str(SICK), str(SICK), "-o", "OUT"],
    "fleet": ["fleet", str(SICK), "-o", "OUT"],
    "collect": ["collect", "--root", str(SICK), "-o", "OUT"],
    "baseline": ["baseline", str(SICK), "-o", "OUT"],
    "fix-script": ["fix-script", str(SICK), "-o", "OUT"],
    "fix-script --rollback": ["fix-script", str(SICK), "-o", "{tmp}/f.sh", "--rollback", "OUT"],
    "fleet --save-json": ["fleet", str(SICK), "-o", "{tmp}/f.txt", "--save-json", "OUT"],
}


def _char_device(path: Path) -> Path:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is, in a temporary folder
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _socket(path: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


KINDS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "device": (_char_device, "is a device, not a regular file"),
    "fifo": (_fifo, "is a FIFO, not a regular file"),
    "socket": (_socket, "is a socket, not a regular file"),
    "directory": (_directory, "is a directory"),
}


def _argv(name: str, out: Path, tmp: Path) -> list[str]:
    return [str(out) if a == "OUT" else a.replace("{tmp}", str(tmp)) for a in COMMANDS[name]]


def _stray(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".gnd-"))


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_output_refuses_what_is_not_a_regular_file(gnd: Any, tmp_path: Path, command: str, kind: str) -> None:
    make, words = KINDS[kind]
    dest = make(tmp_path / "dest")
    before = os.lstat(dest)
    gnd(*_argv(command, dest, tmp_path)).refused(words)
    after = os.lstat(dest)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (before.st_mode, before.st_ino, before.st_rdev)
    assert _stray(tmp_path) == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_link_at_the_destination_is_never_followed(gnd: Any, tmp_path: Path, command: str) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    link = tmp_path / "out"
    link.symlink_to(victim)
    gnd(*_argv(command, link, tmp_path)).refused("symbolic link")
    assert victim.read_text() == "keep me\n" and link.is_symlink()
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "would-be-created")
    gnd(*_argv(command, dangling, tmp_path)).refused("symbolic link")
    assert not (tmp_path / "would-be-created").exists()


@pytest.mark.parametrize("argv", [
    ["fix-script", str(SICK), "-o", "{tmp}/a.sh", "--rollback", "{tmp}/./a.sh"],
    ["fleet", str(SICK), "-o", "{tmp}/a.json", "--save-json", "{tmp}/a.json"],
    ["fleet", str(SICK), "-o", "{tmp}/a.txt", "--save-html", "{tmp}/hard.txt"],
    ["check", str(SICK), "-o", "{tmp}/a.txt", "--redact", "--redact-map", "{tmp}/a.txt"],
    ["collect", "--root", str(SICK), "-o", "{tmp}/a.tar.gz", "--redact", "--redact-map", "{tmp}/a.tar.gz"],
])
def test_two_outputs_naming_one_file_are_refused(gnd: Any, tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "a.txt").write_text("x")
    os.link(tmp_path / "a.txt", tmp_path / "hard.txt")  # another name, the same inode
    outcome = gnd(*[a.replace("{tmp}", str(tmp_path)) for a in argv])
    outcome.refused()
    assert "same file" in outcome.err or "must differ" in outcome.err or "must not be" in outcome.err
    assert (tmp_path / "a.txt").read_text() == "x"


def test_an_output_naming_an_input_by_another_name(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text("{}")
    os.link(src, tmp_path / "alias.json")
    with pytest.raises(DoctorError, match="would overwrite the input"):
        check_outputs([str(tmp_path / "alias.json")], [str(src)])


def test_no_temporary_file_is_left_after_an_interrupt(tmp_path: Path) -> None:
    dest = tmp_path / "out.json"
    dest.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_file(str(dest)) as fh:
        fh.write(b"half")
        raise KeyboardInterrupt
    assert dest.read_text() == "old" and _stray(tmp_path) == []


def test_no_temporary_file_is_left_when_the_disk_is_full(tmp_path: Path) -> None:
    """A file-size limit makes the write fail as a full disk does (EFBIG): one line, exit 2, nothing left."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    dest = tmp_path / "big.json"
    out = subprocess.run([sys.executable, "-m", "doctor", "check", str(SICK), "--format", "json", "-o", str(dest)],
                         capture_output=True, text=True, preexec_fn=limit)
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip().count("\n") == 0 and "cannot write" in out.stderr
    assert not dest.exists() and _stray(tmp_path) == []


def test_writing_replaces_a_regular_file_atomically(tmp_path: Path) -> None:
    dest = tmp_path / "r.txt"
    dest.write_text("old")
    write_output(str(dest), "new")
    assert dest.read_text() == "new" and _stray(tmp_path) == []
    write_output(str(tmp_path / "s.sh"), b"#!/bin/sh\n", 0o755)
    assert os.stat(tmp_path / "s.sh").st_mode & 0o777 == 0o755


def test_tui_export_goes_through_the_writer(tmp_path: Path) -> None:
    from doctor.runner import Result
    from reports.formats import export

    fifo = _fifo(tmp_path / "export.json")
    with pytest.raises(RuntimeError, match="is a FIFO"):
        export(Result(findings=[], checks=[], source={}, inventory={}), "json", str(fifo))


#: every command with an input that can be a folder, as argv with SRC for that folder and OUT for -o
FOLDER_INPUTS: dict[str, list[str]] = {
    "check": ["check", "SRC", "-o", "OUT"],
    "report": ["report", "SRC", "--format", "json", "-o", "OUT"],
    "fix-script": ["fix-script", "SRC", "-o", "OUT", "--rollback", "{tmp}/r.sh"],
    "fix-script --rollback": ["fix-script", "SRC", "-o", "{tmp}/f.sh", "--rollback", "OUT"],
    "baseline": ["baseline", "SRC", "-o", "OUT"],
    "diff": ["diff", str(SICK), "SRC", "-o", "OUT"],
    "fleet": ["fleet", "SRC", "-o", "OUT"],
    "fleet --save-json": ["fleet", "SRC", "-o", "{tmp}/f.txt", "--save-json", "OUT"],
    "collect --root": ["collect", "--root", "SRC", "-o", "OUT"],
    "check --redact-map": ["check", "SRC", "--redact", "--redact-map", "OUT"],
    "watch": ["watch", "SRC", "--duration", "0", "-o", "OUT"],
}


@pytest.mark.parametrize("command", sorted(FOLDER_INPUTS))
def test_no_output_lands_inside_an_input_folder(gnd: Any, tmp_path: Path, command: str) -> None:
    """Issue 23 class 3: ``gnd check snap/ -o snap/proc/cmdline`` replaced a file the run had just read;
    any output inside a folder the command reads (a snapshot directory, a folder of fleet results,
    ``collect --root``), under any spelling (a link to the folder), is refused before anything runs."""
    src = tmp_path / "node"
    (src / "proc").mkdir(parents=True)
    (src / "proc" / "cmdline").write_text("BOOT_IMAGE=/vmlinuz ro\n")
    (tmp_path / "alias").symlink_to(src)
    for dest in (src / "proc" / "cmdline", src / "new.out", tmp_path / "alias" / "other.out"):
        argv = [str(dest) if a == "OUT" else str(src) if a == "SRC" else a.replace("{tmp}", str(tmp_path))
                for a in FOLDER_INPUTS[command]]
        gnd(*argv).refused("inside the input folder")
        assert sorted(p.relative_to(src).as_posix() for p in src.rglob("*")) == ["proc", "proc/cmdline"]
        assert (src / "proc" / "cmdline").read_text() == "BOOT_IMAGE=/vmlinuz ro\n"


def test_every_path_argument_of_every_command_is_an_input_or_an_output() -> None:
    """The outputs are checked against every input (``inputs_of``): a new argument naming a file or
    folder must be declared as one or the other, or an output could clobber it unseen."""
    from doctor.cli import COMMANDS, build_parser
    from doctor.commands.common import INPUT_ARGUMENTS, OUTPUT_ARGUMENTS

    paths = {"FILE", "PATH", "DIR", "TOML", "SOURCE", "RESULT", "BEFORE", "AFTER"}
    undeclared = []
    for name in COMMANDS:
        parser, _ = build_parser(only=name)
        sub = next(a for a in parser._actions if a.dest == "command")
        for action in sub.choices[name]._actions:  # type: ignore[attr-defined]
            if action.metavar in paths and action.dest not in (*INPUT_ARGUMENTS, *OUTPUT_ARGUMENTS):
                undeclared.append(f"{name} {action.dest}")
    assert undeclared == []


def test_tui_export_never_lands_on_or_inside_the_source(tmp_path: Path) -> None:
    """The TUI's export path is typed by hand: the snapshot it is showing, or a file inside that
    snapshot's folder, is refused like any command's -o."""
    from doctor.runner import Result
    from reports.formats import export

    snap = tmp_path / "node.tar.gz"
    snap.write_bytes(b"snapshot")
    folder = tmp_path / "node"
    folder.mkdir()
    for source, dest in ((snap, snap), (folder, folder / "report.json")):
        result = Result(findings=[], checks=[], source={"kind": "snapshot", "path": str(source)}, inventory={})
        with pytest.raises(RuntimeError, match="input"):
            export(result, "json", str(dest))
    assert snap.read_bytes() == b"snapshot" and list(folder.iterdir()) == []
