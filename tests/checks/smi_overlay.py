"""Overlays of the healthy fixture's ``nvidia-smi -q -x`` (fields changed inside one GPU's block) and
generated node variants, for the data-centre GPU checks."""

from __future__ import annotations

import re

from doctor.facts import Facts
from doctor.sources import SnapshotSource
from doctor.sources.tree import Link, OverlayTree
from fixtures.tools.make_node import NodeSpec, render
from tests.helpers import HEALTHY, empty_tree

SMI = "commands/nvidia-smi_-q_-x"
# GPU index -> PCI address on the HGX fixtures
GPUS = ("0000:18:00.0", "0000:1a:00.0", "0000:3a:00.0", "0000:3c:00.0",
        "0000:9a:00.0", "0000:9c:00.0", "0000:ba:00.0", "0000:bc:00.0")


def smi(changes: dict[int, dict[str, str]], text: str | None = None) -> str:
    """``{gpu index: {"tag" or "parent/tag": value}}`` applied to the healthy XML (each tag must exist)."""
    text = text if text is not None else (HEALTHY / SMI).read_text()
    for index, fields in changes.items():
        bus = GPUS[index][5:7].upper()
        start = text.index(f'<gpu id="00000000:{bus}:00.0">')
        end = text.index("</gpu>", start)
        block = text[start:end]
        for path, value in fields.items():
            parent, _, tag = path.rpartition("/")
            pattern = (rf"(<{parent}>\s*(?:<[^/][^>]*>[^<]*</[^>]*>\s*)*?)<{tag}>[^<]*</{tag}>" if parent
                       else rf"()<{tag}>[^<]*</{tag}>")
            block, n = re.subn(pattern, lambda m, t=tag, v=value: f"{m.group(1)}<{t}>{v}</{t}>", block, count=1)
            assert n, path
        text = text[:start] + block + text[end:]
    return text


def with_process(index: int, pid: int, name: str = "python3", text: str | None = None) -> str:
    """Add a compute process to one GPU's process list."""
    text = text if text is not None else (HEALTHY / SMI).read_text()
    bus = GPUS[index][5:7].upper()
    start = text.index(f'<gpu id="00000000:{bus}:00.0">')
    at = text.index("</processes>", start)
    entry = (f"<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A</compute_instance_id>"
             f"<pid>{pid}</pid><type>C</type><process_name>{name}</process_name><used_memory>512 MiB</used_memory>"
             "</process_info>\n")
    return text[:at] + entry + text[at:]


def generated(spec: NodeSpec) -> Facts:
    """Facts over a node rendered in memory by the fixture generator (no files written)."""
    tree = render(spec)
    changes: dict[str, bytes | str | Link | None] = dict(tree.files)
    changes.update({k: Link(v) for k, v in tree.links.items()})
    return Facts(SnapshotSource(OverlayTree(empty_tree(), changes), spec.hostname))
