"""Topology SVG: columns per root port, link labels, degraded links, finding badges, escaping."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

from doctor.findings import Finding
from reports.topology_svg import link_of, render_topology


def _dev(addr: str, parent: str | None, port: str, kind: str = "bridge", **kw: Any) -> dict[str, Any]:
    base = {"address": addr, "parent": parent, "port_type": port, "kind": kind, "numa_node": 0,
            "cur_speed": 32.0, "cur_width": 16, "max_speed": 32.0, "max_width": 16, "name": "x"}
    return base | kw


def test_link_states() -> None:
    up = {"max_speed": 32.0, "max_width": 16}
    assert link_of({"cur_speed": 32.0, "cur_width": 8, "max_speed": 32.0, "max_width": 16}, up).state == "degraded"
    assert link_of({"cur_speed": 2.5, "cur_width": 16, "max_speed": 32.0, "max_width": 16}, up,
                   idle_gpu=True).state == "parked"
    assert link_of({"cur_speed": 2.5, "cur_width": 16, "max_speed": 32.0, "max_width": 16}, up).state == "degraded"
    # an x8 card in an x16 slot at its own maximum is not degraded (min of both ends)
    assert link_of({"cur_speed": 8.0, "cur_width": 8, "max_speed": 8.0, "max_width": 8}, up).state == "ok"
    assert link_of({}, None).state == "unknown"


def test_eight_gpus_eight_nics_four_switches_stay_in_columns() -> None:
    topo: list[dict[str, Any]] = []
    gpus: list[dict[str, Any]] = []
    nics: list[dict[str, Any]] = []
    for s in range(4):
        rp, usp = f"0000:{s}0:01.0", f"0000:{s}1:00.0"
        topo += [_dev(rp, None, "Root Port", numa_node=s // 2), _dev(usp, rp, "Upstream Port", numa_node=s // 2)]
        for j in range(4):
            dp = f"0000:{s}2:0{j}.0"
            ep = f"0000:{s}3:0{j}.0"
            kind = "gpu" if j % 2 == 0 else "nic"
            extra = {"cur_width": 8} if (s, j) == (1, 2) else {}
            topo += [_dev(dp, usp, "Downstream Port", numa_node=s // 2),
                     _dev(ep, dp, "Endpoint", kind, numa_node=s // 2, **extra)]
            (gpus if kind == "gpu" else nics).append({"address": ep, "index": len(gpus), "activity": "busy",
                                                      "name": "H100", "netdevs": [f"eth{len(nics)}"]})
    inv = {"topology": topo, "gpus": gpus, "nics": nics,
           "numa": [{"id": 0, "cpulist": "0-47"}, {"id": 1, "cpulist": "48-95"}]}
    finding = Finding("high", "GPU 2 (0000:13:02.0)", "link", rank=1)
    svg = render_topology(inv, [finding])
    root = ElementTree.fromstring(svg)  # well-formed XML
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert sum(t.startswith("GPU ") for t in texts) == 8 and sum(t.startswith("eth") for t in texts) == 8
    assert sum(t.startswith("Switch ") for t in texts) == 4
    assert "\u25bc 32 GT/s x8 (max x16)" in texts
    assert "#1" in texts
    width = float(root.get("width") or 0)
    assert width < 1200  # four columns, not sixteen leaves side by side


def _eight_gpu_inventory() -> dict[str, Any]:
    topo: list[dict[str, Any]] = []
    gpus: list[dict[str, Any]] = []
    for s in range(2):
        rp, usp = f"0000:{s}0:01.0", f"0000:{s}1:00.0"
        topo += [_dev(rp, None, "Root Port", numa_node=s), _dev(usp, rp, "Upstream Port", numa_node=s)]
        for j in range(4):
            dp, ep = f"0000:{s}2:0{j}.0", f"0000:{s}3:0{j}.0"
            topo += [_dev(dp, usp, "Downstream Port", numa_node=s),
                     _dev(ep, dp, "Endpoint", "gpu", numa_node=s, **({"cur_speed": 2.5} if j in (1, 3) else {}))]
            gpus.append({"address": ep, "index": len(gpus), "activity": "busy" if j < 3 else "idle", "name": "H100"})
    topo.append(_dev("0000:90:00.0", None, "Endpoint", "nic", numa_node=0))  # a device on the root complex
    return {"topology": topo, "gpus": gpus, "nics": [{"address": "0000:90:00.0", "netdevs": ["eth0"]}],
            "numa": [{"id": 0, "cpulist": "0-47"}, {"id": 1, "cpulist": "48-95"}]}


def test_the_pdf_drawing_carries_every_label_of_the_html_one() -> None:
    """The PDF's topology (labels as HTML over the drawing: SVG text is laid out one letter at a time) says
    what the HTML report's SVG says, label for label, a degraded link bold in the warning colour and an idle
    GPU's parked link muted."""
    import re
    from html import unescape

    inv = _eight_gpu_inventory()
    finding = Finding("high", "GPU 1 (0000:03:01.0)", "link", rank=1)
    svg = ElementTree.fromstring(render_topology(inv, [finding]))
    drawn = sorted(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    printed = render_topology(inv, [finding], print_labels=True)
    assert printed.startswith('<div class="topo"') and "<text" not in printed
    labels = re.findall(r'<div class="tl" style="([^"]*)">([^<]*)</div>', printed)
    assert sorted(unescape(text) for _style, text in labels) == drawn
    styles = {unescape(text): style for style, text in labels}
    assert "color:#d9480f;font-weight:bold;" in styles["\u25bc 2.5 GT/s x16 (max 32)"]
    assert "color:#9aa1ab;" in styles["2.5 GT/s x16 (max 32) idle"]


def test_text_is_escaped() -> None:
    inv = {"topology": [_dev("0000:01:00.0", None, "Endpoint", "nic")],
           "nics": [{"address": "0000:01:00.0", "netdevs": ["<script>alert(1)</script>"]}]}
    svg = render_topology(inv)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    ElementTree.fromstring(svg)


def test_no_topology() -> None:
    assert "No PCIe topology" in render_topology({})
