"""The PCIe topology as a display tree: NUMA node -> root port -> switch -> GPU/NIC, with link health.

Built from ``Result.inventory`` (plain data), so it works for a live run and a saved result alike.
Switch downstream ports are folded into the device below them (they share its link). Link health
is the verdict stored in each record (:mod:`doctor.derived.links`), judged by the same function
for an older result that lacks it; nothing here compares speeds or widths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from doctor.derived.links import DOWN, POWER_SAVING, judge_record
from doctor.facts.pcie_gen import generation
from doctor.i18n import _

#: Port types folded into their child (drawn as the child's link)
FOLDED = frozenset({"Downstream Port"})
OK, BAD, IDLE = "ok", "bad", "idle"


@dataclass
class TopoNode:
    """One line of the tree. ``device`` is the inventory entry (None for a NUMA node)."""

    head: str  # kind, address, link: always visible
    tail: str  # names: cut first on a narrow screen
    kind: str  # numa, root, switch, bridge, gpu, nic
    device: dict[str, Any] | None = None
    link: str = OK  # ok, bad (trained below what both ends support), idle (speed only, GPU idle)
    link_text: str = ""
    names: tuple[str, ...] = ()  # address, netdevs, RDMA devices: what findings call it
    children: list[TopoNode] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.head}  {self.tail}" if self.tail else self.head


def speed_text(speed: float | None, width: int | None) -> str:
    """``Gen5 x16`` (or ``24 GT/s x4`` for an unknown rate, ``?`` for missing values)."""
    if speed is None and width is None:
        return "?"
    gen = generation(speed)
    rate = f"Gen{gen}" if gen else (f"{speed:g} GT/s" if speed is not None else "?")
    return f"{rate} x{width if width is not None else '?'}"


def link_state(dev: Mapping[str, Any], parent: Mapping[str, Any] | None,
               gpu_idle: bool = False) -> tuple[str, str]:
    """(state, text) of the link between ``dev`` and its upstream port, from the one link verdict: bad when
    degraded or down, ``idle`` for an idle GPU's speed-only drop (power saving), else ok."""
    cur = speed_text(dev.get("cur_speed"), dev.get("cur_width"))
    verdict = judge_record(dev, parent, idle=gpu_idle)
    if verdict is None or not (verdict.degraded or verdict.state == POWER_SAVING):
        return OK, cur
    text = _("{now} of {expected}").format(now=cur, expected=speed_text(verdict.exp_speed, verdict.exp_width))
    if verdict.state == POWER_SAVING:
        return IDLE, text + " " + _("(GPU idle: may be power saving)")
    if verdict.state == DOWN:
        return BAD, text + " " + _("(link down or device in D3cold)")
    return BAD, text


def _short_name(name: str | None) -> str:
    """Drop the vendor prefix: ``NVIDIA Corporation GH100 [H100 SXM5 80GB]`` -> ``H100 SXM5 80GB``."""
    if not name:
        return ""
    if "[" in name and name.rstrip().endswith("]"):
        return name[name.index("[") + 1:-1].strip()
    return name


def build_topology(inventory: Mapping[str, Any]) -> list[TopoNode]:
    """NUMA nodes (then "NUMA unknown") each holding root ports, switches and GPU/NIC endpoints."""
    devices: dict[str, dict[str, Any]] = {d["address"]: d for d in inventory.get("topology") or []
                                          if isinstance(d, dict) and d.get("address")}
    gpus = {g.get("address"): g for g in inventory.get("gpus") or [] if isinstance(g, dict)}
    nics = {n.get("address"): n for n in inventory.get("nics") or [] if isinstance(n, dict)}

    def shown_parent(addr: str) -> str | None:
        parent = devices[addr].get("parent")
        while parent in devices and devices[parent].get("port_type") in FOLDED:
            parent = devices[parent].get("parent")
        return parent if parent in devices else None

    nodes: dict[str, TopoNode] = {}
    for addr, dev in sorted(devices.items()):
        if dev.get("port_type") in FOLDED:
            continue
        parent = devices.get(dev.get("parent") or "")
        gpu, nic = gpus.get(addr), nics.get(addr)
        idle = dev.get("kind") == "gpu" and not (gpu and gpu.get("activity") == "busy")
        state, text = link_state(dev, parent, gpu_idle=idle)
        names: list[str] = [addr]
        if dev.get("kind") == "gpu":
            kind = "gpu"
            label = f"GPU {gpu['index']}" if gpu and gpu.get("index") is not None else "GPU"
        elif dev.get("kind") == "nic":
            kind, label = "nic", _("NIC")
            if nic:
                names += [*(nic.get("netdevs") or []), *(r.split("/")[0] for r in nic.get("rdma") or [])]
        elif dev.get("port_type") == "Root Port" or parent is None:
            kind, label = "root", _("Root port")
        elif dev.get("port_type") == "Upstream Port":
            kind, label = "switch", _("Switch")
        else:
            kind, label = "bridge", _("Bridge")
        extra = " ".join(n for n in names[1:] if "/" not in n)
        tail = "  ".join(p for p in (extra, _short_name(dev.get("name"))) if p)
        nodes[addr] = TopoNode(head=f"{label}  {addr}  {text}", tail=tail, kind=kind, device=dev, link=state,
                               link_text=text, names=tuple(dict.fromkeys(names)))
    roots: list[TopoNode] = []
    for addr, node in nodes.items():
        up = shown_parent(addr)
        if up is not None and up in nodes:
            nodes[up].children.append(node)
        else:
            roots.append(node)
    cpus = {n.get("id"): n.get("cpulist") for n in inventory.get("numa") or [] if isinstance(n, dict)}
    by_numa: dict[int | None, list[TopoNode]] = {}
    for node in roots:
        numa = node.device.get("numa_node") if node.device else None
        by_numa.setdefault(numa if isinstance(numa, int) and numa >= 0 else None, []).append(node)
    for numa_id in cpus:
        if isinstance(numa_id, int):
            by_numa.setdefault(numa_id, [])
    out: list[TopoNode] = []
    for numa_id in sorted(by_numa, key=lambda n: (n is None, n if n is not None else 0)):
        if numa_id is None:
            head, tail = _("NUMA unknown"), _("(firmware reports no node)")
        else:
            cl = cpus.get(numa_id)
            head, tail = f"NUMA {numa_id}", (_("CPUs {cpus}").format(cpus=cl) if cl else "")
        out.append(TopoNode(head=head, tail=tail, kind="numa", children=by_numa[numa_id]))
    return out


def walk(nodes: list[TopoNode]) -> list[TopoNode]:
    """Every node, depth first."""
    out: list[TopoNode] = []
    for n in nodes:
        out.append(n)
        out.extend(walk(n.children))
    return out
