"""Per-process limits and mounts that decide whether NCCL can pin memory and share it.

``/proc/<pid>/limits`` sample (``Max locked memory`` is what RDMA memory registration needs)::

    Limit                     Soft Limit           Hard Limit           Units
    Max locked memory         8388608              8388608              bytes

``/proc/<pid>/mounts`` keeps only the ``/dev/shm`` line (snapshots store nothing else; see
``doctor.secrets.sanitize_mounts``)::

    shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k 0 0

Hugepages come from ``/proc/meminfo`` and ``/sys/kernel/mm/hugepages/hugepages-<size>kB/nr_hugepages``.
Everything is read lazily, per process, and cached; ``None`` means not recorded.
"""

from __future__ import annotations

import re

from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source

UNLIMITED = -1
_SIZE_RE = lazy(r"^(?P<n>\d+)(?P<unit>[kmgtKMGT]?)$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@record
class MemlockLimit:
    """``Max locked memory`` soft/hard in bytes (``UNLIMITED`` = -1)."""

    soft: int
    hard: int
    origin: str

    @property
    def unlimited(self) -> bool:
        return self.soft == UNLIMITED


@record
class ShmMount:
    """``/dev/shm`` as the process sees it: ``size`` in bytes, None when set as a share of RAM or not at all."""

    fstype: str
    options: str
    size: int | None
    origin: str


@record
class HugePages:
    """Per page size (kB): pages allocated; ``origin`` per size; ``meminfo_total`` of the default size."""

    allocated: dict[int, int]
    origins: dict[int, str]
    default_size_kb: int | None


def _limit(word: str) -> int | None:
    if word == "unlimited":
        return UNLIMITED
    return int(word) if word.isdigit() else None


def parse_memlock(text: str, origin: str) -> MemlockLimit | None:
    for line in text.splitlines():
        if line.startswith("Max locked memory"):
            words = line[len("Max locked memory"):].split()
            if len(words) >= 2:
                soft, hard = _limit(words[0]), _limit(words[1])
                if soft is not None and hard is not None:
                    return MemlockLimit(soft, hard, origin)
    return None


def shm_size(options: str) -> int | None:
    """Bytes from a tmpfs ``size=`` option; None for ``size=50%`` or no size (both scale with RAM)."""
    for opt in options.split(","):
        key, _, value = opt.partition("=")
        if key == "size":
            m = _SIZE_RE.match(value)
            if m:
                return int(m.group("n")) * _UNITS[m.group("unit").lower()]
    return None


def parse_shm(text: str, origin: str) -> ShmMount | None:
    found = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == "/dev/shm":
            found = ShmMount(fields[2], fields[3], shm_size(fields[3]), origin)  # the last mount wins
    return found


class ProcFiles:
    """Reads ``/proc/<pid>/limits`` and ``/proc/<pid>/mounts`` on demand, once per pid."""

    def __init__(self, src: Source) -> None:
        self._src = src
        self._memlock: dict[int, MemlockLimit | None] = {}
        self._shm: dict[int, tuple[bool, ShmMount | None]] = {}

    def memlock(self, pid: int) -> MemlockLimit | None:
        if pid not in self._memlock:
            path = f"proc/{pid}/limits"
            text = self._src.read_text(path, cap=1 << 14)
            self._memlock[pid] = parse_memlock(text, path) if text else None
        return self._memlock[pid]

    def shm(self, pid: int) -> tuple[bool, ShmMount | None]:
        """(mount table recorded, the /dev/shm mount or None when the table has none)."""
        if pid not in self._shm:
            path = f"proc/{pid}/mounts"
            text = self._src.read_text(path, cap=1 << 20)
            self._shm[pid] = (text is not None, parse_shm(text, path) if text else None)
        return self._shm[pid]


def build_hugepages(src: Source) -> HugePages:
    allocated: dict[int, int] = {}
    origins: dict[int, str] = {}
    for name in src.listdir("sys/kernel/mm/hugepages"):
        m = re.fullmatch(r"hugepages-(\d+)kB", name)
        path = f"sys/kernel/mm/hugepages/{name}/nr_hugepages"
        text = src.read_text(path, cap=64) if m else None
        if m and text and text.strip().isdigit():
            allocated[int(m.group(1))] = int(text.strip())
            origins[int(m.group(1))] = path
    default = None
    meminfo = src.read_text("proc/meminfo", cap=1 << 16) or ""
    total = None
    for line in meminfo.splitlines():
        key, _, value = line.partition(":")
        words = value.split()
        if key == "Hugepagesize" and words and words[0].isdigit():
            default = int(words[0])
        elif key == "HugePages_Total" and words and words[0].isdigit():
            total = int(words[0])
    if default is not None and total is not None and default not in allocated:
        allocated[default] = total
        origins[default] = "proc/meminfo"
    return HugePages(allocated, origins, default)
