"""NICs: physical NICs (incl. InfiniBand HCAs), RDMA-capable and data NICs, whether TCP carries bulk data."""

from __future__ import annotations

from doctor.derived import cached
from doctor.derived.procs import env_value, server_roots
from doctor.facts import Facts, NetDev, PciDevice, RdmaPort
from doctor.i18n import N_
from doctor.lazyre import lazy
from doctor.reads import Reads
from doctor.record import record

#: the variables whose values say whether NCCL uses TCP for data
READS = Reads(env=("NCCL_IB_DISABLE", "NCCL_NET"))

#: A NIC at or above this speed carries data even without RDMA (Mb/s).
DATA_NIC_MIN_MBPS = 25000
#: Paravirtual NIC vendors (virtio, Hyper-V, VMware, Xen): no physical link.
VIRTUAL_VENDORS = frozenset({0x1AF4, 0x1414, 0x15AD, 0x5853})
#: Mellanox/NVIDIA networking; their NICs are RDMA-capable even without an infiniband class entry.
RDMA_VENDORS = frozenset({0x15B3})


def rdma_addresses(facts: Facts) -> set[str]:
    """PCI addresses that own an RDMA port."""
    return set(cached(facts, "net.rdma_addresses", lambda: frozenset(p.pci_address for p in facts.rdma if p.pci_address)))


def subject_nics(facts: Facts) -> list[PciDevice]:
    """Physical NICs: network class, or any device owning an RDMA port (InfiniBand HCAs); no VFs."""
    return list(cached(facts, "net.subject_nics", lambda: tuple(_subject_nics(facts))))


def _subject_nics(facts: Facts) -> list[PciDevice]:
    pci = facts.pci
    out = {d.address: d for d in pci.nics}
    for addr in rdma_addresses(facts):
        dev = pci.get(addr)
        if dev is not None and not dev.is_vf:
            out[addr] = dev
    return [out[a] for a in sorted(out)]


def is_rdma_nic(facts: Facts, dev: PciDevice) -> bool:
    return dev.base_class == 0x0207 or dev.vendor in RDMA_VENDORS or dev.address in rdma_addresses(facts)


def is_virtual_nic(dev: PciDevice) -> bool:
    """Paravirtual NICs (virtio, Hyper-V, VMware vmxnet, Xen) have no real link."""
    return dev.vendor in VIRTUAL_VENDORS


@record
class DataNic:
    netdev: NetDev
    pci: PciDevice | None
    rdma: tuple[RdmaPort, ...]

    @property
    def name(self) -> str:
        return self.netdev.name

    @property
    def model(self) -> tuple[int | None, int | None]:
        return (self.pci.vendor, self.pci.device) if self.pci else (None, None)

    @property
    def link_layer(self) -> str | None:
        return self.rdma[0].link_layer if self.rdma else None


def data_nics(facts: Facts) -> list[DataNic]:
    """Physical, non-VF, non-paravirtual interfaces with an RDMA port or a speed of 25 Gb/s and more."""
    return list(cached(facts, "net.data_nics", lambda: tuple(_data_nics(facts))))


def _data_nics(facts: Facts) -> list[DataNic]:
    out = []
    for nd in facts.netdevs:
        if nd.virtual or not nd.pci_address:
            continue
        pci = facts.pci.get(nd.pci_address)
        if pci is not None and (pci.is_vf or pci.vendor in VIRTUAL_VENDORS):
            continue
        rdma = tuple(facts.rdma_of(nd.pci_address))
        if rdma or (nd.speed_mbps or 0) >= DATA_NIC_MIN_MBPS:
            out.append(DataNic(nd, pci, rdma))
    return sorted(out, key=lambda n: n.name)


def fastest(nics: list[DataNic]) -> DataNic | None:
    up = [n for n in nics if n.netdev.speed_mbps]
    return max(up, key=lambda n: n.netdev.speed_mbps or 0) if up else None


