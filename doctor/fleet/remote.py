"""Sources in object storage or on a web server (``s3://``, ``gs://``, ``http(s)://``, ``file://``), read
through fsspec with the bounds of local files.

An object is fetched whole into a private temporary folder under its own name, analysed there as a
local file (the one reader and its refusals: :func:`doctor.fleet.fleet.analyse`) and removed. What
may be fetched is bounded before any byte is read (the size the store lists) and while reading (a
byte past the limit stops it): a saved result as :data:`doctor.result_io.MAX_JSON_BYTES`, anything
else as :data:`doctor.sources.tree.MAX_STREAM_BYTES` (a tarball may not stream more). fsspec and its
back-ends (the ``distributed`` extra) are imported only when a URL is given.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from doctor.errors import DoctorError

#: Schemes a source URL may have (an allowlist: anything else is refused, never guessed at).
SCHEMES = ("s3", "gs", "gcs", "http", "https", "file")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_EXTRA = "install the 'distributed' extra: pip install 'gpu-node-doctor[distributed]'"
_BLOCK = 4 << 20


def scheme(path: str) -> str | None:
    """The URL scheme of ``path`` (lower case), or None for a local path."""
    m = _URL.match(path)
    return m.group(1).lower() if m else None


def is_url(path: str) -> bool:
    return scheme(path) is not None


def cap_for(url: str) -> tuple[int, str]:
    """(most bytes, what it is) an object named ``url`` may hold, the bounds its local reader sets."""
    from doctor.fleet.fleet import TARBALL_SUFFIXES

    low = url.lower()
    if low.endswith(".json"):
        from doctor.result_io import MAX_JSON_BYTES

        return MAX_JSON_BYTES, "JSON result"
    from doctor.sources.tree import MAX_STREAM_BYTES

    return MAX_STREAM_BYTES, "tarball" if low.endswith(TARBALL_SUFFIXES) else "source"


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def over_cap(url: str, size: object) -> str | None:
    """The one-line refusal of an object of ``size`` bytes (as listed) at ``url``, or None when it may be read."""
    cap, what = cap_for(url)
    if isinstance(size, int) and size > cap:
        return f"{url}: the {what} is larger than the {_size_text(cap)} limit ({_size_text(size)})"
    return None


def filesystem(url: str) -> Any:
    """The fsspec file system for ``url``; DoctorError (one line) for a scheme not allowed or not installed."""
    name = scheme(url)
    if name not in SCHEMES:
        raise DoctorError(f"{url}: unsupported scheme {name}://; give s3://, gs://, http(s)://, file:// or a local path")
    try:
        import fsspec
    except ImportError:
        raise DoctorError(f"{url}: reading URLs needs fsspec; {_EXTRA}") from None
    try:
        return fsspec.filesystem(name)
    except (ImportError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:200]
        raise DoctorError(f"{url}: no file system for {name}:// ({reason}); {_EXTRA}") from None


def _with_scheme(url: str, path: str) -> str:
    name = scheme(url) or "file"
    return path if is_url(path) else f"{name}://{path.lstrip('/') if name != 'file' else path}"


def _looks_like_source(name: str) -> bool:
    from doctor.fleet.fleet import TARBALL_SUFFIXES

    low = name.lower()
    return low.endswith(TARBALL_SUFFIXES) or low.endswith(".json")


def expand(pattern: str) -> list[str]:
    """The URLs of the objects ``pattern`` names: an object, a glob, or a prefix (a "folder": its
    objects one level down named like sources, ``.tar.gz``, ``.json``...). A pattern that names
    nothing comes back alone (reported as unreadable, as a missing local path is)."""
    fs = filesystem(pattern)
    try:
        if any(c in pattern for c in "*?["):
            found = fs.glob(pattern, detail=True)
            urls = sorted(_with_scheme(pattern, p) for p, info in found.items() if info.get("type") != "directory")
        elif scheme(pattern) not in ("http", "https") and fs.isdir(pattern):
            names = [str(info["name"]) for info in fs.ls(pattern, detail=True) if info.get("type") != "directory"]
            urls = sorted(_with_scheme(pattern, n) for n in names
                          if _looks_like_source(n) and not os.path.basename(n).startswith("."))
        else:
            return [pattern]
    except DoctorError:
        raise
    except Exception as exc:  # each back-end words its own failures: one line, whatever they are
        raise DoctorError(f"{pattern}: cannot list it ({_reason(exc)})") from None
    return urls or [pattern]


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


@contextlib.contextmanager
def fetched(url: str) -> Iterator[str]:
    """A local copy of the object at ``url``, in a private temporary folder, under the object's own name
    (the readers tell a tarball or a result by it); removed on exit. One-line DoctorError for an object
    that is missing, over its bound (:func:`cap_for`) or cannot be read: never a partial copy."""
    fs = filesystem(url)
    cap, what = cap_for(url)
    name = os.path.basename(url.rstrip("/")) or "source"
    folder = tempfile.mkdtemp(prefix="gnd-fetch-")
    try:
        local = os.path.join(folder, name)
        try:
            with fs.open(url, "rb", block_size=_BLOCK) as src:
                refusal = over_cap(url, getattr(src, "size", None))
                if refusal:
                    raise DoctorError(refusal)
                with open(local, "xb") as dst:
                    copied = 0
                    while True:
                        block = src.read(min(_BLOCK, cap + 1 - copied))
                        if not block:
                            break
                        copied += len(block)
                        if copied > cap:
                            raise DoctorError(f"{url}: the {what} is larger than the {_size_text(cap)} limit")
                        dst.write(block)
        except FileNotFoundError:
            raise DoctorError(f"{url}: no such object") from None
        except PermissionError:
            raise DoctorError(f"{url}: permission denied") from None
        except DoctorError:
            raise
        except Exception as exc:  # each back-end words its own failures: one line, whatever they are
            raise DoctorError(f"{url}: cannot fetch it ({_reason(exc)})") from None
        yield local
    finally:
        shutil.rmtree(folder, ignore_errors=True)
