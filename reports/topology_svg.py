"""The node's PCIe topology as one inline SVG, drawn from the result's inventory.

One column per root port, grouped under its NUMA node (with its CPUs); inside a column the
path is drawn as an indented tree: root port, switch, GPUs and NICs. Switch downstream ports
are folded into the line to the device they serve, whose label carries the link's current and
maximum speed and width. A link running below what both ends support (the verdict stored in the
inventory, :mod:`doctor.derived.links`) is drawn in the warning colour (an idle GPU's speed-only
drop is power saving and drawn muted); a path under a chipset
(PCH) root port is dashed in the warning colour; devices named by a finding get its rank badge.
Every text is XML-escaped.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape  # not xml.sax.saxutils: it imports urllib.request, 30 ms of the PDF's start
from typing import Any

from doctor.derived.links import DOWN, OK, POWER_SAVING, UNKNOWN, judge_record
from doctor.i18n import _
from doctor.i18n import width as text_width
from doctor.lazyre import lazy
from doctor.record import record

COL_W = 212
COL_GAP = 14
GROUP_GAP = 30
INDENT = 20
BOX_H = 46
SMALL_H = 34
ROW_GAP = 10
TOP = 10
NUMA_H = 44
FONT = 11
CHAR_W = 6.1  # average advance at FONT px (DejaVu Sans), for truncation
LEGEND_H = 72
#: DejaVu Sans' ascent at line-height 1 (its baseline below the top of a one-line box), in ems
ASCENT = 0.846
#: the width the PDF gives the drawing, in CSS px: an A4 landscape page less its 12 mm side margins
PRINT_WIDTH = (297 - 2 * 12) / 25.4 * 96

COLOURS = {
    "line": "#5c6370", "warn": "#d9480f", "muted": "#9aa1ab", "text": "#1f2328", "sub": "#57606a",
    "numa": "#f3f0ff", "numa_edge": "#7048e8", "root": "#f1f3f5", "switch": "#e9ecef", "edge": "#868e96",
    "gpu": "#e6f4ea", "gpu_edge": "#2f9e44", "nic": "#e7f1fd", "nic_edge": "#1971c2", "other": "#fff",
}
SEVERITY_COLOURS = {"critical": "#c92a2a", "high": "#e8590c", "medium": "#f08c00", "low": "#1971c2",
                    "unknown": "#862e9c", "info": "#868e96"}
#: Related devices beyond which a finding is node-wide and marks only its subject
MAX_RELATED = 4
#: Name fragments of chipset (PCH) root ports (docs/checks.md#pcie-chipset-slot); a display hint only
CHIPSET_WORDS = ("PCH", "Chipset", "chipset")


@dataclass
class _Node:
    dev: dict[str, Any]
    children: list[_Node] = field(default_factory=list)
    via: dict[str, Any] | None = None  # the folded downstream port this device hangs off


@record
class Link:
    """One PCIe link as drawn: current and capable speed/width and how to draw it."""

    cur_speed: float | None
    cur_width: int | None
    cap_speed: float | None
    cap_width: int | None
    state: str  # ok | degraded | parked | unknown
    speed_short: bool = False
    width_short: bool = False
    down: bool = False

    def label(self) -> str:
        cur = _speed_width(self.cur_speed, self.cur_width)
        if self.state == "unknown":
            return _("link ?")
        if self.state == "ok":
            return _("{link} (full)").format(link=cur)
        if self.state == "parked":
            return _("{link} (max {speed}) idle").format(link=cur, speed=_fmt_speed(self.cap_speed))
        if self.down:
            return _("{link} (link down)").format(link=cur)
        speed_low, width_low = self.speed_short, self.width_short
        if speed_low and width_low:
            best = f"{_fmt_speed(self.cap_speed)} x{self.cap_width}"
        else:
            best = f"{_fmt_speed(self.cap_speed) if speed_low else ''}{'x' + str(self.cap_width) if width_low else ''}"
        return _("{link} (max {best})").format(link=cur, best=best)


def _fmt_speed(speed: float | None) -> str:
    if speed is None:
        return "?"
    return f"{speed:g}"


def _speed_width(speed: float | None, width: int | None) -> str:
    return f"{_fmt_speed(speed)} GT/s x{width if width is not None else '?'}"


def link_of(lower: dict[str, Any], upper: dict[str, Any] | None, idle_gpu: bool = False) -> Link:
    """The link between ``lower`` and its upstream partner ``upper``, drawn from the one link verdict."""
    verdict = judge_record(lower, upper, idle=idle_gpu)
    if verdict is None:
        return Link(None, None, None, None, "unknown")
    state = {OK: "ok", POWER_SAVING: "parked", UNKNOWN: "unknown"}.get(verdict.state, "degraded")
    return Link(verdict.cur_speed, verdict.cur_width, verdict.exp_speed, verdict.exp_width, state,
                verdict.speed_short, verdict.width_short, verdict.state == DOWN)


def _build_forest(topology: list[dict[str, Any]]) -> list[_Node]:
    """Roots of the device tree, with switch downstream ports folded into their children."""
    by_addr = {str(d.get("address")): d for d in topology if isinstance(d, dict) and d.get("address")}
    nodes = {a: _Node(d) for a, d in by_addr.items()}
    roots: list[_Node] = []

    def attach_point(addr: str | None) -> tuple[_Node | None, dict[str, Any] | None]:
        via = None
        seen = 0
        while addr in by_addr and by_addr[addr].get("port_type") == "Downstream Port" and seen < 64:
            via = via or by_addr[addr]
            addr = by_addr[addr].get("parent")
            seen += 1
        return (nodes.get(addr) if addr else None), via

    for _addr, node in sorted(nodes.items()):
        if node.dev.get("port_type") == "Downstream Port" and by_addr.get(str(node.dev.get("parent"))):
            continue  # folded into the devices below it
        parent, via = attach_point(node.dev.get("parent"))
        node.via = via
        if parent is None or parent is node:
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


@record
class _Marks:
    """Findings that name a device: rank badges and the worst severity per device key."""

    ranks: dict[str, list[int]]
    severity: dict[str, str]


_PCI_RE = lazy(r"\b(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b")
_GPU_RE = lazy(r"\bgpu\s*#?(\d+)\b")
_TOKEN_RE = lazy(r"[a-z][a-z0-9_]*\d[a-z0-9_]*(?:/\d+)?")


def finding_keys(name: str) -> set[str]:
    """Device keys a finding's subject or related entry names: PCI addresses, GPU N, netdev/RDMA names."""
    low = name.strip().lower()
    keys = {low} if low else set()
    keys |= {_key(m) for m in _PCI_RE.findall(low)}
    keys |= {f"gpu {m}" for m in _GPU_RE.findall(low)}
    for tok in _TOKEN_RE.findall(low):
        keys.add(tok)
        if "/" in tok:
            keys.add(tok.split("/")[0])
    return keys


