"""The PCI tree: every device with ids, driver, NUMA node, link state and its chain of upstream bridges.

Built from sysfs (``/sys/bus/pci/devices/*``, the resolved link giving the upstream path, as NCCL
walks it) and merged with ``lspci -vvv`` where present (port type, ACS control, device name).
In a sosreport there is no sysfs PCI tree, so the tree comes from ``lspci -nnvv`` alone, with
parents taken from each bridge's secondary bus number.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import field, replace
from typing import TYPE_CHECKING

from doctor.facts.pci_ids import pci_ids
from doctor.facts.pcie_gen import GENERATION
from doctor.facts.util import (
    BDF,
    COUNTER,
    LINK_WIDTH,
    NUMA_ID,
    memo,
    parse_cpulist,
    parse_int,
    parse_speed,
    read_number,
)
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Folder, Source
from doctor.sources.tree import FILE, OsTree

if TYPE_CHECKING:
    from doctor.parsers.lspci import LspciDevice

ROOT_PORT, UPSTREAM, DOWNSTREAM, ENDPOINT = "Root Port", "Upstream Port", "Downstream Port", "Endpoint"
_PCIE_TYPES = {0: ENDPOINT, 1: "Legacy Endpoint", 4: ROOT_PORT, 5: UPSTREAM, 6: DOWNSTREAM,
               7: "PCI-Express to PCI/PCI-X Bridge", 8: "PCI/PCI-X to PCI-Express Bridge",
               9: "Root Complex Integrated Endpoint", 10: "Root Complex Event Collector"}
_ACS_BITS = ("SrcValid", "TransBlk", "ReqRedir", "CmpltRedir", "UpstreamFwd", "EgressCtrl", "DirectTrans")
_LINK_ATTRS = frozenset({"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"})
_BUS_LINE = lazy(r"Bus: primary=([0-9a-f]{2}), secondary=([0-9a-f]{2}), subordinate=([0-9a-f]{2})")


@record
class PciDevice:
    """One PCI function. ``None`` means the evidence was missing, never a default."""

    address: str
    vendor: int | None
    device: int | None
    class_code: int | None  # 24-bit (0x030200); from lspci alone the low byte is 0
    origin: str  # where its facts were read: ``sys/bus/pci/devices/<bdf>`` or the lspci file
    subsystem_vendor: int | None = None
    subsystem_device: int | None = None
    name: str | None = None
    driver: str | None = None
    driver_override: str | None = None
    numa_node: int | None = None
    local_cpulist: str | None = None
    cur_speed: float | None = None
    cur_width: int | None = None
    max_speed: float | None = None
    max_width: int | None = None
    iommu_group: str | None = None
    path: tuple[str, ...] = ()  # root port first, this device last
    host_bridge: str | None = None  # e.g. "pci0000:00"
    port_type: str | None = None
    is_vf: bool = False
    acs: dict[str, bool] | None = None
    acs_origin: str | None = None
    power_state: str | None = None
    msi_irqs: tuple[int, ...] = ()
    secondary_bus: int | None = None
    aer: dict[str, dict[str, int]] = field(default_factory=dict)
    #: where the link fields came from when not from sysfs/lspci (the GPU driver: NVML or nvidia-smi)
    link_origin: str | None = None
    #: the maximum speed of the port above as the GPU driver reports it (nvidia-smi ``max_host_link_gen``)
    port_max_speed: float | None = None
    #: LnkCtl2 Target Link Speed (GT/s): the speed firmware or the OS allows this link to train to
    target_speed: float | None = None
    #: highest speed of LnkCap2's Supported Link Speeds vector (GT/s): what the silicon can do
    supported_speed: float | None = None
    #: LnkCap Max Link Speed (GT/s) read with ``supported_speed`` from the same capability (the kernel's
    #: ``max_link_speed`` may come from either register, depending on its version)
    advertised_speed: float | None = None
    #: MSI / MSI-X enable bits as ``lspci -vvv`` shows them (``MSI: Enable+``); None when not shown
    msi_enabled: bool | None = None
    msix_enabled: bool | None = None
    #: lspci's ``Interrupt: pin A routed to IRQ N``: the kernel's ``irq`` of the device (its INTx line, or its
    #: MSI vector while MSI is on)
    irq_line: int | None = None
    #: where ``numa_node`` and ``local_cpulist`` were read when not from ``origin``: a device folder holding only
    #: those attribute files (an nvidia-bug-report's ``*** /sys/bus/pci/devices/<bdf>/numa_node`` sections)
    locality_origin: str | None = None
    #: whether the function has a PCI Express capability (lspci's ``Express`` line or its config dump); ``False``
    #: when its capability list was read and holds none (a conventional PCI or chipset function: no link)
    express: bool | None = None

    @property
    def parent(self) -> str | None:
        return self.path[-2] if len(self.path) > 1 else None

    @property
    def base_class(self) -> int | None:
        """Class and subclass as 16 bits (0x0302 for a 3D controller)."""
        return None if self.class_code is None else self.class_code >> 8

    @property
    def is_bridge(self) -> bool:
        return self.base_class == 0x0604

    @property
    def is_gpu(self) -> bool:
        return self.vendor == 0x10DE and self.base_class in (0x0300, 0x0302)

    @property
    def is_nic(self) -> bool:
        return self.base_class in (0x0200, 0x0207)

    @property
    def is_nvswitch(self) -> bool:
        return self.vendor == 0x10DE and self.base_class == 0x0680

    @property
    def cpus(self) -> frozenset[int] | None:
        return parse_cpulist(self.local_cpulist)

    @property
    def function_base(self) -> str:
        """The address without its function number (``0000:17:00``)."""
        return self.address.rsplit(".", 1)[0]

    def attr(self, name: str) -> str:
        """Evidence name for one attribute (a sysfs file, or the lspci file it came from)."""
        if self.link_origin and name.split(" ", 1)[0] in _LINK_ATTRS:
            return f"{self.link_origin} [{self.address}] {name}"
        if self.locality_origin and name in ("numa_node", "local_cpulist"):
            return f"{self.locality_origin}/{name}"
        return f"{self.origin}/{name}" if self.origin.startswith("sys/") else f"{self.origin} [{self.address}]"


@record
class PciTree:
    """All PCI functions by address; ``origin`` is ``sysfs``, ``lspci`` or ``None`` (missing, see ``missing``)."""

    devices: dict[str, PciDevice]
    origin: str | None
    missing: str | None = None
    lspci_where: str | None = None
    lspci_access_denied: bool = False

    def get(self, address: str | None) -> PciDevice | None:
        return self.devices.get(address) if address else None

    def upstream(self, address: str) -> list[PciDevice]:
        """The bridges above ``address``, nearest first, ending at the root port."""
        dev = self.devices.get(address)
        if dev is None:
            return []
        return [self.devices[a] for a in reversed(dev.path[:-1]) if a in self.devices]

    def root_port(self, address: str) -> PciDevice | None:
        dev = self.devices.get(address)
        if dev is None or not dev.path:
            return None
        root = self.devices.get(dev.path[0])
        return root if root is not None and root.address != address else None

    def children(self, address: str) -> list[PciDevice]:
        def build() -> dict[str | None, list[PciDevice]]:
            out: dict[str | None, list[PciDevice]] = {}
            for d in self.devices.values():
                out.setdefault(d.parent, []).append(d)
            return out

        return list(memo(self, "_children", build).get(address, ()))

    @property
    def gpus(self) -> list[PciDevice]:
        return [d for d in self.devices.values() if d.is_gpu and not d.is_vf]

    @property
    def nics(self) -> list[PciDevice]:
        return [d for d in self.devices.values() if d.is_nic and not d.is_vf]


#: Drivers that bind only SR-IOV virtual functions: a VF when a recording lacks the ``physfn`` link (ghw, hwloc).
VF_DRIVERS = frozenset({"igbvf", "ixgbevf", "iavf", "i40evf"})
#: pci.ids names every VF "... Virtual Function" ("ConnectX-6 Virtual Function", "I350 Ethernet Controller Virtual
#: Function", "Ethernet Adaptive Virtual Function"): what a sosreport's lspci shows instead of ``physfn``.
_VF_NAME = lazy(r"\bVirtual Function\b", re.IGNORECASE)

_SPEED_CODE = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


@record
class _Express:
    port_type: str | None = None
    target_speed: float | None = None  # Link Control 2 bits 3:0
    supported_speed: float | None = None  # highest bit of Link Capabilities 2 bits 7:1
    advertised_speed: float | None = None  # Link Capabilities bits 3:0 (an index into that vector)


#: Largest config space (PCI Express extended); a bigger ``config`` file reads as missing.
CONFIG_MAX = 4096


class ConfigError(Exception):
    """Reading a config space on demand failed part-way (it then counts as unreadable, as a failed whole read)."""


class ConfigSpace:
    """A device's config space, read only where it is looked at on the live host.

    In a virtual machine every dword of config space read traps to the hypervisor (about 8 us here:
    a 4 KiB extended space took 6 ms); the walks below look at a few dwords of the header, the
    capability chain and the extended headers. ``has(n)``: the space holds at least ``n`` bytes;
    ``byte(i)`` and ``dword(i)`` (little-endian, ``i`` a multiple of 4) read them, ``word16(i)`` two
    bytes. Elsewhere (snapshots, tarballs) the whole file is read at once, as before.
    """

    __slots__ = ("_data", "_fd", "_dwords", "_at_least", "_below")

    def __init__(self, data: bytes, fd: int | None = None) -> None:
        self._data = data
        self._fd = fd
        self._dwords: dict[int, bytes] = {}
        self._at_least = 0  # the file holds at least this many bytes
        self._below: int | None = None  # and fewer than this many

    @classmethod
    def read(cls, src: Source, path: str, folder: Folder | None = None) -> ConfigSpace:
        """The ``config`` file at ``path``: opened for reading on demand on the live host, else read whole
        (by its name in ``folder``, the device's folder, when given)."""
        tree = src.tree
        if isinstance(tree, OsTree) and tree.root == "/" and getattr(src, "run_commands", False):
            name = path.rsplit("/", 1)[-1]
            if folder is not None and folder.kinds.get(name) == FILE and folder.real:
                real: str | None = f"{folder.real}/{name}"  # a file in the device's folder, resolved once
                src._note(path)
            else:
                real = src.realpath(path)  # resolved inside the root, as read_bytes does
            if real is None:
                return cls(b"")
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open("/" + real, flags)
            except (OSError, ValueError):
                return cls(b"")
            try:
                info = os.fstat(fd)
            except OSError:
                info = None
            if info is not None and stat.S_ISREG(info.st_mode) and info.st_size <= CONFIG_MAX:
                return cls(b"", fd)  # sysfs gives the space's size (256 or 4096); reads stop there
            os.close(fd)
            if info is None or not stat.S_ISREG(info.st_mode):
                return cls(b"")
        if folder is not None:
            return cls(folder.read_bytes(path.rsplit("/", 1)[-1], cap=CONFIG_MAX) or b"")
        return cls(src.read_bytes(path, cap=CONFIG_MAX) or b"")

    def _pread(self, size: int, offset: int) -> bytes:
        assert self._fd is not None
        try:
            return os.pread(self._fd, size, offset)
        except OSError as exc:
            raise ConfigError(str(exc)) from None

    def has(self, n: int) -> bool:
        if self._fd is None:
            return len(self._data) >= n
        if n <= self._at_least:
            return True
        if self._below is not None and n >= self._below:
            return False
        if self._pread(1, n - 1):
            self._at_least = n
            return True
        self._below = n
        return False

    def dword(self, i: int) -> int:
        """The four bytes at ``i`` (a multiple of 4), little-endian; the space must hold them (``has``)."""
        if self._fd is None:
            return int.from_bytes(self._data[i:i + 4], "little")
        got = self._dwords.get(i)
        if got is None:
            got = self._dwords[i] = self._pread(4, i)
        return int.from_bytes(got, "little")

    def byte(self, i: int) -> int:
        if self._fd is None:
            return self._data[i]
        return (self.dword(i & ~3) >> (8 * (i & 3))) & 0xFF

    def word16(self, i: int) -> int:
        return self.byte(i) | self.byte(i + 1) << 8

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _express(config: ConfigSpace) -> _Express:
    """Port type and link control/capability 2 from the PCI Express capability (config space)."""
    if not config.has(64) or not config.byte(0x06) & 0x10:
        return _Express()
    ptr, seen = config.byte(0x34) & 0xFC, 0
    while ptr >= 0x40 and ptr + 5 <= 256 and config.has(ptr + 5) and seen < 48:
        cap_id, nxt = config.byte(ptr), config.byte(ptr + 1) & 0xFC
        if cap_id == 0x10:
            flags = config.byte(ptr + 2)
            port_type = _PCIE_TYPES.get((flags >> 4) & 0xF)
            target = supported = advertised = None
            if config.has(ptr + 0x32) and (flags & 0xF) >= 2:  # capability version 2 has these
                target = _SPEED_CODE.get(config.byte(ptr + 0x30) & 0xF)
                vector = (config.byte(ptr + 0x2C) >> 1) & 0x7F
                supported = _SPEED_CODE.get(vector.bit_length()) if vector else None
                advertised = _SPEED_CODE.get(config.byte(ptr + 0x0C) & 0xF)
            return _Express(port_type, target, supported, advertised)
        ptr, seen = nxt, seen + 1
    return _Express()


def _pcie_capability(config: ConfigSpace) -> tuple[_Express, dict[str, bool] | None]:
    """The PCI Express capability (port type, link control and capabilities 2) and ACS control from the
    extended space."""
    express = _express(config)
    acs: dict[str, bool] | None = None
    if config.has(0x108):
        off, seen = 0x100, 0
        while off >= 0x100 and config.has(off + 9) and seen < 96:
            header = config.dword(off)
            if header in (0, 0xFFFFFFFF):
                break
            if header & 0xFFFF == 0x000D:
                ctl = config.word16(off + 6)
                acs = {bit: bool(ctl & (1 << i)) for i, bit in enumerate(_ACS_BITS)}
                break
            off, seen = (header >> 20) & 0xFFC, seen + 1
    return express, acs


def _parse_aer(text: str | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (text or "").splitlines():
        parts = line.split()
        value = read_number(parts[1], COUNTER) if len(parts) == 2 else None
        if value is not None:
            out[parts[0]] = value
    return out


def _sysfs_device(src: Source, address: str) -> PciDevice:
    base = f"sys/bus/pci/devices/{address}"
    folder = src.folder(base)  # resolved and listed once: each attribute below is read by name in it
    comps = (folder.real or "").split("/")
    path = tuple(c for c in comps if BDF.match(c))
    host = next((c for c in comps if c.startswith("pci") and ":" in c), None)
    if not path or path[-1] != address:
        path = (address,)
    config = ConfigSpace.read(src, f"{base}/config", folder)
    try:
        express, acs = _pcie_capability(config)
    except ConfigError:  # as a whole read that failed: no config space
        express, acs = _Express(), None
    finally:
        config.close()
    line = folder.read_line
    msi = tuple(sorted(int(n) for n in folder.listdir("msi_irqs") if n.isdigit()))
    override = line("driver_override")
    driver = folder.link_name("driver")
    aer = {}
    for kind in ("correctable", "nonfatal", "fatal"):
        parsed = _parse_aer(folder.read_text(f"aer_dev_{kind}")) if f"aer_dev_{kind}" in folder else None
        if parsed:
            aer[kind] = parsed
    return PciDevice(
        address=address,
        vendor=parse_int(line("vendor"), 16),
        device=parse_int(line("device"), 16),
        class_code=parse_int(line("class"), 16),
        origin=base,
        subsystem_vendor=parse_int(line("subsystem_vendor"), 16),
        subsystem_device=parse_int(line("subsystem_device"), 16),
        driver=driver,
        driver_override=None if override in (None, "(null)") else override,
        numa_node=read_number(line("numa_node"), NUMA_ID),
        local_cpulist=line("local_cpulist"),
        cur_speed=link_speed(parse_speed(line("current_link_speed"))),
        cur_width=read_number(line("current_link_width"), LINK_WIDTH),
        max_speed=link_speed(parse_speed(line("max_link_speed"))),
        max_width=read_number(line("max_link_width"), LINK_WIDTH),
        iommu_group=folder.link_name("iommu_group"),
        path=path,
        host_bridge=host,
        port_type=express.port_type,
        is_vf=driver in VF_DRIVERS or folder.exists("physfn"),
        acs=acs,
        acs_origin=f"{base}/config" if acs is not None else None,
        power_state=line("power_state"),
        msi_irqs=msi,
        aer=aer,
        target_speed=express.target_speed,
        supported_speed=express.supported_speed,
        advertised_speed=express.advertised_speed,
    )


def link_speed(value: float | None) -> float | None:
    """A link speed read from the host, kept only when it is a PCIe rate (2.5-64 GT/s): anything else
    is unreadable, never a speed a verdict could call healthy."""
    return value if value in GENERATION else None


def link_width(value: int | None) -> int | None:
    """A link width read from the host, kept only within what PCIe defines (0, link down, to x32)."""
    return value if value is not None and LINK_WIDTH[0] <= value <= LINK_WIDTH[1] else None


def within_nodes(tree: PciTree, nodes: frozenset[int]) -> PciTree:
    """``tree`` with a NUMA node that is none of ``nodes`` (the host's, when known) unreadable
    (``None``): node 7 on a two-node host is a broken source, not a locality to judge."""
    if not nodes:
        return tree
    wrong = [d for d in tree.devices.values() if d.numa_node is not None and d.numa_node != -1
             and d.numa_node not in nodes]
    if not wrong:
        return tree
    devices = dict(tree.devices)
    for dev in wrong:
        devices[dev.address] = replace(dev, numa_node=None)
    return replace(tree, devices=devices)


def _structural_port_types(devices: dict[str, PciDevice]) -> dict[str, str]:
    """Guess port types from the tree shape when config space and lspci are both missing."""
    guessed: dict[str, str] = {}
    for dev in devices.values():
        if not dev.is_bridge:
            continue
        parent = devices.get(dev.parent) if dev.parent else None
        if parent is None:
            guessed[dev.address] = ROOT_PORT
        else:
            parent_type = parent.port_type or guessed.get(parent.address)
            guessed[dev.address] = DOWNSTREAM if parent_type == UPSTREAM else UPSTREAM
    return guessed


def _merge_lspci(dev: PciDevice, info: LspciDevice, where: str) -> PciDevice:
    changes: dict[str, object] = {}
    if dev.port_type is None and info.port_type:
        changes["port_type"] = info.port_type
    if dev.acs is None and info.acs_ctl is not None:
        changes["acs"] = info.acs_ctl
        changes["acs_origin"] = where
    if info.description:
        changes["name"] = info.description
        if not dev.is_vf and _VF_NAME.search(info.description):
            changes["is_vf"] = True
    if dev.numa_node is None and info.numa_node is not None \
            and NUMA_ID[0] <= info.numa_node <= NUMA_ID[1]:
        changes["numa_node"] = info.numa_node
    if dev.driver is None and info.driver:
        changes["driver"] = info.driver
    if dev.iommu_group is None and info.iommu_group:
        changes["iommu_group"] = info.iommu_group
    if dev.express is None and info.express is not None:
        changes["express"] = info.express
    for name in ("msi_enabled", "msix_enabled", "irq_line"):
        if getattr(dev, name) is None and getattr(info, name) is not None:
            changes[name] = getattr(info, name)
    for ours, theirs in (("max_speed", "link_cap_speed"), ("max_width", "link_cap_width"),
                         ("cur_speed", "link_sta_speed"), ("cur_width", "link_sta_width"),
                         ("target_speed", "link_target_speed"), ("supported_speed", "link_cap2_speed"),
                         ("advertised_speed", "link_cap_speed")):
        value = getattr(info, theirs)
        value = link_width(value) if ours.endswith("width") else link_speed(value)
        if getattr(dev, ours) is None and value is not None:
            changes[ours] = value
    if not changes:
        return dev
    return replace(dev, **changes)  # type: ignore[arg-type]


def _secondary_buses(text: str) -> dict[str, int]:
    """Map bridge address -> secondary bus from ``Bus: primary=.., secondary=..`` lines."""
    out: dict[str, int] = {}
    current: str | None = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            token = line.split(" ", 1)[0].lower()
            current = token if token.count(":") == 2 else f"0000:{token}"
        elif current:
            match = _BUS_LINE.search(line)
            if match:
                out[current] = int(match.group(2), 16)
    return out


def _tree_from_lspci(parsed: dict[str, LspciDevice], text: str, where: str) -> dict[str, PciDevice]:
    secondary = _secondary_buses(text)
    bus_owner: dict[tuple[str, int], str] = {}
    for addr, bus in secondary.items():
        bus_owner[(addr.split(":")[0], bus)] = addr

    def parent_of(addr: str) -> str | None:
        domain, bus = addr.split(":")[0], int(addr.split(":")[1], 16)
        owner = bus_owner.get((domain, bus))
        return owner if owner != addr else None

    devices: dict[str, PciDevice] = {}
    for addr, info in parsed.items():
        chain = [addr]
        seen = {addr}
        cur = parent_of(addr)
        while cur and cur not in seen and len(chain) < 32:
            chain.append(cur)
            seen.add(cur)
            cur = parent_of(cur)
        cls16, vendor, device = info.class_code, info.vendor_id, info.device_id
        if cls16 is None or vendor is None or device is None:  # pasted without -nn: names back to ids
            by_name = pci_ids().resolve(info.class_name, info.description)
            cls16 = cls16 if cls16 is not None else by_name[0]
            vendor = vendor if vendor is not None else by_name[1]
            device = device if device is not None else by_name[2]
        cls = cls16 << 8 if cls16 is not None else None
        dev = PciDevice(address=addr, vendor=vendor, device=device, class_code=cls,
                        origin=where, path=tuple(reversed(chain)), secondary_bus=secondary.get(addr))
        devices[addr] = _merge_lspci(dev, info, where)
    return devices


#: Files every sysfs PCI device folder holds: a folder with none of them is no sysfs device
_IDENTITY = ("vendor", "class")


def _with_locality(src: Source, devices: dict[str, PciDevice], loose: list[str]) -> dict[str, PciDevice]:
    """``devices`` with ``numa_node`` and ``local_cpulist`` from device folders that hold only such attribute
    files (no sysfs tree: an nvidia-bug-report's sections), over what lspci printed (lspci omits node -1)."""
    out = dict(devices)
    for address in loose:
        dev = out.get(address)
        if dev is None:
            continue
        base = f"sys/bus/pci/devices/{address}"
        node = read_number(src.read_line(f"{base}/numa_node"), NUMA_ID)
        cpulist = src.read_line(f"{base}/local_cpulist")
        if node is not None or cpulist is not None:
            out[address] = replace(dev, numa_node=dev.numa_node if node is None else node,
                                   local_cpulist=cpulist or dev.local_cpulist, locality_origin=base)
    return out


def build_pci(src: Source) -> PciTree:
    """The PCI tree from sysfs, merged with lspci; from lspci alone when sysfs is absent."""
    addresses = [a for a in src.listdir("sys/bus/pci/devices") if BDF.match(a)]
    loose: list[str] = []
    if addresses and not any(src.exists(f"sys/bus/pci/devices/{a}/{n}") for a in addresses for n in _IDENTITY):
        loose, addresses = addresses, []  # attribute files recorded one by one (a bug report): no sysfs tree
    lspci = src.command("lspci_vvv")
    parsed: dict[str, LspciDevice] = {}
    if lspci.text:  # the parser is imported only when there is lspci output (sosreports, hosts with pciutils)
        from doctor.parsers.lspci import parse_lspci

        parsed = parse_lspci(lspci.text)
    denied = any(d.access_denied for d in parsed.values())
    if addresses:
        devices = {a: _sysfs_device(src, a) for a in addresses}
        for addr, info in parsed.items():
            if addr in devices:
                devices[addr] = _merge_lspci(devices[addr], info, lspci.where)
        guessed = _structural_port_types(devices)
        for addr, ptype in guessed.items():
            if devices[addr].port_type is None:
                devices[addr] = replace(devices[addr], port_type=ptype)
        return PciTree(devices, "sysfs", lspci_where=lspci.where if parsed else None, lspci_access_denied=denied)
    if parsed and lspci.text:
        devices = _with_locality(src, _tree_from_lspci(parsed, lspci.text, lspci.where), loose)
        return PciTree(devices, "lspci", lspci_where=lspci.where, lspci_access_denied=denied)
    reason = "no sys/bus/pci/devices"
    if lspci.reason:
        reason += f" and {lspci.reason}"
    return PciTree({}, None, missing=reason)
