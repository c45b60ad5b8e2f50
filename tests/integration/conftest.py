"""Shared rules of the integration tests: each test starts its engine itself (Slurm, Prometheus, Dask...)
on 127.0.0.1 only, and skips with a clear reason where the engine cannot be installed or started here.
With GND_REQUIRE_INTEGRATION=1 (CI) every such skip is a failure instead, so CI cannot pass by skipping."""

from __future__ import annotations

import os
import shutil
import socket

import pytest

REQUIRED = os.environ.get("GND_REQUIRE_INTEGRATION", "") == "1"


def require(reason: str) -> None:
    """The engine is not usable here: skip with `reason`, or fail with it under GND_REQUIRE_INTEGRATION=1."""
    if REQUIRED:
        pytest.fail(f"GND_REQUIRE_INTEGRATION=1 but: {reason}", pytrace=False)
    pytest.skip(reason)


def require_tool(name: str, package: str) -> str:
    """The full path of executable `name`, or require() naming the distribution package that provides it."""
    for found in (shutil.which(name), f"/usr/sbin/{name}", f"/usr/bin/{name}"):
        if found and os.access(found, os.X_OK):
            return found
    require(f"{name} not found (install the Debian package {package})")
    raise AssertionError("unreachable")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking (the engine binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