def _marks(findings: Iterable[Any]) -> _Marks:
    ranks: dict[str, list[int]] = {}
    severity: dict[str, str] = {}
    order = list(SEVERITY_COLOURS)
    for f in findings:
        sev = getattr(f, "severity", "")
        if sev not in SEVERITY_COLOURS or sev == "info":
            continue
        keys = finding_keys(str(getattr(f, "subject", "")))
        related = [finding_keys(str(r)) for r in getattr(f, "related", ())]
        if len(related) <= MAX_RELATED:  # a finding naming every device says nothing about where
            for k in related:
                keys |= k
        for key in keys:
            ranks.setdefault(key, [])
            rank = int(getattr(f, "rank", 0) or 0)
            if rank and rank not in ranks[key]:
                ranks[key].append(rank)
            if key not in severity or order.index(sev) < order.index(severity[key]):
                severity[key] = sev
    return _Marks(ranks, severity)


def _key(name: str) -> str:
    name = name.strip().lower()
    if len(name) == 7 and name[2] == ":" and name[5] == ".":  # "18:00.0" short PCI address
        name = "0000:" + name
    return name


class _Canvas:
    """SVG shapes, and the labels as SVG text or, with a ``scale``, as HTML placed over the scaled drawing."""

    def __init__(self, scale: float | None = None) -> None:
        self.parts: list[str] = []
        self.labels: list[str] = []
        self.scale = scale

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str, width: float = 1.0,
             rx: float = 5, dash: str = "") -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" '
                          f'fill="{fill}" stroke="{stroke}" stroke-width="{width}"{extra}/>')

    def line(self, points: list[tuple[float, float]], colour: str, width: float = 1.4, dash: str = "") -> None:
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="{width}"{extra}/>')

    def text(self, x: float, y: float, text: str, size: float = FONT, colour: str = COLOURS["text"],
             weight: str = "normal", anchor: str = "start", max_w: float | None = None) -> None:
        if max_w is not None:
            advance = CHAR_W * size / FONT * (1.12 if weight == "bold" else 1.0)
            limit = max(4, int(max_w / advance))
            if text_width(text) > limit:  # in columns: a CJK character is two
                text = _cut(text, limit - 1) + "…"
        if self.scale is None:
            self.parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" '
                              f'font-weight="{weight}" text-anchor="{anchor}">{escape(text, quote=False)}</text>')
            return
        s = self.scale  # an HTML label over the drawing: its top edge is its baseline less the font's ascent
        # every label has a width: an absolute box without one is sized to its content, which lays it out twice more
        if anchor == "middle" and max_w:
            left, width = x - max_w / 2, f"width:{max_w * s:.1f}px;text-align:center;"
        else:
            wide = max_w if max_w is not None else text_width(text) * CHAR_W * size / FONT * 1.2
            left, width = x, f"width:{wide * s:.1f}px;"
        bold = "font-weight:bold;" if weight == "bold" else ""
        self.labels.append(f'<div class="tl" style="left:{left * s:.1f}px;top:{(y - ASCENT * size) * s:.1f}px;'
                           f'font-size:{size * s:.2f}px;color:{colour};{bold}{width}">{escape(text, quote=False)}</div>')


