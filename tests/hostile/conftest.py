"""The adversarial corpus: hostile archives and files, generated at test time (small on disk).

Every test runs the real command line in this process under an alarm, so a hang fails the test
instead of stalling CI, and asserts the exact outcome: the exit status and, for a refusal, one
line on stderr that names the problem.
"""

from __future__ import annotations

import io
import signal
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from doctor.cli import main
from doctor.collect import collect
from doctor.sources import LiveSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SICK = FIXTURES / "hgx-h100-sick"


@dataclass(frozen=True)
class Outcome:
    code: int
    out: str
    err: str

    def refused(self, *words: str) -> None:
        """Exit 2 with exactly one ``gnd: error:`` line on stderr containing ``words``."""
        assert self.code == 2, (self.code, self.err[-2000:])
        lines = self.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("gnd: error: "), self.err[-2000:]
        for word in words:
            assert word in lines[0], (word, lines[0])

    def ran(self) -> None:
        """The doctor ran (0 or 1, findings or not) without a traceback."""
        assert self.code in (0, 1), (self.code, self.err[-2000:])
        assert "Traceback" not in self.err


class Hung(Exception):
    pass


@pytest.fixture
def gnd(capsys: pytest.CaptureFixture[str]) -> Iterator[object]:
    """``gnd(*argv, timeout=120) -> Outcome``: the CLI in this process, ended by SIGALRM if it hangs (a read of a
    FIFO or device that never returns). A hang guard, not a speed bound: a run takes about a second."""

    def _alarm(signum: int, frame: object) -> None:
        raise Hung("gnd blocked")

    def run(*argv: str, timeout: int = 120) -> Outcome:
        capsys.readouterr()
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(timeout)
        try:
            code = main(list(argv))
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        out, err = capsys.readouterr()
        return Outcome(code, out, err)

    yield run


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `gnd collect` tarball of the sick H100 fixture node (about 1,800 members)."""
    if not (SICK / "sys").is_dir():
        pytest.skip("fixture hgx-h100-sick not generated")
    path = tmp_path_factory.mktemp("snap") / "sick.tar.gz"
    collect(LiveSource(str(SICK), run_commands=False), str(path))
    return path


def tar_bytes(members: list[tuple[str, bytes | None, str | None]], mode: str = "w",
              fmt: int = tarfile.GNU_FORMAT) -> bytes:
    """An archive of ``(name, data, link_target)`` members (``data`` None and no target: a directory)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=fmt, encoding="utf-8",  # type: ignore[call-overload]
                      errors="surrogateescape") as tf:
        for name, data, link in members:
            info = tarfile.TarInfo(name)
            info.mtime = 1700000000
            if link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, link
                tf.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


#: The smallest snapshot the doctor accepts, to hang hostile members on.
BASE: list[tuple[str, bytes | None, str | None]] = [
    ("proc/cmdline", b"BOOT_IMAGE=/vmlinuz ro quiet\n", None),
    ("proc/sys/kernel/hostname", b"node1\n", None),
]
