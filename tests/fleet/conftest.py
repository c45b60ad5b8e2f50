"""Shared nodes for the fleet tests: a healthy node and the same node before its fix (GPU 3 at x8,
kernel-default socket buffers), written once per session."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fixtures.tools.make_node import HEALTHY, KERNEL_DEFAULT_SYSCTLS, NodeSpec, build_node

GPU3 = "0000:3c:00.0"
GPU3_PORT = "0000:39:02.0"
BUFFERS = ("net.core.rmem_max", "net.core.wmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
#: The node before its fix: GPU 3 trained at x8, socket buffers at the kernel's defaults.
BEFORE_FIX: NodeSpec = replace(HEALTHY, gpu_links={3: (2.5, 8)},
                               sysctl_overrides={k: KERNEL_DEFAULT_SYSCTLS[k] for k in BUFFERS})


@pytest.fixture(scope="session")
def node_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(before, after) snapshot directories of one node, gpu-node-07."""
    root = tmp_path_factory.mktemp("pair")
    before, after = root / "before", root / "after"
    build_node(before, BEFORE_FIX)
    build_node(after, HEALTHY)
    return before, after