def _cut(text: str, columns: int) -> str:
    """The longest start of ``text`` that takes at most ``columns`` columns."""
    used = 0
    for i, ch in enumerate(text):
        used += text_width(ch)
        if used > columns:
            return text[:i]
    return text


def _short_name(name: str) -> str:
    if "[" in name and "]" in name:
        return name[name.index("[") + 1: name.rindex("]")]
    for prefix in ("NVIDIA Corporation ", "Mellanox Technologies ", "Intel Corporation ", "Broadcom / LSI "):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


@record
class _Labels:
    """Per-device display labels taken from the inventory's GPU and NIC lists."""

    gpu: dict[str, dict[str, Any]]
    nic: dict[str, dict[str, Any]]


def _describe(dev: dict[str, Any], labels: _Labels) -> tuple[str, str, str, list[str]]:
    """(kind, title line, detail line, lookup keys) for one device box."""
    addr = str(dev.get("address") or "?")
    kind = str(dev.get("kind") or "")
    keys = [_key(addr)]
    if kind == "gpu" or addr in labels.gpu:
        g = labels.gpu.get(addr, {})
        idx = g.get("index")
        title = f"GPU {idx}" if idx is not None else "GPU"
        if idx is not None:
            keys.append(f"gpu {idx}")
        if g.get("uuid"):
            keys.append(str(g["uuid"]).lower())
        model = str(g.get("name") or _short_name(str(dev.get("name") or "")))
        model = model[len("NVIDIA "):] if model.startswith("NVIDIA ") else model
        return "gpu", title, f"{addr} · {model}", keys
    if kind == "nic" or addr in labels.nic:
        n = labels.nic.get(addr, {})
        netdevs = [str(x) for x in n.get("netdevs") or []]
        rdma = [str(x) for x in n.get("rdma") or []]
        keys += [x.lower() for x in netdevs] + [x.lower() for x in rdma] + [x.split("/")[0].lower() for x in rdma]
        ident = " · ".join(netdevs[:1] + [r.split("/")[0] for r in rdma[:1]]) or _("NIC")
        speed = n.get("speed_mbps")
        detail = addr
        if isinstance(speed, (int, float)) and speed > 0:
            detail += f" · {speed / 1000:g} Gb/s"
        else:
            detail += " · " + _short_name(str(dev.get("name") or ""))
        return "nic", ident, detail, keys
    port = str(dev.get("port_type") or "")
    if port == "Root Port":
        return "root", _("Root port {address}").format(address=addr), str(dev.get("host_bridge") or ""), keys
    if port == "Upstream Port":
        return "switch", _("Switch {address}").format(address=addr), _short_name(str(dev.get("name") or "")), keys
    if not port:
        return "other", _("Device {address}").format(address=addr), _short_name(str(dev.get("name") or "")), keys
    return "other", f"{port} {addr}", _short_name(str(dev.get("name") or "")), keys


