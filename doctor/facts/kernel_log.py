"""Kernel log facts: NVIDIA Xid events and the PCIe bandwidth line the kernel prints at probe time.

Sample ``dmesg`` lines (plain, ``dmesg -T``, ``dmesg -x --time-format=iso`` and ``journalctl -k`` prefixes are all
accepted)::

    [ 1843.308145] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.
    [Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM ...
    [    0.499779] pci 0000:0b:00.0: 126.016 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x16 link
        at 0000:00:03.1 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)

The Xid address lacks the PCI function (``0000:3b:00``); it is normalised to ``0000:3b:00.0``.
The ring buffer holds events since boot, or since it wrapped: no Xid line is not proof of none.
"""

from __future__ import annotations

from doctor.facts.util import memo, normalise_bdf
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source

SPEC = "dmesg"
#: docs/checks.md#gpu-xid-errors: ``NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)``
XID_RE = lazy(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)")
#: kernel ``__pcie_print_link_status`` (drivers/pci/pci.c), ``, in Flit mode`` on newer kernels.
BANDWIDTH_RE = lazy(
    r"pci (?P<dev>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]): "
    r"(?P<avail>[0-9.]+) Gb/s available PCIe bandwidth, limited by (?P<speed>[0-9.]+) GT/s PCIe "
    r"x(?P<width>\d+) link at (?P<at>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) "
    r"\(capable of (?P<cap>[0-9.]+) Gb/s with (?P<cap_speed>[0-9.]+) GT/s PCIe x(?P<cap_width>\d+) link\)"
    r"(?P<flit>, in Flit mode)?")
_STAMP_RE = lazy(r"^\s*\[\s*([^\]]+?)\s*\]")
_SYSLOG_STAMP_RE = lazy(r"^([A-Z][a-z]{2}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2})\s")
#: ``dmesg --time-format=iso`` and ``journalctl -o short-iso``: ``2025-01-21T04:41:44,283302+00:00``
_ISO_STAMP_RE = lazy(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[,.]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
#: ``dmesg -x`` (``--decode``) puts facility and level first: ``kern  :warn  : ``
_DECODE_RE = lazy(r"^[a-z]{2,8}\s*:[a-z]{3,6}\s*:\s")
#: How the refusal under ``kernel.dmesg_restrict=1`` reads (util-linux dmesg, EPERM).
_REFUSED = ("operation not permitted", "permission denied")


@record
class XidEvent:
    """One ``NVRM: Xid`` line."""

    address: str  # normalised ``0000:3b:00.0`` (raw text lowercased when it is not a PCI address)
    xid: int
    text: str  # the message from ``NVRM:`` on
    timestamp: str | None  # ``1843.308145``, ``Fri Aug 30 11:43:09 2024`` or ``Feb 14 05:03:41``
    #: Xid 154: the recovery action the driver now asks for (``reset``, ``reboot``, ``drain_p2p``,
    #: ``drain_and_reset``, ``bus_reset``, ``system_reboot``, ``recover_imex_domain``, ``none``), from "GPU recovery action changed from 0x0 (None) to 0x1 (...)"
    recovery: str | None = None
    #: Xid 144-150: the NVLink unit the line names (``NETIR_LINK_EVT``) and the subcode, bits 20-25
    #: of the first interrupt-information word (``(0x00450000 ...)``), where the line gives them
    unit: str | None = None
    subcode: int | None = None
    #: Xid 144-150: the first two interrupt words in full (``0x004505c6``, the error status ``0x00000000``),
    #: which the catalogue's decode sheet keys on (doctor/xid_catalog.py ``nvlink_rule``)
    intrinfo: int | None = None
    error_status: int | None = None


#: NVML ``nvmlGpuRecoveryAction_t`` values, as Xid 154 prints them (``0x1 (GPU Reset Required)``)
#: (the same numbering as doctor/facts/nvml.py, R580+ values 5-7 included)
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset",
                    5: "recover_imex_domain", 6: "bus_reset", 7: "system_reboot"}
_RECOVERY_RE = lazy(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to (0x[0-9a-fA-F]{1,8}) \(([^)]{0,80})\)")
#: Xid 144-150 after the code: ``NETIR_LINK_EVT Fatal XC0 i0 Link 04 (0x004505c6 0x00000000 ...)``
_NVLINK_RE = lazy(r"\d+, (?:pid=[^,]{0,40}, name=[^,]{0,80}, )?(?:[A-Za-z]+: )?([A-Z][A-Z0-9_]{1,40})\b[^(]{0,80}\((0x[0-9a-fA-F]{1,8})\b(?: (0x[0-9a-fA-F]{1,8})\b)?")


def recovery_action(text: str) -> str | None:
    """The action an Xid 154 line asks for, by NVML's numbering (``unknown:0x9`` for a value it has not)."""
    m = _RECOVERY_RE.search(text)
    if m is None:
        return None
    value = int(m.group(1), 16)
    return RECOVERY_ACTIONS.get(value, f"unknown:{m.group(1).lower()}")


