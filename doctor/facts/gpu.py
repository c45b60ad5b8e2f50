"""GPUs: the PCI view merged with the driver's view (NVML live, ``nvidia-smi -q -x`` or ``-q`` text).

The runtime view (performance state, utilisation, idle reason, link generation, processes) is
what tells an idle GPU's power-saving 2.5 GT/s from a real downgrade. When no runtime view is
available that is recorded in ``runtime_missing``, never papered over with defaults.

When a GPU on the bus has no runtime view, the driver's and nvidia-smi's own failure lines are kept
as ``faults`` (kernel log sample)::

    [  12.3] NVRM: GPU 0000:81:00.0: RmInitAdapter failed! (0x25:0x40:1470)
    [  12.3] NVRM: GPU 0000:81:00.0: rm_init_adapter failed, device minor number 0
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from doctor.facts.pci import PciDevice, PciTree
from doctor.facts.util import SPEED_OF_GEN, memo, normalise_bdf
from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import LIVE, Source

if TYPE_CHECKING:  # the parser is imported when there is nvidia-smi output to read
    from doctor.parsers.nvidia_smi import SmiGpu, SmiProcess, SmiReport

IDLE_PSTATES = {f"P{i}" for i in range(5, 16)}
BUSY_UTIL = 10.0
IDLE_UTIL = 5.0


@record
class Gpu:
    """One physical GPU; ``runtime`` is ``None`` when the driver's view is missing."""

    index: int
    address: str
    pci: PciDevice | None
    runtime: SmiGpu | None

    @property
    def name(self) -> str | None:
        if self.runtime and self.runtime.product_name:
            return self.runtime.product_name
        return self.pci.name if self.pci else None

    @property
    def processes(self) -> tuple[SmiProcess, ...]:
        return self.runtime.processes if self.runtime else ()

    @property
    def activity(self) -> str:
        """``busy``, ``idle`` or ``unknown`` (docs/checks.md#cross-cutting-rules: P0 alone does not mean busy)."""
        rt = self.runtime
        if rt is None:
            return "unknown"
        if rt.idle is True or (rt.pstate in IDLE_PSTATES) or (rt.util_gpu is not None and rt.util_gpu < IDLE_UTIL):
            return "idle"
        if rt.util_gpu is not None and rt.util_gpu > BUSY_UTIL and rt.idle is not True:
            return "busy"
        if rt.pstate in ("P0", "P1", "P2") and rt.util_gpu is None and rt.idle is False:
            return "busy"
        return "unknown"


@record
class GpuFault:
    """A line where the driver or nvidia-smi says it cannot reach a GPU (``address`` None: not one GPU),
    seen ``count`` times; only gathered for GPUs on the bus without a runtime view."""

    address: str | None
    text: str
    origin: str
    count: int = 1


@record
class GpuInventory:
    gpus: tuple[Gpu, ...]
    runtime_origin: str | None  # "nvml", the command file, or None
    runtime_missing: str | None
    driver_version: str | None
    cuda_version: str | None
    faults: tuple[GpuFault, ...] = ()

    def by_address(self, address: str) -> Gpu | None:
        return memo(self, "_by_address", lambda: {g.address: g for g in reversed(self.gpus)}).get(address)


#: leaf elements of ``nvidia-smi -q -x`` that change from second to second and that nothing here
#: reads (temperatures, power draw, fan, memory in use, utilisation other than the GPU's, PCIe
#: throughput, the time stamp), with plain content: left out before parsing (see :func:`parse_xml`)
_READINGS = lazy(r"<(gpu_temp|memory_temp|gpu_temp_tlimit|power_draw|instant_power_draw|average_power_draw|fan_speed"
                 r"|memory_util|encoder_util|decoder_util|jpeg_util|ofa_util|tx_util|rx_util|used|free"
                 r"|graphics_volt|timestamp)>[A-Za-z0-9 .%:/+_-]*</\1>")
#: the last few texts parsed (readings left out) and their reports; a text over the size below is not kept
_PARSED: list[tuple[str, SmiReport]] = []
_KEEP_CHARS = 1 << 21


def parse_xml(text: str) -> SmiReport:
    """``parse_nvidia_smi_xml`` of ``text`` without the readings of :data:`_READINGS` (the report's
    ``timestamp`` is None). The GPUs of a fleet's snapshots differ mostly in those, so a worker parses
    each configuration's output once. Leaving out an element that holds only plain characters leaves
    the document as well- or ill-formed as it was; the parser reads none of those elements
    (``tests/facts/test_gpu_readings.py`` holds it to that)."""
    key = _READINGS.sub("", text)
    for seen, report in _PARSED:
        if seen == key:
            return report
    from doctor.parsers.nvidia_smi import parse_nvidia_smi_xml

    report = parse_nvidia_smi_xml(key)
    if len(key) <= _KEEP_CHARS:
        _PARSED[:] = [(key, report), *_PARSED[:3]]
    return report


def _runtime_report(src: Source) -> tuple[SmiReport | None, str | None, str | None]:
    reasons: list[str] = []
    if src.kind == LIVE:
        from doctor.facts.nvml import nvml_report

        report, reason = nvml_report()
        if report is not None:
            return report, "nvml", None
        reasons.append(reason or "NVML unavailable")
    xml = src.command("nvidia_smi_xml")
    if xml.text:
        report = parse_xml(xml.text)
        if report.gpus:
            return report, xml.where, None
        reasons.append(f"{xml.where} holds no GPU")
    elif xml.reason:
        reasons.append(xml.reason)
    text = src.command("nvidia_smi_q")
    if text.text:
        from doctor.parsers.nvidia_smi import parse_nvidia_smi_text

        report = parse_nvidia_smi_text(text.text)
        if report.gpus:
            return report, text.where, None
    return None, None, "; ".join(reasons) or "no NVML and no nvidia-smi output"