def _is_chipset(dev: dict[str, Any]) -> bool:
    name = str(dev.get("name") or "")
    vendor, device = str(dev.get("vendor") or ""), str(dev.get("device") or "")
    return any(w in name for w in CHIPSET_WORDS) or (vendor == "0x1022" and device.startswith("0x43"))


@dataclass
class _Column:
    root: _Node
    numa: str
    rows: list[tuple[_Node, int, dict[str, Any] | None]] = field(default_factory=list)  # node, depth, upper


def _flatten(node: _Node, depth: int, upper: dict[str, Any] | None,
             out: list[tuple[_Node, int, dict[str, Any] | None]]) -> None:
    out.append((node, depth, upper))
    for child in sorted(node.children, key=lambda c: str(c.dev.get("address"))):
        _flatten(child, depth + 1, child.via or node.dev, out)


def render_topology(inventory: dict[str, Any], findings: Iterable[Any] = (), print_labels: bool = False) -> str:
    """The SVG (a string starting with ``<svg``); an explanatory SVG when there is no topology.

    ``print_labels`` (the PDF): the drawing scaled to :data:`PRINT_WIDTH`, its labels as HTML placed over it in
    a ``<div class="topo">``. WeasyPrint lays out and draws an SVG ``<text>`` one letter at a time (a Pango
    layout per letter, more than the rest of the page); an HTML label is one line of text.
    """
    topology = [d for d in inventory.get("topology") or [] if isinstance(d, dict)]
    labels = _Labels(
        gpu={str(g.get("address")): g for g in inventory.get("gpus") or [] if isinstance(g, dict)},
        nic={str(n.get("address")): n for n in inventory.get("nics") or [] if isinstance(n, dict)})
    marks = _marks(findings)
    numa_cpus = {str(n.get("id")): str(n.get("cpulist") or "") for n in inventory.get("numa") or []
                 if isinstance(n, dict)}
    roots = _build_forest(topology)
    columns: list[_Column] = []
    for root in roots:
        numa = root.dev.get("numa_node")
        col = _Column(root, str(numa) if isinstance(numa, int) and numa >= 0 else "?")
        _flatten(root, 0, None, col.rows)
        columns.append(col)
    columns.sort(key=lambda c: (c.numa == "?", c.numa.zfill(4), str(c.root.dev.get("address"))))
    if not columns:
        return ('<svg xmlns="http://www.w3.org/2000/svg" width="420" height="40" role="img" '
                f'aria-label="{escape(_("no PCIe topology"))}"><text x="8" y="24" font-size="12" fill="#57606a">'
                f'{escape(_("No PCIe topology recorded for GPUs or NICs in this source."), quote=False)}</text></svg>')

    canvas = _Canvas()
    x = 10.0
    groups: dict[str, tuple[float, float]] = {}
    col_x: list[float] = []
    prev_numa: str | None = None
    for col in columns:
        if prev_numa is not None and col.numa != prev_numa:
            x += GROUP_GAP - COL_GAP
        col_x.append(x)
        start, _end = groups.get(col.numa, (x, x))
        groups[col.numa] = (start, x + COL_W)
        prev_numa = col.numa
        x += COL_W + COL_GAP
    width = x - COL_GAP + 10
    if print_labels:
        canvas.scale = PRINT_WIDTH / width
    body_top = TOP + NUMA_H + 18
    max_y = body_top

    for numa, (x0, x1) in groups.items():
        canvas.rect(x0, TOP, x1 - x0, NUMA_H, COLOURS["numa"], COLOURS["numa_edge"], 1.4)
        title = _("NUMA node {node}").format(node=numa) if numa != "?" else _("NUMA node unknown")
        canvas.text(x0 + 8, TOP + 17, title, weight="bold", max_w=x1 - x0 - 16)
        cpus = numa_cpus.get(numa, "")
        canvas.text(x0 + 8, TOP + 33, _("CPUs {cpus}").format(cpus=cpus) if cpus else _("CPUs not recorded"), colour=COLOURS["sub"],
                    max_w=x1 - x0 - 16)

    for col, cx in zip(columns, col_x):
        y = body_top
        chipset = _is_chipset(col.root.dev)
        centres: dict[int, tuple[float, float]] = {}  # id(node) -> (trunk x, box bottom)
        # NUMA -> root port
        canvas.line([(cx + 12, TOP + NUMA_H), (cx + 12, body_top)], COLOURS["warn"] if chipset else COLOURS["line"],
                    1.4, "5,3" if chipset else "")
        for node, depth, upper in col.rows:
            kind, title, detail, keys = _describe(node.dev, labels)
            if node.via is not None:  # the folded downstream port is part of this box's link
                keys.append(_key(str(node.via.get("address") or "")))
            bx = cx + depth * INDENT
            bw = COL_W - depth * INDENT
            has_link = upper is not None
            h = BOX_H if (has_link or kind in ("gpu", "nic")) else SMALL_H
            gpu_info = labels.gpu.get(str(node.dev.get("address")), {})
            idle = kind == "gpu" and gpu_info.get("activity") != "busy"
            link = link_of(node.dev, upper, idle_gpu=idle) if has_link else None
            # connector from the parent's trunk
            parent_key = id(next((p for p, _d, _u in col.rows if node in p.children), None))
            if parent_key in centres:
                tx, ty = centres[parent_key]
                colour, lw, dash = COLOURS["line"], 1.4, ""
                if link is not None and link.state == "degraded":
                    colour, lw = COLOURS["warn"], 3.0
                elif link is not None and link.state == "parked":
                    colour, dash = COLOURS["muted"], "2,2"
                if chipset:
                    colour, dash = COLOURS["warn"], "5,3"
                trunk = COLOURS["warn"] if chipset else COLOURS["line"]
                canvas.line([(tx, ty), (tx, y + h / 2)], trunk, 1.4, "5,3" if chipset else "")
                canvas.line([(tx, y + h / 2), (bx, y + h / 2)], colour, lw, dash)
            fill, edge = {"gpu": (COLOURS["gpu"], COLOURS["gpu_edge"]), "nic": (COLOURS["nic"], COLOURS["nic_edge"]),
                          "root": (COLOURS["root"], COLOURS["edge"]), "switch": (COLOURS["switch"], COLOURS["edge"])
                          }.get(kind, (COLOURS["other"], COLOURS["edge"]))
            sev = _worst(marks.severity.get(k) for k in keys)
            ranks = sorted({r for k in keys for r in marks.ranks.get(k, [])})
            stroke_w = 1.2
            if link is not None and link.state == "degraded":
                edge, stroke_w = COLOURS["warn"], 2.2
            if sev:
                edge, stroke_w = SEVERITY_COLOURS[sev], 2.6
            canvas.rect(bx, y, bw, h, fill, edge, stroke_w, dash="5,3" if chipset and kind == "root" else "")
            badge = "#" + ",".join(map(str, ranks[:2])) + ("+" if len(ranks) > 2 else "") if ranks else ""
            bw_badge = 8 + 6.2 * len(badge) if badge else 0.0
            canvas.text(bx + 7, y + 14, title, weight="bold", max_w=bw - 14 - bw_badge)
            canvas.text(bx + 7, y + 28, detail, size=10, colour=COLOURS["sub"], max_w=bw - 14)
            if link is not None:
                colour = {"degraded": COLOURS["warn"], "parked": COLOURS["muted"]}.get(link.state, COLOURS["sub"])
                prefix = "\u25bc " if link.state == "degraded" else ""
                canvas.text(bx + 7, y + 41, prefix + link.label(), size=10, colour=colour,
                            weight="bold" if link.state == "degraded" else "normal", max_w=bw - 14)
            if badge:
                canvas.rect(bx + bw - bw_badge - 4, y + 3, bw_badge, 15, SEVERITY_COLOURS[sev or "info"],
                            SEVERITY_COLOURS[sev or "info"], 1, rx=7)
                canvas.text(bx + bw - 4 - bw_badge / 2, y + 14, badge, size=10, colour="#fff", weight="bold",
                            anchor="middle", max_w=bw_badge)
            centres[id(node)] = (bx + 8, y + h)
            y += h + ROW_GAP
        max_y = max(max_y, y)

    _legend(canvas, 10, max_y + 6, width)
    height = max_y + 6 + LEGEND_H
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
            f'width="{width:.0f}" height="{height:.0f}" class="topology" role="img" '
            f'aria-label="{escape(_("PCIe topology: NUMA nodes, root ports, switches, GPUs and NICs"))}" '
            f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">')
    svg = head + "".join(canvas.parts) + "</svg>"
    if canvas.scale is None:
        return svg
    return (f'<div class="topo" style="width:{width * canvas.scale:.1f}px;height:{height * canvas.scale:.1f}px">'
            f'{svg}{"".join(canvas.labels)}</div>')


