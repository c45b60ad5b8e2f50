"""What the Dask and object-storage tests share: the engines they need, and a task that kills its worker.

``require`` skips a test whose engine cannot be imported, saying which and how to install it, or fails
it when ``GND_REQUIRE_INTEGRATION=1`` (CI installs the engines: a skip there would hide a missing step).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

INSTALL = "pip install -e '.[test]'"


def require(*modules: str) -> None:
    """Skip (or, with GND_REQUIRE_INTEGRATION=1, fail) unless every module imports."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        reason = f"needs {', '.join(missing)} ({INSTALL})"
        if os.environ.get("GND_REQUIRE_INTEGRATION") == "1":
            pytest.fail(f"GND_REQUIRE_INTEGRATION=1 but this integration test {reason}")
        pytest.skip(reason)


#: the node whose batch kills the worker that runs it, wherever it runs (see :func:`poisoned_batch`)
POISON = "gpu-node-007.tar.gz"


def poisoned_batch(items: list[tuple[int, str]], cache_dir: str | None) -> dict[str, Any]:
    """:func:`doctor.fleet.dask_engine.run_batch`, except that a batch holding :data:`POISON` ends its
    worker process at once (as a node that crashes or exhausts a worker would), every time it is tried."""
    from doctor.fleet.dask_engine import run_batch

    if any(path.endswith(POISON) for _, path in items):
        os._exit(1)
    return run_batch(items, cache_dir)
