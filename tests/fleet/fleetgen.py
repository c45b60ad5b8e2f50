"""Generate fleets of fixture nodes quickly, as `gnd collect` writes snapshots.

Each node is one ``.tar.gz`` gzip stream laid out as the collector lays it out (the folders that
hold nothing, then links, then files, each sorted, then ``gnd-manifest.json``; ustar headers, pax
only where ustar cannot hold a member; every member stamped with
the node's own collection time; gzip level 6), a copy of a rendered tree with the node's identity
files (hostname, machine-id, the manifest) its own. The tar bytes of a base tree are built once;
each node patches its identity files and time stamps (and header checksums) into a copy, then
compresses it, so a node costs a compression instead of a tree render.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from fixtures.tools.make_node import HEALTHY, NodeSpec, render

MTIME = 1_700_000_000
MANIFEST = "gnd-manifest.json"


def collector_tar(files: dict[str, bytes], links: dict[str, str], manifest: dict[str, object], when: int,
                  legacy: bool = False) -> bytes:
    """The tar bytes `gnd collect` would write for these files, links and manifest at time ``when``:
    only the folders that hold nothing, ustar headers (pax only where ustar cannot hold a member).
    ``legacy``: as earlier collectors wrote them, every folder a member and tarfile's PAX format
    (a pax header for every name over 100 characters), which readers must still read."""
    dirs: set[str] = set()
    for name in [*files, *links]:
        parts = name.split("/")
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    if not legacy:
        dirs -= {name.rpartition("/")[0] for name in [*files, *links, *dirs]}

    def add(tf: tarfile.TarFile, info: tarfile.TarInfo, data: bytes | None = None) -> None:
        plain = not legacy and info.name.isascii() and info.linkname.isascii()
        tf.format = tarfile.USTAR_FORMAT if plain else tarfile.PAX_FORMAT
        try:
            tf.addfile(info, None if data is None else io.BytesIO(data))
        except ValueError:
            tf.format = tarfile.PAX_FORMAT
            tf.addfile(info, None if data is None else io.BytesIO(data))

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for d in sorted(dirs):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, when
            add(tf, info)
        for name, target in sorted(links.items()):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, when
            add(tf, info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, when
            add(tf, info, data)
        body = json.dumps(manifest, indent=2, sort_keys=True).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size, info.mode, info.mtime = len(body), 0o644, when
        add(tf, info, body)
    return buf.getvalue()


def manifest(hostname: str, when: int, specs: dict[str, object] | None = None) -> dict[str, object]:
    return {"collected_at": datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds"),
            "hostname": hostname, "specs": dict(specs or {})}


def node_files(hostname: str, node_id: int) -> dict[str, bytes]:
    """The files that make a copy of a base tree into another machine."""
    machine_id = hashlib.sha256(f"machine-id|{node_id}".encode()).hexdigest()[:32]
    return {"etc/hostname": f"{hostname}\n".encode(), "proc/sys/kernel/hostname": f"{hostname}\n".encode(),
            "etc/machine-id": f"{machine_id}\n".encode()}


_IRQ_COUNT = re.compile(rb"(?<= )(\d+)(?= )")
_MEMINFO = re.compile(rb"^((?:MemFree|MemAvailable|Buffers|Cached|Active|Inactive):\s+)(\d+)", re.MULTILINE)
_SMI_READING = re.compile(rb"(<(?:gpu_temp|memory_temp|power_draw|instant_power_draw|average_power_draw)>)(\d+)")


def volatile_files(files: dict[str, bytes], node_id: int) -> dict[str, bytes]:
    """What differs between snapshots of two alike machines besides identity: interrupt counts,
    free and cached memory, GPU temperatures and power draw (values of other lengths, so every
    later tar header moves), as on a real fleet. A healthy node stays healthy."""
    k = node_id * 7919
    out: dict[str, bytes] = {}
    if "proc/interrupts" in files:
        out["proc/interrupts"] = _IRQ_COUNT.sub(
            lambda m: b"%d" % (int(m.group(1)) * (2 + node_id % 5) + (k + m.start()) % 99991), files["proc/interrupts"])
    if "proc/meminfo" in files:
        out["proc/meminfo"] = _MEMINFO.sub(
            lambda m: m.group(1) + b"%d" % (int(m.group(2)) - (k + m.start()) % 9_999_991), files["proc/meminfo"])
    smi = "commands/nvidia-smi_-q_-x"
    if smi in files:
        out[smi] = _SMI_READING.sub(lambda m: m.group(1) + b"%d" % (25 + (k + m.start()) % 60), files[smi])
    return out


_PID_DIR = re.compile(r"^proc/(\d+)(?=/|$)")


def renumbered(files: dict[str, bytes], links: dict[str, str], node_id: int) -> tuple[dict[str, bytes], dict[str, str]]:
    """The tree with its user processes (pid 1000 and up) under other pids, as on another machine
    (or after a restart): their /proc directories renamed, and the ids inside their status files.
    The order of the renamed directories among the others may change, as ``gnd collect`` sorts names."""
    offset = 1 + (node_id * 7919) % 50_000
    pids = {m.group(1) for name in [*files, *links] if (m := _PID_DIR.match(name)) and int(m.group(1)) >= 1000}
    if not pids:
        return files, links
    ids = re.compile(rb"(?<![0-9])(" + b"|".join(p.encode() for p in sorted(pids, key=len, reverse=True)) + rb")(?![0-9])")

    def name(path: str) -> str:
        m = _PID_DIR.match(path)
        return path if not m or m.group(1) not in pids else f"proc/{int(m.group(1)) + offset}{path[m.end():]}"

    def body(path: str, data: bytes) -> bytes:
        if not path.endswith("/status") or not _PID_DIR.match(path):
            return data
        return ids.sub(lambda m: b"%d" % (int(m.group(1)) + offset), data)

    return {name(k): body(k, v) for k, v in files.items()}, {name(k): v for k, v in links.items()}


def _compress(data: bytes | bytearray, when: int) -> bytes:
    return gzip.compress(bytes(data), compresslevel=6, mtime=when)


def spec_tarball(dest: Path, spec: NodeSpec) -> Path:
    """A full snapshot tarball of ``spec`` (for the nodes that differ in more than identity)."""
    tree = render(spec)
    when = MTIME + spec.node_id
    dest.write_bytes(_compress(collector_tar(tree.files, tree.links, manifest(spec.hostname, when), when), when))
    return dest


def _headers(tar: bytes | bytearray) -> tuple[list[int], dict[str, tuple[int, int]]]:
    """Offsets of every header block, and of each regular member's data (name -> (offset, size))."""
    heads: list[int] = []
    data: dict[str, tuple[int, int]] = {}
    pos = 0
    while pos + 512 <= len(tar) and any(tar[pos:pos + 512]):
        heads.append(pos)
        size = int(bytes(tar[pos + 124:pos + 136]).split(b"\0")[0].strip() or b"0", 8)
        if tar[pos + 156:pos + 157] in (b"0", b"\0"):
            data[bytes(tar[pos:pos + 100]).split(b"\0")[0].decode()] = (pos + 512, size)
        pos += 512 + -(-size // 512) * 512
    return heads, data


class FleetWriter:
    """Writes many identity-only variants of one base spec as single-stream snapshot tarballs."""

    def __init__(self, base: NodeSpec = HEALTHY) -> None:
        tree = render(base)
        self.files, self.links = dict(tree.files), dict(tree.links)
        self._template: tuple[bytes, list[int], dict[str, tuple[int, int]]] | None = None

    def write(self, dest: Path, hostname: str, node_id: int, files: dict[str, bytes] | None = None,
              links: dict[str, str] | None = None, specs: dict[str, object] | None = None,
              renumber: bool = False) -> Path:
        """A copy of the base tree as machine ``hostname``, collected at its own time; ``files`` and
        ``links`` replace or add members (a node that differs from its neighbours in a file or two);
        ``specs``: the manifest's status of each spec (``{"nvidia_smi_q": {"status": "error", ...}}``);
        ``renumber``: its user processes run under other pids (see :func:`renumbered`), after ``files``."""
        when = MTIME + node_id
        ident = {**node_files(hostname, node_id), MANIFEST: json.dumps(manifest(hostname, when, specs), indent=2,
                                                                       sort_keys=True).encode()}
        if not files and not links and not specs and not renumber:
            patched = self._patched(ident, when)
            if patched is not None:
                dest.write_bytes(_compress(patched, when))
                return dest
        all_files = {**self.files, **{k: v for k, v in ident.items() if k != MANIFEST}, **(files or {})}
        all_links = {**self.links, **(links or {})}
        if renumber:
            all_files, all_links = renumbered(all_files, all_links, node_id)
        tar = collector_tar(all_files, all_links, manifest(hostname, when, specs), when)
        dest.write_bytes(_compress(tar, when))
        return dest

    def _patched(self, ident: dict[str, bytes], when: int) -> bytearray | None:
        """The template's bytes with these identity files and time stamps, or None if a length differs."""
        if self._template is None:
            tar = collector_tar({**self.files, **{k: v for k, v in ident.items() if k != MANIFEST}}, self.links,
                                json.loads(ident[MANIFEST]), MTIME)
            heads, data = _headers(tar)
            self._template = (tar, heads, data)
        tar, heads, data = self._template
        if any(data[name][1] != len(body) for name, body in ident.items()):
            return None
        buf = bytearray(tar)
        for name, body in ident.items():
            offset = data[name][0]
            buf[offset:offset + len(body)] = body
        stamp = b"%011o\0" % when
        for h in heads:
            if buf[h + 156:h + 157] in (b"x", b"g"):
                continue  # tarfile writes pax headers with time 0
            buf[h + 136:h + 148] = stamp
            buf[h + 148:h + 156] = b"        "
            buf[h + 148:h + 155] = b"%06o\0" % sum(buf[h:h + 512])
        return buf


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
