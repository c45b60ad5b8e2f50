"""Suite-wide ordering: the integration tests (real Slurm, Prometheus, Dask and S3 engines) run last.

A Dask LocalCluster and moto's threaded S3 server leave threads and imported state in the pytest
process after they stop; the unit tests that fork (the PDF worker refuses to fork a process with
other threads) or read installed metadata must not run after them.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: "/tests/integration/" in str(item.path).replace("\\", "/"))
