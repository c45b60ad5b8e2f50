"""The kubelet's nested settings (CPU manager options, reserved memory) read from its config and flags.

A small reader for the block-style YAML a KubeletConfiguration is written in (maps, lists of maps,
``{a: b}`` flow maps); anything else is left out, so a setting it cannot read is ``None``, never a guess.
"""

from __future__ import annotations

import re

from doctor.facts import Kubelet
from doctor.lazyre import lazy
from doctor.record import record

_LINE = lazy(r"^( *)(- +)?([A-Za-z0-9_.\-\"']+)\s*:\s*(.*?)\s*$")
_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
          "Ti": 2**40}
#: the kubelet's default hard eviction threshold for memory (KubeletConfiguration evictionHard)
DEFAULT_EVICTION = 100 * 2**20
MAX_LINES = 20000


def quantity(text: object) -> int | None:
    """A Kubernetes memory quantity (``100Mi``, ``1G``, ``512``) in bytes, else None."""
    m = re.fullmatch(r"\s*[\"']?(\d+(?:\.\d+)?)([kMGT]i?|Ki)?[\"']?\s*", str(text))
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2) or ""])


def _scalar(text: str) -> object:
    text = text.split(" #", 1)[0].strip()
    if text.startswith("{") and text.endswith("}"):
        out: dict[str, object] = {}
        for part in text[1:-1].split(","):
            if ":" in part:
                k, v = part.split(":", 1)
                out[k.strip().strip("\"'")] = v.strip().strip("\"'")
        return out
    return text.strip("\"'")


def parse(text: str) -> dict[str, object]:
    """Nested maps and lists of maps of a block-style YAML document (bounded; unknown shapes skipped)."""
    root: dict[str, object] = {}
    stack: list[tuple[int, object]] = [(-1, root)]
    lines = text.splitlines()[:MAX_LINES]
    for i, raw in enumerate(lines):
        if not raw.strip() or raw.lstrip().startswith("#") or raw.strip() == "---":
            continue
        m = _LINE.match(raw)
        if not m:
            continue
        col, dash, key, value = len(m.group(1)), m.group(2), m.group(3).strip("\"'"), m.group(4)
        if dash:
            while len(stack) > 1 and (stack[-1][0] > col or (stack[-1][0] == col and not isinstance(stack[-1][1], list))):
                stack.pop()
            holder = stack[-1][1]
            if not isinstance(holder, list):
                continue
            item: dict[str, object] = {}
            holder.append(item)
            stack.append((col, item))
            col += len(dash)
        else:
            while len(stack) > 1 and stack[-1][0] >= col:
                stack.pop()
        parent = stack[-1][1]
        if not isinstance(parent, dict):
            continue
        if value in ("", "|", ">"):
            child: object = [] if _next_is_list(lines, i) else {}
            parent[key] = child
            stack.append((col, child))
        else:
            parent[key] = _scalar(value)
    return root


def _next_is_list(lines: list[str], i: int) -> bool:
    for nxt in lines[i + 1:i + 50]:
        if nxt.strip() and not nxt.lstrip().startswith("#"):
            return nxt.lstrip().startswith("- ")
    return False


@record
class Reservations:
    """What the memory manager's Static policy checks at start: reservedMemory per NUMA node against
    kubeReserved + systemReserved + the hard eviction threshold (bytes; None where not readable)."""

    per_node: tuple[tuple[int, int], ...]
    kube: int
    system: int
    eviction: int
    origin: str

    @property
    def reserved(self) -> int:
        return sum(v for _, v in self.per_node)

    @property
    def required(self) -> int:
        return self.kube + self.system + self.eviction


def _flag_map(text: str, sep: str = ",") -> dict[str, str]:
    return dict(x.split("=", 1) for x in text.split(sep) if "=" in x)


def options(kubelet: Kubelet) -> dict[str, str]:
    """``cpuManagerPolicyOptions`` (flags override the config)."""
    if "cpu-manager-policy-options" in kubelet.flags:
        return _flag_map(kubelet.flags["cpu-manager-policy-options"])
    value = parse(kubelet.text or "").get("cpuManagerPolicyOptions")
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def reservations(kubelet: Kubelet) -> Reservations | None:
    """The memory reservations the Static memory manager checks; None when a value cannot be read."""
    config = parse(kubelet.text or "")
    origin = kubelet.origin or "kubelet config"

    def memory(key: str, flag: str) -> int | None:
        if flag in kubelet.flags:
            return quantity(_flag_map(kubelet.flags[flag]).get("memory", "0"))
        value = config.get(key)
        return quantity(value.get("memory", "0")) if isinstance(value, dict) else (0 if value is None else None)

    kube, system = memory("kubeReserved", "kube-reserved"), memory("systemReserved", "system-reserved")
    if "eviction-hard" in kubelet.flags:
        hit = re.search(r"memory\.available<([^,]+)", kubelet.flags["eviction-hard"])
        eviction = quantity(hit.group(1)) if hit else 0
    else:
        ev = config.get("evictionHard")
        eviction = DEFAULT_EVICTION if ev is None else (quantity(ev.get("memory.available", "0"))
                                                        if isinstance(ev, dict) else None)
    nodes: list[tuple[int, int]] = []
    if "reserved-memory" in kubelet.flags:
        for part in kubelet.flags["reserved-memory"].split(";"):
            index, _, rest = part.partition(":")
            size = quantity(_flag_map(rest).get("memory", ""))
            if not index.strip().isdigit() or size is None:
                return None
            nodes.append((int(index), size))
    else:
        listed = config.get("reservedMemory")
        for item in listed if isinstance(listed, list) else []:
            limits = item.get("limits") if isinstance(item, dict) else None
            node = item.get("numaNode") if isinstance(item, dict) else None
            size = quantity(limits.get("memory", "")) if isinstance(limits, dict) else None
            if not str(node).isdigit() or size is None:
                return None
            nodes.append((int(str(node)), size))
    if kube is None or system is None or eviction is None:
        return None
    return Reservations(tuple(nodes), kube, system, eviction, origin)