NVIDIA = 0x10DE
#: ``NVRM: GPU 0000:81:00.0: <message>`` and ``NVRM: GPU at PCI:0000:81:00: <message>`` kernel lines
_NVRM_GPU_RE = lazy(r"NVRM: GPU (?:at PCI:)?(?P<addr>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?):? "
                    r"(?P<msg>.*)")
#: messages of those lines that say the GPU is not usable
_UNREACHABLE = ("RmInitAdapter failed", "rm_init_adapter failed", "fallen off the bus", "GPU is lost")
_MAX_FAULTS = 64


def _kernel_faults(src: Source) -> list[GpuFault]:
    out = src.command("dmesg")
    text = out.text or ""
    if not any(m in text for m in _UNREACHABLE):
        return []
    found: dict[tuple[str | None, str], list[str]] = {}
    for line in text.splitlines():
        m = _NVRM_GPU_RE.search(line) if "NVRM: GPU" in line else None
        if m is None or not any(u in m.group("msg") for u in _UNREACHABLE):
            continue
        raw = m.group("addr")
        address = normalise_bdf(raw if "." in raw else raw + ".0")
        key = (address, m.group("msg").strip())
        if key in found or len(found) < _MAX_FAULTS:
            found.setdefault(key, []).append(line[m.start():].strip())
    return [GpuFault(a, lines[0], out.where, len(lines)) for (a, _), lines in found.items()]


def _smi_faults(src: Source) -> list[GpuFault]:
    from doctor.parsers.nvidia_smi import parse_smi_errors

    faults: list[GpuFault] = []
    for name in ("nvidia_smi_xml", "nvidia_smi_q"):
        out = src.command(name)
        for text in (out.text, out.reason):
            faults.extend(GpuFault(e.address, e.text, out.where) for e in parse_smi_errors(text))
    return list(dict.fromkeys(faults))


def _faults(src: Source, gpus: tuple[Gpu, ...]) -> tuple[GpuFault, ...]:
    """The driver's and nvidia-smi's failure lines, read only when a GPU on the bus has no runtime view."""
    if not any(g.runtime is None and g.pci is not None for g in gpus):
        return ()
    return tuple(_smi_faults(src) + _kernel_faults(src))


def _speed(gen: int | None) -> float | None:
    return SPEED_OF_GEN.get(gen) if gen is not None else None


def _width(lanes: int | None) -> int | None:
    """A PCIe link width (0 when the link is down); anything else the driver printed is not evidence."""
    return lanes if lanes is not None and 0 <= lanes <= 32 else None


def with_driver_link(dev: PciDevice | None, rt: SmiGpu, where: str) -> PciDevice | None:
    """The GPU's PCI facts with link state from the driver's view (``pci_gpu_link_info``) where the
    PCI recording has none; ``link_origin`` names the source. The device's own maximum generation is
    ``max_device_link_gen`` when reported (else ``max_link_gen``); the host's is ``port_max_speed``."""
    dev_max = rt.link_gen_device_max if rt.link_gen_device_max is not None else rt.link_gen_max
    link = {"cur_speed": _speed(rt.link_gen_current), "cur_width": _width(rt.link_width_current),
            "max_speed": _speed(dev_max), "max_width": _width(rt.link_width_max)}
    if all(v is None for v in link.values()):
        return dev
    if dev is None:
        return PciDevice(rt.address, NVIDIA, None, None, origin=where, name=rt.product_name, link_origin=where,
                         port_max_speed=_speed(rt.link_gen_host_max), **link)  # type: ignore[arg-type]
    if all(getattr(dev, k) is None for k in link):
        return replace(dev, link_origin=where, port_max_speed=_speed(rt.link_gen_host_max),
                       **link)  # type: ignore[arg-type]
    if dev.port_max_speed is None and rt.link_gen_host_max is not None:
        return replace(dev, port_max_speed=_speed(rt.link_gen_host_max))
    return dev


def build_gpus(src: Source, pci: PciTree) -> GpuInventory:
    """GPUs in PCI bus order (the order of ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and nvidia-smi)."""
    listed = {a for a in (normalise_bdf(n) for n in src.listdir("proc/driver/nvidia/gpus")) if a}
    present = {d.address for d in pci.gpus} | listed
    report, origin, missing = _runtime_report(src) if (present or pci.origin is None) else (None, None, None)
    runtime = {g.address: g for g in report.gpus} if report else {}
    addresses = sorted(present | set(runtime))
    where = origin or "nvidia-smi"
    gpus = tuple(Gpu(i, a, with_driver_link(pci.get(a), runtime[a], where) if a in runtime else pci.get(a),
                     runtime.get(a)) for i, a in enumerate(addresses))
    if gpus and report is None and missing is None:
        missing = "no NVML and no nvidia-smi output"
    return GpuInventory(gpus, origin, missing if gpus else None,
                        report.driver_version if report else None, report.cuda_version if report else None,
                        _faults(src, gpus))
