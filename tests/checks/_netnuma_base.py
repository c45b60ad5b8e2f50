"""Base trees and paths for the NUMA/network/runtime check tests (the committed HGX fixtures)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import healthy, sick  # noqa: F401  (re-exported for the NUMA/net tests)

ROOT_PID = 4242  # the vLLM API server of the generated node (fixtures/tools/make_node.py)
UNIT = "etc/systemd/system/vllm.service"


def real(rel: str, base: Path | None = None) -> str:
    """The resolved path of ``rel`` (e.g. ``sys/class/infiniband/mlx5_0``) relative to the base root."""
    import os

    root = base or healthy()
    return os.path.relpath(os.path.realpath(root / rel), os.path.realpath(root))


def environ(pid: int = ROOT_PID, base: Path | None = None, **values: str | None) -> dict[str, bytes]:
    """Overlay for ``/proc/<pid>/environ`` with variables set (str) or removed (None)."""
    root = base or healthy()
    raw = (root / f"proc/{pid}/environ").read_bytes()
    env = dict(r.split("=", 1) for r in raw.decode().split("\0") if "=" in r)
    for key, value in values.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return {f"proc/{pid}/environ": b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())}


def cmdline(*argv: str, pid: int = ROOT_PID) -> dict[str, bytes]:
    return {f"proc/{pid}/cmdline": b"".join(a.encode() + b"\0" for a in argv)}


def gid_table(device: str, rows: list[tuple[int, str, str | None, str | None]], base: Path | None = None,
              size: int = 16) -> dict[str, str | None]:
    """Replace a port's GID table: ``(index, gid, type or None, ndev or None)``; other slots become zero
    GIDs without ``gid_attrs`` files (as the kernel shows unused slots)."""
    port = real(f"sys/class/infiniband/{device}", base) + "/ports/1"
    out: dict[str, str | None] = {}
    given = {r[0]: r for r in rows}
    for i in range(max(size, max(given, default=0) + 1)):
        idx, gid, typ, ndev = given.get(i, (i, "0000:0000:0000:0000:0000:0000:0000:0000", None, None))
        out[f"{port}/gids/{i}"] = gid + "\n"
        out[f"{port}/gid_attrs/types/{i}"] = None if typ is None else typ + "\n"
        out[f"{port}/gid_attrs/ndevs/{i}"] = None if ndev is None else ndev + "\n"
    return out
