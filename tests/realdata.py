"""Unpack the real recordings in ``../shared/realdata`` (never committed) for tests; skip when absent."""

from __future__ import annotations

import atexit
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

REALDATA = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"

#: recording name -> (archive relative to REALDATA, kind)
RECORDINGS = {
    "32intel64-2p8co2t+8ve": ("hwloc/32intel64-2p8co2t+8ve.tar.bz2", "tar"),
    "40intel64-2g2n4c+pcilocality": ("hwloc/40intel64-2g2n4c+pcilocality.tar.bz2", "tar"),
    "32em64t-2n8c+dax+nvme+mic+dimms": ("hwloc/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2", "tar"),
    "nvidiagpunumanodes": ("hwloc/nvidiagpunumanodes.tar.bz2", "tar"),
    "2pa-pcidomain32bits": ("hwloc/2pa-pcidomain32bits.tar.bz2", "tar"),
    "procfs-fixtures": ("prometheus-procfs/fixtures.ttar", "ttar"),
    "ghw-accel-nvidia": ("ghw/linux-amd64-accel-nvidia.tar.gz", "tar"),
}


def available() -> bool:
    return REALDATA.is_dir()


def _safe_target(dest: Path, name: str) -> Path:
    path = (dest / name).resolve()
    if not str(path).startswith(str(dest.resolve())):
        raise ValueError(f"unsafe member {name}")
    return path


def unpack_ttar(archive: Path, dest: Path) -> None:
    """Unpack prometheus/procfs's ttar text archive format (Path/Lines/Mode, Directory, SymlinkTo)."""
    lines = archive.read_text(encoding="utf-8", errors="surrogateescape").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("Directory: "):
            _safe_target(dest, line[11:]).mkdir(parents=True, exist_ok=True)
        elif line.startswith("Path: "):
            target = _safe_target(dest, line[6:])
            target.parent.mkdir(parents=True, exist_ok=True)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if nxt.startswith("SymlinkTo: "):
                if target.is_symlink() or target.exists():
                    target.unlink()
                os.symlink(nxt[11:], target)
                i += 2
                continue
            if nxt.startswith("Lines: "):
                count = int(nxt[7:])
                body = lines[i + 2:i + 2 + count]
                text = "\n".join(body)
                if text.endswith("EOF"):
                    text = text[:-3]
                elif count:
                    text += "\n"
                target.write_bytes(text.replace("NULLBYTE", "\0").encode("utf-8", "surrogateescape"))
                i += 2 + count
                continue
        i += 1


_CACHE: dict[str, Path] = {}


def unpack(name: str, dest: Path | None = None) -> Path:
    """Unpack one recording (once per test session) and return the folder that mirrors ``/``.

    Recordings are read-only inputs, so every test shares one unpacked copy.
    """
    if name in _CACHE and _CACHE[name].exists():
        return _CACHE[name]
    if dest is None:
        dest = Path(tempfile.mkdtemp(prefix="gnd-realdata-"))
        atexit.register(shutil.rmtree, dest, True)
    _CACHE[name] = _unpack(name, dest)
    return _CACHE[name]


def _unpack(name: str, dest: Path) -> Path:
    archive, kind = RECORDINGS[name]
    path = REALDATA / archive
    out = dest / name
    if out.exists():
        return _root(out)
    out.mkdir(parents=True)
    if kind == "ttar":
        unpack_ttar(path, out)
    else:
        with tarfile.open(path, "r:*") as tf:
            for member in tf.getmembers():
                _safe_target(out, member.name)
                if member.issym() and member.linkname.startswith("/"):
                    continue
            tf.extractall(out)  # noqa: S202 - names checked above; data from a pinned recording
    return _root(out)


def _root(out: Path) -> Path:
    entries = [p for p in out.iterdir()]
    if len(entries) == 1 and entries[0].is_dir() and entries[0].name not in ("sys", "proc"):
        return entries[0]
    return out
