"""Upstream PCI paths from the tree form (``lspci -t``) where the lspci records lack them.

The old nvidia-bug-report layout (drivers up to 525) dumps only NVIDIA (and PLX) functions with ``lspci -v -xxx``,
so a GPU's record names no bridge above it; the same report's ``lspci -t`` draws the whole hierarchy (root bus ->
bridge -> device) and ``lspci -nn`` names every function. :func:`with_tree_paths` joins them: each device whose
recorded path is a tail of its tree path gets the whole path, and the bridges on it that no record describes are
added as devices known from the tree alone (ids, class and name from ``lspci -nn`` when present; port type from
the tree's shape, as for sysfs without config space). The tree is topology, not link registers: those bridges have
no link speed or width, so a check that needs the root port's registers still says what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from doctor.facts.pci import DOWNSTREAM, ROOT_PORT, UPSTREAM, PciDevice, PciTree

if TYPE_CHECKING:
    from doctor.parsers.lspci import LspciDevice
    from doctor.sources import Source

#: PCI-to-PCI bridge class, for a bridge the tree shows (it has a secondary bus) but no listing names
BRIDGE_CLASS = 0x060400


#: what the ``origin`` of a bridge known only from the tree ends with
TREE_MARK = " (tree only)"


def tree_only(dev: PciDevice) -> bool:
    """A bridge known only from the tree form: no link registers were recorded for it."""
    return dev.origin.endswith(TREE_MARK)


def with_tree_paths(pci: PciTree, paths: dict[str, tuple[str, ...]],
                    listing: Callable[[], dict[str, LspciDevice]], where: str) -> PciTree:
    """``pci`` (from lspci records) with each device's path completed from ``paths`` (:func:`parse_lspci_tree`);
    ``listing`` (``lspci -nn`` parsed, asked only when a bridge is added) names the bridges."""
    devices = dict(pci.devices)
    named: dict[str, LspciDevice] | None = None
    added: dict[str, PciDevice] = {}
    for address, dev in pci.devices.items():
        full = paths.get(address)
        if not full or len(full) <= len(dev.path) or full[len(full) - len(dev.path):] != dev.path:
            continue
        devices[address] = replace(dev, path=full)
        for i, bridge in enumerate(full[:len(full) - len(dev.path)]):
            if bridge in devices or bridge in added:
                continue
            above = added.get(full[i - 1]) if i else None
            kind = ROOT_PORT if i == 0 else DOWNSTREAM if above is not None and above.port_type == UPSTREAM \
                else UPSTREAM
            named = listing() if named is None else named
            info = named.get(bridge)
            cls = info.class_code << 8 if info is not None and info.class_code is not None else BRIDGE_CLASS
            added[bridge] = PciDevice(
                bridge, info.vendor_id if info else None, info.device_id if info else None, cls,
                origin=where + TREE_MARK, name=(info.description or None) if info else None, path=full[:i + 1],
                port_type=kind)
    if not added and devices == pci.devices:
        return pci
    devices.update(added)
    return replace(pci, devices=devices)


def complete_paths(pci: PciTree, src: Source) -> PciTree:
    """:func:`with_tree_paths` for a tree read from lspci records alone, when the source holds ``lspci -t``."""
    if pci.origin != "lspci":
        return pci
    out = src.command("lspci_tree")
    if not out.text:
        return pci
    from doctor.parsers.lspci import parse_lspci, parse_lspci_tree

    paths = parse_lspci_tree(out.text)
    if not paths:
        return pci

    def listing() -> dict[str, LspciDevice]:
        text = src.command("lspci_nn").text
        return parse_lspci(text) if text else {}

    return with_tree_paths(pci, paths, listing, out.where)
