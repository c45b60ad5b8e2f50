"""Host tuning and driver facts: CPU frequency policy, transparent huge pages, the NVIDIA kernel module.

Sample inputs::

    /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor   powersave
    /sys/kernel/mm/transparent_hugepage/defrag              always defer defer+madvise [madvise] never
    /proc/driver/nvidia/version   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build ...

``None`` always means "not recorded", never a default.
"""

from __future__ import annotations

import re

from doctor.lazyre import lazy
from doctor.record import record
from doctor.sources import Source

CPUFREQ = "sys/devices/system/cpu/cpu0/cpufreq"
THP = "sys/kernel/mm/transparent_hugepage"
NVIDIA_VERSION = "proc/driver/nvidia/version"
#: Files NCCL probes for a GPUDirect RDMA peer-memory client (``net_ib/gdr.cc``).
PEERMEM_FILES = ("sys/kernel/mm/memory_peers/nv_mem/version", "sys/kernel/mm/memory_peers/nv_mem_nc/version",
                 "sys/module/nvidia_peermem/version")
#: What NVML/nvidia-smi print when the user-space library and the loaded kernel module differ.
MISMATCH_TEXT = lazy(r"(Driver/library version mismatch|NVML/RM version mismatch)", re.IGNORECASE)
_MODULE_VERSION = lazy(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+(?:\.\d+)+)")


@record
class CpuFreq:
    """cpufreq policy of CPU 0 (the only CPU recorded)."""

    governor: str | None
    driver: str | None
    epp: str | None  # energy_performance_preference
    origin: str = CPUFREQ

    @property
    def recorded(self) -> bool:
        return self.governor is not None or self.driver is not None or self.epp is not None


@record
class Thp:
    """Transparent huge pages: the selected (bracketed) value of each knob."""

    enabled: str | None
    defrag: str | None
    origin: str = THP


@record
class NvidiaDriver:
    """The loaded NVIDIA kernel module and the GPUDirect RDMA peer-memory modules."""

    kernel_module_version: str | None
    open_module: bool | None  # None when /proc/driver/nvidia/version was not recorded
    version_line: str | None
    peermem: tuple[str, ...]  # the NCCL-probed version files present
    nvml_mismatch: str | None  # "Driver/library version mismatch" text seen in nvidia-smi output
    nvml_mismatch_where: str | None = None


def selected(text: str | None) -> str | None:
    """``"always defer [madvise] never"`` -> ``"madvise"``; a bare single word is returned as is."""
    if not text:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    if match:
        return match.group(1).strip()
    words = text.split()
    return words[0] if len(words) == 1 else None


def build_cpufreq(src: Source) -> CpuFreq:
    return CpuFreq(governor=src.read_line(f"{CPUFREQ}/scaling_governor"),
                   driver=src.read_line(f"{CPUFREQ}/scaling_driver"),
                   epp=src.read_line(f"{CPUFREQ}/energy_performance_preference"))


def build_thp(src: Source) -> Thp:
    return Thp(enabled=selected(src.read_line(f"{THP}/enabled")), defrag=selected(src.read_line(f"{THP}/defrag")))


def _mismatch(text: str) -> re.Match[str] | None:
    """``MISMATCH_TEXT.search(text)``; an ASCII text without "mismatch" in any case is passed over
    without the (case-blind, so slow: 3 ms on an 8-GPU ``nvidia-smi -q -x``) regular expression."""
    if text.isascii() and "mismatch" not in text.lower():
        return None
    return MISMATCH_TEXT.search(text)


def build_nvidia_driver(src: Source) -> NvidiaDriver:
    text = src.read_text(NVIDIA_VERSION, cap=65536)
    line = next((ln.strip() for ln in (text or "").splitlines() if "Kernel Module" in ln), None)
    match = _MODULE_VERSION.search(line or "")
    peermem = tuple(p for p in PEERMEM_FILES if src.read_line(p) is not None)
    mismatch, where = None, None
    for name in ("nvidia_smi_xml", "nvidia_smi_q") if text is not None else ():
        out = src.command(name)
        found = _mismatch(out.text or "") or _mismatch(out.reason or "")
        if found:
            mismatch, where = found.group(1), out.where
            break
    return NvidiaDriver(kernel_module_version=match.group(1) if match else None,
                        open_module=None if text is None else "Open Kernel Module" in text,
                        version_line=line, peermem=peermem, nvml_mismatch=mismatch, nvml_mismatch_where=where)
