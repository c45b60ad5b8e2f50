"""Generate fleets of fixture nodes quickly: one rendered tree, many tarballs differing in a few files.

Each node is a ``.tar.gz`` made of two gzip members: the shared base tree (compressed once) and a
small tail holding the node's own files (hostname, machine-id) plus the end-of-archive blocks.
Tar readers take the last copy of a repeated member, and gzip readers read concatenated members,
so a node costs a few hundred bytes of CPU work instead of a tree render.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import replace
from pathlib import Path

from fixtures.tools.make_node import HEALTHY, NodeSpec, render

MTIME = 1_700_000_000


def _tar_bytes(files: dict[str, bytes], links: dict[str, str], end: bool) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for rel, target in sorted(links.items()):
            info = tarfile.TarInfo(rel)
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, MTIME
            tf.addfile(info)
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(rel)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o644
            tf.addfile(info, io.BytesIO(data))
    data = buf.getvalue()
    if not end:
        # drop the two zero blocks and padding tarfile appends at close
        data = data.rstrip(b"\0")
        data += b"\0" * (-len(data) % 512)
    return data


def node_files(hostname: str, node_id: int) -> dict[str, bytes]:
    """The files that make a copy of a base tree into another machine."""
    machine_id = hashlib.sha256(f"machine-id|{node_id}".encode()).hexdigest()[:32]
    return {"etc/hostname": f"{hostname}\n".encode(), "proc/sys/kernel/hostname": f"{hostname}\n".encode(),
            "etc/machine-id": f"{machine_id}\n".encode()}


def spec_tarball(dest: Path, spec: NodeSpec) -> Path:
    """A full snapshot tarball of ``spec`` (for the nodes that differ in more than identity)."""
    tree = render(spec)
    dest.write_bytes(gzip.compress(_tar_bytes(tree.files, tree.links, end=True), compresslevel=1, mtime=0))
    return dest


class FleetWriter:
    """Writes many identity-only variants of one base spec as tarballs."""

    def __init__(self, base: NodeSpec = HEALTHY) -> None:
        tree = render(base)
        blob = _tar_bytes(tree.files, tree.links, end=False)
        self.base_gz = gzip.compress(blob, compresslevel=1, mtime=0)

    def write(self, dest: Path, hostname: str, node_id: int, files: dict[str, bytes] | None = None,
              links: dict[str, str] | None = None) -> Path:
        """A copy of the base tree as machine ``hostname``; ``files``/``links`` replace or add members
        in the small second gzip member (a node that differs from its neighbours in a file or two)."""
        tail = _tar_bytes({**node_files(hostname, node_id), **(files or {})}, links or {}, end=True)
        dest.write_bytes(self.base_gz + gzip.compress(tail, compresslevel=1, mtime=0))
        return dest


def make_fleet(dest: Path, count: int, outliers: dict[int, NodeSpec] | None = None,
               bases: int = 3) -> list[Path]:
    """``count`` nodes ``gpu-node-NNN.tar.gz`` under ``dest``; node i uses ``outliers[i]`` when given.

    Normal nodes cycle through ``bases`` renders of the healthy spec with different identities
    (MACs, GIDs, serials), so grouping must look past identity.
    """
    dest.mkdir(parents=True, exist_ok=True)
    writers = [FleetWriter(replace(HEALTHY, hostname=f"gpu-base-{b}", node_id=900 + b)) for b in range(bases)]
    out = []
    for i in range(count):
        name = f"gpu-node-{i:03d}"
        path = dest / f"{name}.tar.gz"
        if outliers and i in outliers:
            spec_tarball(path, replace(outliers[i], hostname=name, node_id=1000 + i))
        else:
            writers[i % bases].write(path, name, 1000 + i)
        out.append(path)
    return out


def result_dict(spec: NodeSpec) -> dict[str, object]:
    """``gnd check --format json`` of ``spec``'s tree, as a dict, without writing the tree to disk."""
    from doctor.facts import Facts
    from doctor.registry import load_checks
    from doctor.runner import run_checks
    from doctor.sources import SnapshotSource
    from doctor.sources.tree import Link, OverlayTree
    from tests.helpers import empty_tree

    tree = render(spec)
    changes: dict[str, bytes | str | Link | None] = dict(tree.files)
    changes.update({rel: Link(target) for rel, target in tree.links.items()})
    source = SnapshotSource(OverlayTree(empty_tree(), changes), f"/snapshots/{spec.hostname}")
    return run_checks(Facts(source), checks=load_checks()[0]).to_dict()


def json_variant(template: str, hostname: str, node_id: int) -> str:
    """A saved result (JSON text) of another machine with the same configuration as ``template``."""
    import json

    data = json.loads(template)
    files = node_files(hostname, node_id)
    machine_id = files["etc/machine-id"].decode().strip()
    data["source"]["hostname"] = hostname
    data["source"]["path"] = f"/snapshots/{hostname}.tar.gz"
    host = data["inventory"]["host"]
    host["hostname"], host["machine_id"] = hostname, machine_id
    digest = data["inventory"].get("digest") or {}
    if digest:
        digest["host.hostname"], digest["host.machine_id"] = hostname, machine_id
    return json.dumps(data)