def _worst(severities: Iterable[str | None]) -> str | None:
    order = list(SEVERITY_COLOURS)
    known = [s for s in severities if s in SEVERITY_COLOURS]
    return min(known, key=order.index) if known else None


def _legend(canvas: _Canvas, x: float, y: float, width: float) -> None:
    canvas.rect(x, y, max(width - 20, 640), LEGEND_H - 8, "#fff", "#dee2e6", 1)
    y1, y2 = y + 18, y + 38
    cx = x + 10
    for fill, edge, label in ((COLOURS["gpu"], COLOURS["gpu_edge"], "GPU"), (COLOURS["nic"], COLOURS["nic_edge"], _("NIC")),
                              (COLOURS["switch"], COLOURS["edge"], _("switch / root port")),
                              (COLOURS["numa"], COLOURS["numa_edge"], _("NUMA node"))):
        canvas.rect(cx, y1 - 9, 14, 11, fill, edge, 1.2, rx=2)
        canvas.text(cx + 19, y1, label, size=10)
        cx += 30 + CHAR_W * text_width(label)
    canvas.rect(cx, y1 - 10, 26, 13, "#fff", SEVERITY_COLOURS["high"], 2.6, rx=2)
    canvas.text(cx + 31, y1, _("named by finding #N (outline = severity)"), size=10)
    cx = x + 10
    for colour, lw, dash, label in ((COLOURS["line"], 1.4, "", _("link at full speed/width")),
                                    (COLOURS["warn"], 3.0, "", "\u25bc " + _("degraded: current below what both ends support")),
                                    (COLOURS["muted"], 1.4, "2,2", _("idle GPU, speed parked to save power")),
                                    (COLOURS["warn"], 1.4, "5,3", _("chipset (PCH) path"))):
        canvas.line([(cx, y2 - 4), (cx + 26, y2 - 4)], colour, lw, dash)
        canvas.text(cx + 31, y2, label, size=10)
        cx += 44 + CHAR_W * 0.92 * text_width(label)
    canvas.text(x + 10, y2 + 14, _("Labels: current speed and width, then the most both ends support "
                                    "(GT/s per lane, lanes)."), size=9, colour=COLOURS["sub"])
