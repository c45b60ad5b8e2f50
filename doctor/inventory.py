"""A plain-data inventory of the node (GPUs, NICs, NUMA, kernel, PCI paths) for reports and diffs.

It travels inside the JSON result so a saved result can be re-rendered (with its topology
picture) and diffed without the host. Each topology record carries ``link``: the verdict of the
link to its upstream port (:mod:`doctor.derived.links`; null for a root port or a switch's
internal bus), so renderers of a saved result never judge a link themselves.
"""

from __future__ import annotations

from typing import Any

from doctor.derived.digest import safe_digest
from doctor.derived.links import LinkVerdict, is_internal, judge_ends
from doctor.derived.pcie import end_of
from doctor.derived.relations import gpu_idle
from doctor.facts import Facts
from doctor.facts.pci import PciDevice


def _link(facts: Facts, dev: PciDevice) -> LinkVerdict | None:
    """The verdict of the link between ``dev`` and its upstream port (None: no parent or internal bus)."""
    parent = facts.pci.get(dev.parent)
    if parent is None or is_internal(parent.port_type, dev.port_type):
        return None
    return judge_ends(end_of(dev), end_of(parent), idle=dev.is_gpu and gpu_idle(facts, dev.address))


def _device(facts: Facts, dev: PciDevice, kind: str) -> dict[str, Any]:
    link = _link(facts, dev)
    return {"address": dev.address, "kind": kind, "parent": dev.parent, "port_type": dev.port_type,
            "vendor": f"0x{dev.vendor:04x}" if dev.vendor is not None else None,
            "device": f"0x{dev.device:04x}" if dev.device is not None else None,
            "name": dev.name, "driver": dev.driver, "numa_node": dev.numa_node, "host_bridge": dev.host_bridge,
            "cur_speed": dev.cur_speed, "cur_width": dev.cur_width, "max_speed": dev.max_speed,
            "max_width": dev.max_width, "iommu_group": dev.iommu_group,
            "link": link.to_dict() if link is not None else None}


def build_inventory(facts: Facts) -> dict[str, Any]:
    """GPUs, NICs, NUMA nodes, host and the PCI devices on every GPU and NIC path."""
    host = facts.host
    pci = facts.pci
    gpus = []
    for gpu in facts.gpus.gpus:
        rt = gpu.runtime
        gpus.append({"index": gpu.index, "address": gpu.address, "name": gpu.name,
                     "numa_node": gpu.pci.numa_node if gpu.pci else None,
                     "driver": gpu.pci.driver if gpu.pci else None, "activity": gpu.activity,
                     "pstate": rt.pstate if rt else None, "util": rt.util_gpu if rt else None,
                     "uuid": rt.uuid if rt else None, "serial": rt.serial if rt else None})
    nics = []
    for dev in pci.nics:
        nets = facts.netdevs_of(dev.address)
        ports = facts.rdma_of(dev.address)
        nics.append({"address": dev.address, "name": dev.name, "numa_node": dev.numa_node, "driver": dev.driver,
                     "netdevs": [n.name for n in nets], "speed_mbps": max((n.speed_mbps or 0 for n in nets), default=0)
                     or None, "rdma": [p.name for p in ports], "link_layer": ports[0].link_layer if ports else None})
    topo: dict[str, dict[str, Any]] = {}
    for dev in [*pci.gpus, *pci.nics]:
        kind = "gpu" if dev.is_gpu else "nic"
        topo[dev.address] = _device(facts, dev, kind)
        for up in pci.upstream(dev.address):
            topo.setdefault(up.address, _device(facts, up, "bridge"))
    return {
        "host": {"hostname": host.hostname, "kernel": host.kernel, "os": host.os_release, "vendor": host.vendor,
                 "product": host.product, "virtual_machine": host.is_vm, "machine_id": host.machine_id,
                 "board_serial": host.board_serial},
        "driver": {"nvidia": facts.gpus.driver_version, "cuda": facts.gpus.cuda_version,
                   "runtime_origin": facts.gpus.runtime_origin},
        "numa": [{"id": n.id, "cpulist": n.cpulist} for n in facts.numa.nodes],
        "gpus": gpus,
        "nics": nics,
        "pci_origin": pci.origin,
        "topology": sorted(topo.values(), key=lambda d: d["address"]),
        "cmdline": facts.cmdline.raw,
        "digest": safe_digest(facts),  # flat facts for gnd diff/fleet (doctor/derived/digest.py)
    }