def nvlink_words(text: str) -> tuple[str | None, int | None, int | None]:
    """(unit, first interrupt word, error status) of an Xid 144-150 line; None for what it does not give."""
    m = _NVLINK_RE.search(text)
    if m is None:
        return None, None, None
    return m.group(1), int(m.group(2), 16), int(m.group(3), 16) if m.group(3) else None


@record
class PcieBandwidth:
    """One ``available PCIe bandwidth, limited by`` line (link state at probe time only)."""

    address: str
    available_gbps: float  # Gb/s, as the kernel prints it
    limit_speed: float  # GT/s of the limiting link
    limit_width: int
    limited_at: str  # the device whose link sets the limit (may be an upstream port)
    capable_gbps: float
    capable_speed: float
    capable_width: int
    flit: bool
    text: str


@record
class KernelLog:
    """What the kernel log says; ``missing`` names why it could not be read (then ``readable`` is False)."""

    origin: str
    missing: str | None
    xids: tuple[XidEvent, ...] = ()
    bandwidth: tuple[PcieBandwidth, ...] = ()

    @property
    def readable(self) -> bool:
        return self.missing is None

    def xids_of(self, address: str) -> tuple[XidEvent, ...]:
        def build() -> dict[str, tuple[XidEvent, ...]]:
            out: dict[str, list[XidEvent]] = {}
            for x in self.xids:
                out.setdefault(x.address, []).append(x)
            return {k: tuple(v) for k, v in out.items()}

        return memo(self, "_by_address", build).get(address, ())

    def bandwidth_of(self, address: str) -> PcieBandwidth | None:
        return next((b for b in reversed(self.bandwidth) if b.address == address), None)


def xid_address(raw: str) -> str:
    """``"0000:3B:00"`` -> ``"0000:3b:00.0"``; text that is no PCI address is kept, lowercased."""
    text = raw.strip().lower().rstrip(".")
    if "." not in text:
        text += ".0"
    return normalise_bdf(text) or raw.strip().lower()


def _timestamp(line: str) -> str | None:
    decoded = _DECODE_RE.match(line)
    if decoded:
        line = line[decoded.end():]
    match = _STAMP_RE.match(line) or _SYSLOG_STAMP_RE.match(line) or _ISO_STAMP_RE.match(line)
    return match.group(1) if match else None


#: the timestamp of a kernel log line (``[  12.3]``, syslog or ISO), for other readers of the log
timestamp = _timestamp


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _bandwidth(line: str) -> PcieBandwidth | None:
    m = BANDWIDTH_RE.search(line)
    if m is None:
        return None
    address, at = normalise_bdf(m.group("dev")), normalise_bdf(m.group("at"))
    numbers = [_float(m.group(k)) for k in ("avail", "speed", "cap", "cap_speed")]
    if address is None or at is None or any(n is None for n in numbers):
        return None
    avail, speed, cap, cap_speed = (n or 0.0 for n in numbers)
    return PcieBandwidth(address, avail, speed, int(m.group("width")), at, cap, cap_speed,
                         int(m.group("cap_width")), m.group("flit") is not None, line[m.start():].strip())


def parse_kernel_log(text: str) -> tuple[tuple[XidEvent, ...], tuple[PcieBandwidth, ...]]:
    """Xid events and PCIe bandwidth lines of a ``dmesg`` dump, in log order. Never raises."""
    xids: list[XidEvent] = []
    bandwidth: list[PcieBandwidth] = []
    if not isinstance(text, str):
        return (), ()
    addresses: dict[str, str] = {}  # an address as written -> normal form (a log names a few devices many times)
    for line in text.splitlines():
        if "NVRM: Xid" in line:
            m = XID_RE.search(line)
            if m is not None and len(m.group(2)) <= 6:
                code, text = int(m.group(2)), line[m.start():].strip()
                unit, intrinfo, status = nvlink_words(text[m.end() - m.start() - len(m.group(2)):]) \
                    if 144 <= code <= 150 else (None, None, None)
                subcode = None if intrinfo is None else (intrinfo >> 20) & 0x3F
                raw = m.group(1)
                address = addresses.get(raw)
                if address is None:
                    address = addresses[raw] = xid_address(raw)
                xids.append(XidEvent(address, code, text, _timestamp(line),
                                     recovery_action(text) if code == 154 else None, unit, subcode,
                                     intrinfo, status))
        elif "available PCIe bandwidth" in line:
            bw = _bandwidth(line)
            if bw is not None:
                bandwidth.append(bw)
    return tuple(xids), tuple(bandwidth)


def _why_missing(reason: str | None, as_root: bool | None) -> str:
    text = reason or "dmesg not recorded"
    if any(word in text.lower() for word in _REFUSED):
        if as_root:  # root was refused: a container without CAP_SYSLOG, or a kernel lockdown
            return f"dmesg not readable even as root (a container without CAP_SYSLOG?): {text}"
        return f"dmesg not readable (kernel.dmesg_restrict=1; run as root): {text}"
    return text


def build_kernel_log(src: Source) -> KernelLog:
    out = src.command(SPEC)
    if out.text is None:
        return KernelLog(out.where, _why_missing(out.reason, src.as_root()))
    xids, bandwidth = parse_kernel_log(out.text)
    return KernelLog(out.where, None, xids, bandwidth)