def tcp_carries_data(facts: Facts) -> tuple[bool, str]:
    """Whether bulk data goes over TCP: NCCL forced onto sockets, or no active RDMA port."""
    disable = env_value(facts, "NCCL_IB_DISABLE")
    if disable is not None and disable.value.strip() == "1":
        where = f"pid {disable.pids[0]}" if disable.pids else disable.files[0]
        return True, f"NCCL_IB_DISABLE=1 ({where})"
    net = env_value(facts, "NCCL_NET")
    if net is not None and net.value.strip().lower() == "socket":
        return True, "NCCL_NET=Socket"
    if facts.rdma and not any(p.active for p in facts.rdma):
        return True, N_('no RDMA port is active, so NCCL falls back to TCP sockets')
    if not facts.rdma and facts.gpus.gpus:
        if not facts.netdevs:
            return False, N_('no network interfaces recorded, so the transport cannot be told')
        if not data_nics(facts):
            return False, N_('no RDMA device and no data NIC (25 Gb/s or more): a single-node host')
        return True, N_('no RDMA device: multi-node traffic (NCCL, KV transfer) uses TCP')
    if not facts.rdma:
        return False, N_('no GPU and no RDMA device')
    return False, N_('RDMA ports are active and NCCL is not forced onto sockets')


#: The slowest NIC a TCP-served inference node is judged on when it has no data NIC (Mb/s).
SERVING_NIC_MIN_MBPS = 10000


def serving_nic(facts: Facts) -> DataNic | None:
    """The fastest data NIC; on a node without one that runs an inference server, its fastest physical
    interface at 10 Gb/s or more (TCP-served inference on 10/25 GbE still deserves the TCP checks)."""
    best = fastest(data_nics(facts))
    if best is not None:
        return best
    if not server_roots(facts):
        return None
    out = []
    for nd in facts.netdevs:
        if nd.virtual or not nd.pci_address or (nd.speed_mbps or 0) < SERVING_NIC_MIN_MBPS:
            continue
        pci = facts.pci.get(nd.pci_address)
        if pci is not None and (pci.is_vf or pci.vendor in VIRTUAL_VENDORS):
            continue
        out.append(DataNic(nd, pci, ()))
    return fastest(out)


_RATE_NAME = lazy(r"(?<![\w.])(\d+(?:\.\d+)?) ?-?(?:Gigabit|GbE|Gb/s|G Ethernet)\b|\b(Gigabit)\b")


@record
class LineRate:
    """What the ports of one NIC chip can send (Gb/s): each function's port, and how it was read."""

    ports: tuple[float, ...]
    how: str

    @property
    def total(self) -> float:
        """All ports together (every function of one chip shares the link of function 0)."""
        return sum(self.ports)

    @property
    def port(self) -> float:
        """The fastest single port: what one port needs the PCIe path to carry."""
        return max(self.ports)


def nic_port_rates(facts: Facts, dev: PciDevice) -> LineRate | None:
    """The line rate of each port of the NIC chip at ``dev``; None when any port's rate is unknown.

    From the link speed of each function's interface when known, else from the chip's name (``I211 Gigabit
    Network Connection``: 1 Gb/s per function, ``RTL8125 2.5GbE``: 2.5).
    """
    functions = [d for d in facts.pci.devices.values() if d.function_base == dev.function_base and d.is_nic] or [dev]
    ports = []
    how = []
    for fn in functions:
        speeds = [n.speed_mbps / 1000 for n in facts.netdevs_of(fn.address) if n.speed_mbps]
        if speeds:
            ports.append(max(speeds))
            how.append(f"{fn.address} {max(speeds):g} Gb/s (link speed)")
            continue
        m = _RATE_NAME.search(fn.name or "")
        if m is None:
            return None
        rate = 1.0 if m.group(2) else float(m.group(1))
        ports.append(rate)
        how.append(f"{fn.address} {rate:g} Gb/s ({fn.name!r})")
    return LineRate(tuple(ports), "; ".join(how))


def nic_line_rate(facts: Facts, dev: PciDevice) -> tuple[float, str] | None:
    """Gb/s all ports of the NIC chip at ``dev`` can carry together, and how it was read; None when unknown
    (:func:`nic_port_rates` summed)."""
    rates = nic_port_rates(facts, dev)
    return None if rates is None else (rates.total, rates.how)
