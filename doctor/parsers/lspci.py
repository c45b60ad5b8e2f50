"""Parser for ``lspci -vvv`` / ``lspci -nnvv`` / ``lspci -D -nn -vvv`` output.

Sample input (``lspci -D -nn -vvv`` as root; detail lines are tab-indented)::

    0000:17:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)
    \tSubsystem: NVIDIA Corporation Device [10de:16c1]
    \tPhysical Slot: 1
    \tNUMA node: 0
    \tIOMMU group: 12
    \tCapabilities: [60] Express (v2) Endpoint, MSI 00
    \t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported
    \t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)
    \tKernel driver in use: nvidia

Never trust the ``(downgraded)``/``(ok)`` annotations (their meaning changed across
pciutils versions); this parser drops them and keeps the raw numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

from doctor.lazyre import lazy
from doctor.record import record

__all__ = ["LspciDevice", "normalize_pci_address", "parse_lspci", "parse_lspci_tree"]


@record
class LspciDevice:
    """One PCI function as printed by ``lspci -vv``; ``None`` means "not shown"."""

    address: str
    class_name: str
    class_code: int | None
    vendor_id: int | None
    device_id: int | None
    description: str
    port_type: str | None
    link_cap_speed: float | None
    link_cap_width: int | None
    link_sta_speed: float | None
    link_sta_width: int | None
    acs_ctl: dict[str, bool] | None
    driver: str | None
    numa_node: int | None
    iommu_group: str | None
    access_denied: bool
    physical_slot: str | None
    link_target_speed: float | None = None  # LnkCtl2 Target Link Speed (what firmware/OS lets it train to)
    link_cap2_speed: float | None = None  # highest of LnkCap2 Supported Link Speeds
    #: ``Capabilities: [68] MSI: Enable+ Count=1/1 ...``: whether MSI is on; None when no MSI capability is shown
    msi_enabled: bool | None = None
    #: ``Capabilities: [b0] MSI-X: Enable+ Count=9 Masked-``: whether MSI-X is on; None when not shown
    msix_enabled: bool | None = None
    #: ``Interrupt: pin A routed to IRQ 17``: the device's ``irq`` (its INTx line, or its MSI vector while MSI is on)
    irq_line: int | None = None
    #: whether the function has a PCI Express capability: ``True`` when lspci shows one (``Express (v2) Endpoint``,
    #: ``Express (v2) Root Complex Integrated Endpoint``), ``False`` when its capability list is shown (or dumped)
    #: and holds none, or ``Status: Cap-`` says it has no list; ``None`` when the list is not shown (access denied)
    express: bool | None = None


_ADDR_RE = lazy(
    r"^(?:(?P<dom>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})\.(?P<fn>[0-7])$"
)
_HEADER_RE = lazy(
    r"^(?P<addr>(?:[0-9a-fA-F]{1,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<rest>\S.*)$"
)
_CLASS_CODE_RE = lazy(r"^(?P<name>.*?)\s*\[(?P<code>[0-9a-fA-F]{4})\]$")
_TRAILER_RE = lazy(r"\s*\((?:rev [0-9a-fA-F]+|prog-if [0-9a-fA-F]{2}(?: \[[^\]]*\])?)\)\s*$")
_IDS_RE = lazy(r"\s*\[(?P<ven>[0-9a-fA-F]{4}):(?P<dev>[0-9a-fA-F]{4})\]\s*$")
_EXPRESS_RE = lazy(r"^Capabilities:\s*\[[0-9a-fA-F]+\]\s*Express\s+(?:\(v\d+\)\s+)?(?P<type>[^,]+)")
_SLOT_SUFFIX_RE = lazy(r"\s*\(Slot[+-]\)\s*$")
_SPEED_RE = lazy(r"Speed\s+(?P<speed>[0-9]+(?:\.[0-9]+)?)\s*GT/s")
_RANGE_RE = lazy(r"Supported Link Speeds:\s*(?:[0-9.]+-)?(?P<speed>[0-9]+(?:\.[0-9]+)?)\s*GT/s")
_TARGET_RE = lazy(r"Target Link Speed:\s*(?P<speed>[0-9]+(?:\.[0-9]+)?)\s*GT/s")
_WIDTH_RE = lazy(r"Width\s+x(?P<width>[0-9]+)")
_MAX_HEADER = 1024
#: A line of a config-space dump (``lspci -x``/``-xxx``/``-xxxx``): offset, then up to 16 bytes in hex.
_HEX_RE = lazy(r"^(?P<off>[0-9a-f]{2,3}):(?P<bytes>(?: [0-9a-f]{2}){1,16})\s*$")
#: Config space kept per device (``-xxxx`` prints 4 KiB; the PCI Express capability lies in the first 256 bytes).
_CONFIG_BYTES = 256
#: Link speed codes of LnkCap/LnkSta (PCIe base specification, 7.5.3.6) in GT/s.
_SPEED_CODES = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
#: Device/Port Type field of the PCI Express Capabilities register, in lspci's words.
_PORT_TYPES = {0: "Endpoint", 1: "Legacy Endpoint", 4: "Root Port", 5: "Upstream Port", 6: "Downstream Port",
               7: "PCI-Express to PCI/PCI-X Bridge", 8: "PCI/PCI-X to PCI-Express Bridge",
               9: "Root Complex Integrated Endpoint", 10: "Root Complex Event Collector"}
_FLAG_RE = lazy(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?P<sign>[+-])(?=\s|$)")
#: The MSI and MSI-X capabilities (``MSI: Enable+ Count=1/1``; pciutils before 2.2.5 printed ``Message Signalled
#: Interrupts: 64bit+ Queue=0/0 Enable-``). The Express capability's ``, MSI 00`` is an interrupt message number.
_MSI_RE = lazy(r"^Capabilities:\s*\[[0-9a-fA-F]+\]\s*(?P<kind>MSI-X|MSI|Message Signalled Interrupts):.*?"
               r"\bEnable(?P<sign>[+-])")
_IRQ_LINE_RE = lazy(r"^Interrupt:\s*pin\s+\S+\s+routed to IRQ\s+(?P<irq>\d{1,9})\b")
#: Capability ids (PCI Local Bus 3.0, 6.7): MSI, MSI-X; the enable bit of each one's Message Control word.
_CAP_MSI, _CAP_MSIX = 0x05, 0x11


#: What a config-space dump line starts with (:data:`_HEX_RE`)
_HEX_START = frozenset("0123456789abcdef")
#: The detail lines :meth:`_Builder.feed` reads, by the text before their first colon
_FIELDS = frozenset({"Capabilities", "Status", "Interrupt", "LnkCap", "LnkSta", "LnkCap2", "LnkCtl2", "ACSCtl",
                     "Kernel driver in use", "NUMA node", "IOMMU group", "Physical Slot"})


def normalize_pci_address(raw: str) -> str | None:
    """Return ``dddd:bb:dd.f`` (lowercase) for an lspci/NVML/sysfs address, or ``None``.

    ``17:00.0`` -> ``0000:17:00.0``; ``00000000:17:00.0`` -> ``0000:17:00.0``;
    ``10000:00:04.0`` (VMD domain) stays as is.
    """
    m = _ADDR_RE.match(raw.strip())
    if m is None:
        return None
    dom = (m.group("dom") or "0").lower()
    dom = dom.lstrip("0").rjust(4, "0")
    return (
        f"{dom}:{m.group('bus').lower().rjust(2, '0')}:{m.group('dev').lower().rjust(2, '0')}.{m.group('fn')}"
    )


def _int(text: str, base: int = 10) -> int | None:
    try:
        return int(text, base)
    except ValueError:
        return None


def _speed(text: str) -> float | None:
    m = _SPEED_RE.search(text)
    if m is None:
        return None
    try:
        return float(m.group("speed"))
    except ValueError:
        return None


def _capabilities(cfg: bytes, room: int) -> Iterator[int]:
    """The offsets of the capability list of a dumped config space (at most 48), while ``room`` bytes fit."""
    if len(cfg) < 64 or not cfg[0x06] & 0x10:  # no capability list
        return
    ptr, seen = cfg[0x34] & 0xFC, 0
    while 0x40 <= ptr <= len(cfg) - room and seen < 48:
        yield ptr
        ptr, seen = cfg[ptr + 1] & 0xFC, seen + 1


def _width(text: str) -> int | None:
    m = _WIDTH_RE.search(text)
    return _int(m.group("width")) if m else None


#: what :meth:`_Builder.build` copies
_DEVICE_FIELDS = tuple(f.name for f in fields(LspciDevice))


class _Builder:
    """Mutable accumulator for one device (an attribute per field of :class:`LspciDevice`), frozen into one
    at the end."""

    def __init__(self, address: str, rest: str) -> None:
        self.address = address
        self.class_name = ""
        self.class_code: int | None = None
        self.vendor_id: int | None = None
        self.device_id: int | None = None
        self.description = ""
        self.port_type: str | None = None
        self.link_cap_speed: float | None = None
        self.link_cap_width: int | None = None
        self.link_sta_speed: float | None = None
        self.link_sta_width: int | None = None
        self.acs_ctl: dict[str, bool] | None = None
        self.driver: str | None = None
        self.numa_node: int | None = None
        self.iommu_group: str | None = None
        self.access_denied = False
        self.physical_slot: str | None = None
        self.link_target_speed: float | None = None
        self.link_cap2_speed: float | None = None
        self.msi_enabled: bool | None = None
        self.msix_enabled: bool | None = None
        self.irq_line: int | None = None
        self.express: bool | None = None
        self.capabilities_shown = False  # a ``Capabilities: [..]`` line other than ``<access denied>``
        self.cap_list: bool | None = None  # ``Status: Cap+`` / ``Cap-``
        self.config = bytearray()  # config-space bytes from a hex dump, in order from offset 0
        self._parse_header(rest)

    def hexdump(self, line: str) -> bool:
        """Take one line of a config-space dump (only contiguous from offset 0); whether it was one."""
        s = line.strip()
        if s[:1] not in _HEX_START or ":" not in s[2:4]:  # not "00:" or "100:": no pattern to try
            return False
        m = _HEX_RE.match(s)
        if m is None:
            return False
        if int(m.group("off"), 16) == len(self.config) and len(self.config) < _CONFIG_BYTES:
            self.config.extend(bytes.fromhex(m.group("bytes")))
        return True

    def _decode_config(self) -> None:
        """Link capability and status from the dumped config space, for reports that print no LnkCap lines
        (old ``lspci -v -xxx`` sections of nvidia-bug-report logs)."""
        cfg = bytes(self.config)
        for ptr in _capabilities(cfg, 0x14):
            if cfg[ptr] == 0x10:
                flags = cfg[ptr + 2]
                cap = int.from_bytes(cfg[ptr + 0x0C:ptr + 0x10], "little")
                sta = int.from_bytes(cfg[ptr + 0x12:ptr + 0x14], "little")
                if self.port_type is None:
                    self.port_type = _PORT_TYPES.get(flags >> 4 & 0xF)
                if cap and cap != 0xFFFFFFFF:
                    self.link_cap_speed = _SPEED_CODES.get(cap & 0xF)
                    self.link_cap_width = (cap >> 4 & 0x3F) or None
                    self.link_sta_speed = _SPEED_CODES.get(sta & 0xF)
                    self.link_sta_width = sta >> 4 & 0x3F if sta != 0xFFFF else None
                if (flags & 0xF) >= 2 and len(cfg) >= ptr + 0x30 and self.link_cap2_speed is None:
                    vector = cfg[ptr + 0x2C] >> 1 & 0x7F
                    self.link_cap2_speed = _SPEED_CODES.get(vector.bit_length()) if vector else None
                return

    def _decode_msi(self) -> None:
        """MSI and MSI-X enable bits from the dumped config space, for reports that print no capability lines."""
        cfg = bytes(self.config)
        for ptr in _capabilities(cfg, 4):
            control = int.from_bytes(cfg[ptr + 2:ptr + 4], "little")
            if cfg[ptr] == _CAP_MSI and self.msi_enabled is None:
                self.msi_enabled = bool(control & 0x0001)
            elif cfg[ptr] == _CAP_MSIX and self.msix_enabled is None:
                self.msix_enabled = bool(control & 0x8000)

    def _parse_header(self, rest: str) -> None:
        rest = rest[:_MAX_HEADER]  # real headers are < 300 chars; bounds regex work on junk
        cls, sep, desc = rest.partition(": ")
        if not sep:
            cls, desc = rest.rstrip(":"), ""
        m = _CLASS_CODE_RE.match(cls.strip())
        if m:
            self.class_name = m.group("name").strip()
            self.class_code = _int(m.group("code"), 16)
        else:
            self.class_name = cls.strip()
        desc = desc.strip()
        for _ in range(4):  # "(rev xx)" and "(prog-if xx [...])", at most once each
            stripped = _TRAILER_RE.sub("", desc)
            if stripped == desc:
                break
            desc = stripped
        ids = _IDS_RE.search(desc)
        if ids:
            self.vendor_id = _int(ids.group("ven"), 16)
            self.device_id = _int(ids.group("dev"), 16)
            desc = desc[: ids.start()]
        self.description = desc.strip()

    def feed(self, line: str) -> None:
        s = line.strip()
        if s.partition(":")[0] not in _FIELDS:  # most detail lines (BARs, capabilities' registers)
            return
        if s.startswith("Capabilities:"):
            if "<access denied>" in s:
                self.access_denied = True
                return
            self.capabilities_shown = True
            m = _EXPRESS_RE.match(s)
            if m:
                self.express = True
            if m and self.port_type is None:
                self.port_type = _SLOT_SUFFIX_RE.sub("", m.group("type")).strip() or None
            elif m is None and (msi := _MSI_RE.match(s[:200])):
                if msi.group("kind") == "MSI-X":
                    self.msix_enabled = msi.group("sign") == "+"
                else:
                    self.msi_enabled = msi.group("sign") == "+"
        elif s.startswith("Status: Cap") and self.cap_list is None:
            self.cap_list = s[11:12] == "+"
        elif s.startswith("Interrupt:") and self.irq_line is None:
            routed = _IRQ_LINE_RE.match(s)
            self.irq_line = int(routed.group("irq")) if routed else None
        elif s.startswith("LnkCap:"):
            if self.link_cap_speed is None and self.link_cap_width is None:
                self.link_cap_speed = _speed(s)
                self.link_cap_width = _width(s)
        elif s.startswith("LnkSta:"):
            if self.link_sta_speed is None and self.link_sta_width is None:
                self.link_sta_speed = _speed(s)
                self.link_sta_width = _width(s)
        elif s.startswith("LnkCap2:") and self.link_cap2_speed is None:
            m2 = _RANGE_RE.search(s)
            self.link_cap2_speed = float(m2.group("speed")) if m2 else None
        elif s.startswith("LnkCtl2:") and self.link_target_speed is None:
            m2 = _TARGET_RE.search(s)
            self.link_target_speed = float(m2.group("speed")) if m2 else None
        elif s.startswith("ACSCtl:"):
            if self.acs_ctl is None:
                flags = {m.group("name"): m.group("sign") == "+" for m in _FLAG_RE.finditer(s[7:])}
                self.acs_ctl = flags or None
        elif s.startswith("Kernel driver in use:"):
            self.driver = s.split(":", 1)[1].strip() or None
        elif s.startswith("NUMA node:"):
            self.numa_node = _int(s.split(":", 1)[1].strip())
        elif s.startswith("IOMMU group:"):
            self.iommu_group = s.split(":", 1)[1].strip() or None
        elif s.startswith("Physical Slot:"):
            self.physical_slot = s.split(":", 1)[1].strip() or None

    def _has_express(self) -> bool | None:
        """Whether the function has a PCI Express capability: from lspci's lines, else from its dumped capability
        list (walked to its end inside the dump); ``None`` when neither shows it."""
        if self.express or self.access_denied:
            return self.express
        if self.capabilities_shown or self.cap_list is False:
            return False
        cfg = bytes(self.config)
        if len(cfg) < 64:
            return None
        if not cfg[0x06] & 0x10:
            return False
        ptr, seen = cfg[0x34] & 0xFC, 0
        while ptr and seen < 48:
            if not 0x40 <= ptr <= len(cfg) - 2:
                return None  # points outside what was dumped
            if cfg[ptr] == 0x10:
                return True
            ptr, seen = cfg[ptr + 1] & 0xFC, seen + 1
        return False if not ptr else None

    def finish(self) -> LspciDevice:
        """:meth:`build`, with whether the function has a PCI Express capability."""
        from dataclasses import replace

        dev = self.build()
        express = self._has_express()
        return dev if express is None else replace(dev, express=express)

    def build(self) -> LspciDevice:
        if self.link_cap_speed is None and self.link_cap_width is None and self.config:
            self._decode_config()
        if self.msi_enabled is None and self.msix_enabled is None and self.config:
            self._decode_msi()
        return LspciDevice(**{name: getattr(self, name) for name in _DEVICE_FIELDS})


def parse_lspci(text: str) -> dict[str, LspciDevice]:
    """Parse ``lspci -vv``-style text into ``{"0000:17:00.0": LspciDevice}``.

    Header lines start in column 0 with a bus address (domain optional); detail lines are
    indented. Anything else (stderr noise such as ``lspci: Unable to load libkmod resources``,
    garbage, truncated tails) is ignored. Never raises.
    """
    devices: dict[str, LspciDevice] = {}
    if not isinstance(text, str) or not text:
        return devices
    current: _Builder | None = None
    for line in text.splitlines():
        s = line.strip()  # once a line: most lines (BARs, registers) end at the test of their first word below
        if not s:
            continue
        if current is not None and s[:1] in _HEX_START and ":" in s[2:4] and current.hexdump(s):
            continue
        if not line[0].isspace():
            m = _HEADER_RE.match(line.rstrip())
            addr = normalize_pci_address(m.group("addr")) if m else None
            if current is not None:
                devices[current.address] = current.finish()
                current = None
            if m and addr:
                current = _Builder(addr, m.group("rest"))
            continue
        if current is not None and s.partition(":")[0] in _FIELDS:
            current.feed(s)
    if current is not None:
        devices[current.address] = current.finish()
    return devices


#: One token of ``lspci -t``: a bus in brackets (``[0000:00]`` a root bus with its domain, ``[01]`` or ``[04-51]``
#: a bridge's secondary bus range) or a function (``1c.0``) on the bus its connector column leads to
_TREE_TOKEN = lazy(r"\[(?:(?P<dom>[0-9a-f]{4,8}):)?(?P<bus>[0-9a-f]{2})(?:-[0-9a-f]{2})?\]|(?P<dev>[0-9a-f]{2}\.[0-7])")
#: Most lines and functions of a tree read (a PCI hierarchy has at most 65,536 functions per domain)
_TREE_LINES = 65536


def parse_lspci_tree(text: str) -> dict[str, tuple[str, ...]]:
    """Each function of ``lspci -t`` (``-tv``, ``-nntv``) with its path: the bridges above it from the one on the
    root bus down, then itself (``{"0000:01:00.0": ("0000:00:01.1", "0000:01:00.0")}``)::

        -[0000:00]-+-00.0
                   +-01.1-[01]--+-00.0
                   |            \\-00.1
                   +-1c.0-[04-51]----00.0-[05-51]--+-00.0-[06]----00.0

    A function's connector (``+-``, ``\\-``, ``--``) sits two columns before it; the column is bound to the bus of
    the bracket that precedes it on its first line, and later lines' connectors in that column hang off the same
    bus. Names (``-tv``) follow two spaces and are not read. The tree gives topology only: no link registers.
    Never raises; junk lines are skipped.
    """
    paths: dict[str, tuple[str, ...]] = {}
    columns: dict[int, tuple[str, str, tuple[str, ...]]] = {}  # connector column -> (domain, bus, bridges above)
    for line in text.splitlines()[:_TREE_LINES]:
        line = line[:4096]
        pending: tuple[str, str, tuple[str, ...]] | None = None
        last: tuple[int, str, tuple[str, ...]] | None = None  # (end column, domain, path) of the last function
        for m in _TREE_TOKEN.finditer(line):
            if m.group("bus"):
                if m.group("dom"):
                    pending = (m.group("dom").rjust(4, "0")[-8:], m.group("bus"), ())
                elif last is not None and m.start() == last[0] + 1:  # "01.1-[01]": the bridge's secondary bus
                    pending = (last[1], m.group("bus"), last[2])
                elif last is None and not columns:
                    pending = ("0000", m.group("bus"), ())
                continue
            col = m.start() - 2
            if pending is not None:
                columns[col] = pending
                pending = None
            parent = columns.get(col)
            if parent is None or len(paths) >= _TREE_LINES:
                last = None
                continue
            domain, bus, above = parent
            address = f"{domain}:{bus}:{m.group('dev')}"
            paths.setdefault(address, above + (address,))
            last = (m.end(), domain, above + (address,))
            if line[m.end():m.end() + 2] == "  ":
                break  # the rest is the function's name
    return paths
