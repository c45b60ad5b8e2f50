"""Parsers for ``nvidia-smi -q -x`` (XML) and ``nvidia-smi -q`` (text, as in sosreports).

XML sample (``nvidia-smi -q -x``, driver 555)::

    <?xml version="1.0" ?>
    <!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
    <nvidia_smi_log>
        <driver_version>555.42.06</driver_version>
        <cuda_version>12.5</cuda_version>
        <gpu id="00000000:01:00.0">
            <product_name>NVIDIA L4</product_name>
            <pci>
                <pci_gpu_link_info>
                    <pcie_gen>
                        <max_link_gen>4</max_link_gen>
                        <current_link_gen>1</current_link_gen>
                    </pcie_gen>
                    <link_widths><max_link_width>16x</max_link_width></link_widths>
                </pci_gpu_link_info>
            </pci>
            <performance_state>P0</performance_state>
            <clocks_event_reasons>
                <clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
            </clocks_event_reasons>
            <utilization><gpu_util>0 %</gpu_util></utilization>
        </gpu>
    </nvidia_smi_log>

Text sample (``nvidia-smi -q``)::

    Driver Version                            : 535.154.05
    GPU 00000000:04:00.0
        Product Name                          : NVIDIA GeForce RTX 3090
        PCI
            GPU Link Info
                PCIe Generation
                    Max                       : 3
                    Current                   : 1
                Link Width
                    Max                       : 16x
                    Current                   : 16x
        Performance State                     : P8
        Clocks Event Reasons
            Idle                              : Active
        Utilization
            Gpu                               : 0 %
        Processes                             : None

Both parsers never raise: garbage gives an empty :class:`SmiReport`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from doctor.lazyre import lazy
from doctor.parsers.lspci import normalize_pci_address
from doctor.record import record

if TYPE_CHECKING:
    import xml.etree.ElementTree as ET

__all__ = [
    "SmiError",
    "SmiGpu",
    "SmiProcess",
    "SmiReport",
    "parse_smi_errors",
    "parse_nvidia_smi_text",
    "parse_nvidia_smi_xml",
]


@record
class SmiProcess:
    """One process using a GPU."""

    pid: int
    name: str | None
    used_memory_mib: int | None
    type: str | None


@record
class SmiGpu:
    """Per-GPU state relevant to PCIe/idle diagnosis; ``None`` means "not reported / N/A"."""

    address: str
    product_name: str | None
    uuid: str | None
    serial: str | None
    pstate: str | None
    util_gpu: float | None
    link_gen_current: int | None
    link_gen_max: int | None
    link_gen_device_max: int | None
    link_gen_host_max: int | None
    link_width_current: int | None
    link_width_max: int | None
    persistence_mode: bool | None
    clock_event_reasons: dict[str, bool]
    idle: bool | None
    replays_since_reset: int | None
    processes: tuple[SmiProcess, ...]
    mig_mode: bool | None = None  # current MIG mode (None: not reported, N/A on GPUs without MIG)
    # Row remapper (Ampere and later data-centre GPUs) and ECC; None on older drivers/consumer GPUs.
    remapped_rows_correctable: int | None = None
    remapped_rows_uncorrectable: int | None = None
    remap_pending: bool | None = None  # ``Pending: Yes``: a GPU reset is needed to apply the remap
    remap_failure: bool | None = None  # ``Remapping Failure Occurred: Yes``
    ecc_volatile_uncorrectable: int | None = None  # uncorrectable ECC errors since the driver loaded
    # Power limit the user or an agent set (``power_limit``; ``requested_power_limit`` on newer drivers)
    # and the board's default; watts.
    power_limit_w: float | None = None
    default_power_limit_w: float | None = None
    # Application clocks (``nvidia-smi -ac``) and their defaults, MHz; None where deprecated/N/A.
    app_clock_graphics_mhz: float | None = None
    default_app_clock_graphics_mhz: float | None = None
    app_clock_mem_mhz: float | None = None
    default_app_clock_mem_mhz: float | None = None
    # Data-centre state (issue 13): ECC/MIG pending modes, compute mode, BAR1 vs framebuffer, NVSwitch fabric.
    # Checked against nvidia-smi 580.159.04 on an H200 (DTD v13; ``<fabric>`` also holds cliqueId, clusterUuid
    # and ``<health>``; state/status N/A without NVSwitch) in XML and text form.
    ecc_mode: bool | None = None  # ``ecc_mode/current_ecc``
    ecc_mode_pending: bool | None = None  # ``ecc_mode/pending_ecc``: differs from current until a GPU reset
    mig_mode_pending: bool | None = None  # ``mig_mode/pending_mig``
    compute_mode: str | None = None  # Default, Exclusive_Process, Prohibited (Exclusive_Thread on old drivers)
    fb_total_mib: int | None = None  # ``fb_memory_usage/total``
    bar1_total_mib: int | None = None  # ``bar1_memory_usage/total``
    fabric_state: str | None = None  # ``fabric/state`` (Hopper+ on NVSwitch systems): Completed, In Progress, ...
    fabric_status: str | None = None  # ``fabric/status``: Success or an error text
    # What the driver asks to be done to the GPU (issue 24): one of RECOVERY_WORDS' values, NVML's
    # ``recover_imex_domain``/``bus_reset``/``system_reboot``, or ``unrecognised``; None when not reported.
    # ``gpu_recovery_action`` (``GPU Recovery Action``) first, else the older ``gpu_reset_status``
    # (``Reset Required``/``Drain and Reset Recommended``, "deprecated" on R570+ drivers).
    recovery_action: str | None = None
    recovery_text: str | None = None  # what was read, for evidence: ``GPU Recovery Action: Reset``


@record
class SmiError:
    """A line where nvidia-smi says it cannot reach a GPU or the driver; ``address`` when it names one."""

    address: str | None
    text: str


@record
class SmiReport:
    """A whole ``nvidia-smi -q`` dump."""

    driver_version: str | None
    cuda_version: str | None
    timestamp: str | None
    gpus: tuple[SmiGpu, ...]


EMPTY_REPORT = SmiReport(driver_version=None, cuda_version=None, timestamp=None, gpus=())

_NA = {"", "n/a", "na", "none", "unknown", "[n/a]", "[unknown error]", "not available", "unsupported"}
_NUM_RE = lazy(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)")
_DOCTYPE_RE = lazy(r"<!DOCTYPE[^>\[]*(?:\[[^\]]*\])?\s*>", re.IGNORECASE | re.DOTALL)
_REASON_PREFIX_RE = lazy(r"^clocks?_(?:event|throttle)_reasons?_")

# Text labels (``Clocks Event Reasons`` block) -> XML-style keys.
_TEXT_REASON_KEYS = {
    "idle": "gpu_idle",
    "applications clocks setting": "applications_clocks_setting",
    "sw power cap": "sw_power_cap",
    "hw slowdown": "hw_slowdown",
    "hw thermal slowdown": "hw_thermal_slowdown",
    "hw power brake slowdown": "hw_power_brake_slowdown",
    "sync boost": "sync_boost",
    "sw thermal slowdown": "sw_thermal_slowdown",
    "display clock setting": "display_clocks_setting",
}


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip()
    if v.lower() in _NA or v.lower().startswith("not available"):
        return None
    return v


def _num(value: str | None) -> float | None:
    v = _clean(value)
    if v is None:
        return None
    m = _NUM_RE.match(v)
    return float(m.group(1)) if m else None


def _int(value: str | None) -> int | None:
    n = _num(value)
    return int(n) if n is not None else None


def _flag(true: frozenset[str], false: frozenset[str]) -> Callable[[str | None], bool | None]:
    """A reader of a yes/no value: True for a word of ``true``, False for one of ``false`` (any case), else None."""
    def read(value: str | None) -> bool | None:
        low = (_clean(value) or "").lower()
        return True if low in true else False if low in false else None
    return read


_bool_enabled = _flag(frozenset({"enabled", "on", "yes"}), frozenset({"disabled", "off", "no"}))
_active = _flag(frozenset({"active"}), frozenset({"not active"}))
_yes_no = _flag(frozenset({"yes"}), frozenset({"no"}))


def _total(values: list[int | None]) -> int | None:
    """Sum of the counters that were reported; None when none was."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


#: Volatile uncorrectable ECC counters: driver >= 525 (``dram_``/``sram_``) and older (``double_bit/total``).
_XML_UNCORRECTABLE = ("dram_uncorrectable", "sram_uncorrectable", "sram_uncorrectable_parity",
                      "sram_uncorrectable_secded")
_TEXT_UNCORRECTABLE = ("dram uncorrectable", "sram uncorrectable", "sram uncorrectable parity",
                       "sram uncorrectable secded")


def _first_num(values: Iterable[str | None]) -> float | None:
    """The first value that reads as a number (``N/A`` and deprecation notices skipped)."""
    for value in values:
        n = _num(value)
        if n is not None:
            return n
    return None


#: ``GPU Recovery Action`` as nvidia-smi prints it (R565+: None, Reset, Reboot, Drain P2P, Drain and Reset)
RECOVERY_WORDS = {"none": "none", "reset": "reset", "gpu reset": "reset", "reboot": "reboot", "node reboot": "reboot",
                  "drain p2p": "drain_p2p", "drain and reset": "drain_and_reset", "drain p2p and reset": "drain_and_reset"}
_DEPRECATED = "deprecated"


def recovery(action: str | None, reset_required: str | None,
             drain_recommended: str | None) -> tuple[str | None, str | None]:
    """(word, evidence text) from ``GPU Recovery Action`` or, when absent, the ``GPU Reset Status`` pair."""
    raw = (action or "").strip()
    if raw and raw.lower() not in ("n/a", "[n/a]") and _DEPRECATED not in raw.lower():
        return RECOVERY_WORDS.get(raw.lower(), "unrecognised"), f"GPU Recovery Action: {raw}"
    reset, drain = _yes_no(reset_required), _yes_no(drain_recommended)
    if reset is None and drain is None:
        return None, None
    text = f"GPU Reset Status: Reset Required: {reset_required}, Drain and Reset Recommended: {drain_recommended}"
    return ("drain_and_reset" if drain else "reset" if reset else "none"), text


_HANDLE_RE = lazy(r"Unable to determine the device handle for (?:GPU\s*)?"
                  r"(?P<addr>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s*:\s*(?P<why>.*)")
#: nvidia-smi's own failures that are no per-GPU line (the driver is up but lists no GPU, or is not up, or the
#: user-space driver that NVML and CUDA load is missing or cannot start). An allowlist: "Insufficient Permissions"
#: and the like say the tool could not look, not that the GPU is gone; "Driver/library version mismatch" is
#: gpu.driver_mismatch's.
_NODE_ERRORS = ("No devices were found", "couldn't communicate with the NVIDIA driver",
                "couldn't find libnvidia-ml.so", "Failed to initialize NVML: Unknown Error")
_MAX_ERRORS = 64


def parse_smi_errors(text: str | None) -> tuple[SmiError, ...]:
    """nvidia-smi's failure lines in its output (or in the reason a live run failed), at most 64 distinct::

        Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error
        No devices were found
    """
    if not text or ("device handle" not in text and not any(e in text for e in _NODE_ERRORS)):
        return ()
    out: dict[tuple[str | None, str], None] = {}
    for line in text.splitlines():
        m = _HANDLE_RE.search(line)
        if m is not None:
            out[(normalize_pci_address(m.group("addr")) or m.group("addr").lower(), line[m.start():].strip())] = None
        elif any(e in line for e in _NODE_ERRORS):
            out[(None, line.strip())] = None
        if len(out) >= _MAX_ERRORS:
            break
    return tuple(SmiError(a, t) for a, t in out)


def _reason_key(label: str) -> str:
    low = label.strip().lower()
    if low in _TEXT_REASON_KEYS:
        return _TEXT_REASON_KEYS[low]
    return re.sub(r"[^a-z0-9]+", "_", low).strip("_")


def _address(*candidates: str | None) -> str:
    """First candidate that is a PCI address, normalised; else the first non-empty one."""
    for raw in candidates:
        if raw:
            norm = normalize_pci_address(raw)
            if norm:
                return norm
    for raw in candidates:
        if raw and raw.strip():
            return raw.strip().lower()
    return ""


_GEN_X, _GEN_T = "pci/pci_gpu_link_info/pcie_gen/", "pci > gpu link info > pcie generation > "
_WIDTH_X, _WIDTH_T = "pci/pci_gpu_link_info/link_widths/", "pci > gpu link info > link width > "
#: The SmiGpu fields both forms hold alike: (field, conversion, XML path, text path); where a form names
#: two paths (``|``), the first whose value converts wins
_FIELDS: tuple[tuple[str, Callable[[str | None], Any], str, str], ...] = (
    ("product_name", _clean, "product_name", "product name"),
    ("uuid", _clean, "uuid", "gpu uuid"),
    ("serial", _clean, "serial", "serial number"),
    ("pstate", _clean, "performance_state", "performance state"),
    ("util_gpu", _num, "utilization/gpu_util", "utilization > gpu"),
    ("link_gen_current", _int, f"{_GEN_X}current_link_gen|{_GEN_X}device_current_link_gen",
     f"{_GEN_T}current|{_GEN_T}device current"),
    ("link_gen_max", _int, f"{_GEN_X}max_link_gen", f"{_GEN_T}max"),
    ("link_gen_device_max", _int, f"{_GEN_X}max_device_link_gen", f"{_GEN_T}device max"),
    ("link_gen_host_max", _int, f"{_GEN_X}max_host_link_gen", f"{_GEN_T}host max"),
    ("link_width_current", _int, f"{_WIDTH_X}current_link_width", f"{_WIDTH_T}current"),
    ("link_width_max", _int, f"{_WIDTH_X}max_link_width", f"{_WIDTH_T}max"),
    ("persistence_mode", _bool_enabled, "persistence_mode", "persistence mode"),
    ("replays_since_reset", _int, "pci/replay_counter", "pci > replays since reset"),
    ("mig_mode", _bool_enabled, "mig_mode/current_mig", "mig mode > current"),
    ("remapped_rows_correctable", _int, "remapped_rows/remapped_row_corr", "remapped rows > correctable error"),
    ("remapped_rows_uncorrectable", _int, "remapped_rows/remapped_row_unc", "remapped rows > uncorrectable error"),
    ("remap_pending", _yes_no, "remapped_rows/remapped_row_pending", "remapped rows > pending"),
    ("remap_failure", _yes_no, "remapped_rows/remapped_row_failure", "remapped rows > remapping failure occurred"),
    ("app_clock_graphics_mhz", _num, "applications_clocks/graphics_clock", "applications clocks > graphics"),
    ("default_app_clock_graphics_mhz", _num, "default_applications_clocks/graphics_clock",
     "default applications clocks > graphics"),
    ("app_clock_mem_mhz", _num, "applications_clocks/mem_clock", "applications clocks > memory"),
    ("default_app_clock_mem_mhz", _num, "default_applications_clocks/mem_clock", "default applications clocks > memory"),
    ("ecc_mode", _bool_enabled, "ecc_mode/current_ecc", "ecc mode > current"),
    ("ecc_mode_pending", _bool_enabled, "ecc_mode/pending_ecc", "ecc mode > pending"),
    ("mig_mode_pending", _bool_enabled, "mig_mode/pending_mig", "mig mode > pending"),
    ("compute_mode", _clean, "compute_mode", "compute mode"),
    ("fb_total_mib", _int, "fb_memory_usage/total", "fb memory usage > total"),
    ("bar1_total_mib", _int, "bar1_memory_usage/total", "bar1 memory usage > total"),
    ("fabric_state", _clean, "fabric/state", "fabric > state"),
    ("fabric_status", _clean, "fabric/status", "fabric > status"),
)


#: what :func:`recovery` reads, at its paths in either form (XML, text)
_RECOVERY = (("gpu_recovery_action", "gpu recovery action"),
             ("gpu_reset_status/reset_required", "gpu reset status > reset required"),
             ("gpu_reset_status/drain_and_reset_recommended", "gpu reset status > drain and reset recommended"))


def _fields(read: Callable[[str], str | None], form: int) -> dict[str, Any]:
    """The :data:`_FIELDS` of one GPU and its recovery action, ``read`` giving the raw value at a path of
    ``form`` (1 XML, 2 text)."""
    out: dict[str, Any] = {}
    for name, convert, *paths in _FIELDS:
        out[name] = next((v for path in paths[form - 1].split("|") if (v := convert(read(path))) is not None), None)
    out["recovery_action"], out["recovery_text"] = recovery(*(read(paths[form - 1]) for paths in _RECOVERY))
    return out


def _process(pid: str | None, name: str | None, memory: str | None, kind: str | None) -> SmiProcess | None:
    """One process of a GPU's process list; None without a pid."""
    number = _int(pid)
    if number is None:
        return None
    return SmiProcess(pid=number, name=_clean(name), used_memory_mib=_int(memory), type=_clean(kind))


# --------------------------------------------------------------------------- XML


def _x(elem: ET.Element | None, path: str) -> str | None:
    if elem is None:
        return None
    found = elem.find(path)
    if found is None or found.text is None:
        return None
    return found.text


def _xml_gpu(g: ET.Element) -> SmiGpu:
    reasons: dict[str, bool] = {}
    for block in ("clocks_event_reasons", "clocks_throttle_reasons"):
        node = g.find(block)
        if node is None:
            continue
        for child in node:
            if not isinstance(child.tag, str):
                continue
            val = _active(child.text)
            key = _REASON_PREFIX_RE.sub("", child.tag)
            if val is not None and key:
                reasons.setdefault(key, val)
    procs = g.find("processes")
    processes = [] if procs is None else [_process(_x(p, "pid"), _x(p, "process_name"), _x(p, "used_memory"),
                                                   _x(p, "type")) for p in procs.findall("process_info")]
    volatile = g.find("ecc_errors/volatile")
    uncorrectable = _total([_int(_x(volatile, k)) for k in _XML_UNCORRECTABLE])
    if uncorrectable is None:
        uncorrectable = _int(_x(volatile, "double_bit/total"))
    power = g.find("gpu_power_readings")
    if power is None:
        power = g.find("power_readings")
    limit = _first_num(_x(power, k) for k in ("power_limit", "requested_power_limit", "current_power_limit"))
    return SmiGpu(
        address=_address(g.get("id"), _x(g, "pci/pci_bus_id")),
        clock_event_reasons=reasons,
        idle=reasons.get("gpu_idle"),
        processes=tuple(p for p in processes if p is not None),
        ecc_volatile_uncorrectable=uncorrectable,
        power_limit_w=limit,
        default_power_limit_w=_num(_x(power, "default_power_limit")),
        **_fields(lambda path: _x(g, path), 1),
    )


def parse_nvidia_smi_xml(text: str) -> SmiReport:
    """Parse ``nvidia-smi -q -x`` output.

    The DOCTYPE is stripped before parsing; any ``<!ENTITY`` declaration makes the whole
    document rejected (empty report), so entities are never expanded. Malformed XML,
    a wrong root element or non-text input give an empty report.
    """
    if not isinstance(text, str) or not text.strip():
        return EMPTY_REPORT
    if "<!ENTITY" in text.upper():
        return EMPTY_REPORT
    body = _DOCTYPE_RE.sub("", text, count=1)
    if "<!DOCTYPE" in body.upper():
        return EMPTY_REPORT
    start = body.find("<")
    if start < 0:
        return EMPTY_REPORT
    body = body[start:]
    import xml.etree.ElementTree as ET  # only when there is XML to read

    try:
        root = ET.fromstring(body.strip())
    except (ET.ParseError, ValueError):
        return EMPTY_REPORT
    if root.tag != "nvidia_smi_log":
        return EMPTY_REPORT
    gpus: list[SmiGpu] = []
    for g in root.findall("gpu"):
        try:
            gpus.append(_xml_gpu(g))
        except (ValueError, TypeError, AttributeError):  # pragma: no cover - defensive
            continue
    return SmiReport(
        driver_version=_clean(_x(root, "driver_version")),
        cuda_version=_clean(_x(root, "cuda_version")),
        timestamp=_clean(_x(root, "timestamp")),
        gpus=tuple(gpus),
    )


# -------------------------------------------------------------------------- text

_GPU_HEADER_RE = lazy(
    r"^GPU\s+(?P<addr>(?:[0-9a-fA-F]{1,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s*$"
)
_KV_RE = lazy(r"^(?P<indent>[ \t]*)(?P<key>[^:]*?[^\s:])\s*(?::\s?(?P<value>.*))?$")


class _TextGpu:
    """Accumulates one ``GPU <bus id>`` section of ``nvidia-smi -q``."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.fields: dict[str, str] = {}
        self.reasons: dict[str, bool] = {}
        self.processes: list[dict[str, str]] = []

    def add(self, path: tuple[str, ...], value: str) -> None:
        lowered = tuple(p.lower() for p in path)
        if lowered and lowered[0] in ("clocks event reasons", "clocks throttle reasons") and len(path) > 1:
            val = _active(value)
            if val is not None:
                self.reasons.setdefault(_reason_key(path[-1]), val)
            return
        if lowered and lowered[0] == "processes" and len(path) > 1:
            leaf = lowered[-1]
            if leaf in ("gpu instance id", "process id") and (
                not self.processes or leaf in self.processes[-1] or "process id" in self.processes[-1]
            ):
                self.processes.append({})
            if not self.processes:
                self.processes.append({})
            self.processes[-1][leaf] = value
            return
        self.fields.setdefault(" > ".join(lowered), value)

    def get(self, *paths: str) -> str | None:
        for p in paths:
            if p in self.fields:
                return self.fields[p]
        return None

    def build(self) -> SmiGpu:
        processes = [_process(p.get("process id"), p.get("name") or p.get("process name"), p.get("used gpu memory"),
                              p.get("type")) for p in self.processes]
        uncorrectable = _total([_int(self.get("ecc errors > volatile > " + k)) for k in _TEXT_UNCORRECTABLE])
        if uncorrectable is None:
            uncorrectable = _int(self.get("ecc errors > volatile > double bit > total"))
        return SmiGpu(
            address=self.address,
            clock_event_reasons=dict(self.reasons),
            idle=self.reasons.get("gpu_idle"),
            processes=tuple(p for p in processes if p is not None),
            ecc_volatile_uncorrectable=uncorrectable,
            power_limit_w=_first_num(self.get(f"power readings > {k}", f"gpu power readings > {k}")
                                     for k in ("power limit", "requested power limit", "current power limit")),
            default_power_limit_w=_num(self.get("power readings > default power limit",
                                                "gpu power readings > default power limit")),
            **_fields(self.get, 2),
        )


def parse_nvidia_smi_text(text: str) -> SmiReport:
    """Parse ``nvidia-smi -q`` text (any ``-d`` subset) into a :class:`SmiReport`.

    Hierarchy comes from indentation: a key without a value opens a section, deeper
    indented lines belong to it. Tabs count as 4 columns. Never raises.
    """
    if not isinstance(text, str) or not text.strip():
        return EMPTY_REPORT
    top: dict[str, str] = {}
    gpus: list[_TextGpu] = []
    current: _TextGpu | None = None
    stack: list[tuple[int, str]] = []  # (indent, section name) of open sections in the GPU
    for raw in text.splitlines():
        line = raw.rstrip().expandtabs(4)
        if not line.strip() or line.lstrip().startswith("="):
            continue
        m_gpu = _GPU_HEADER_RE.match(line)
        if m_gpu:
            current = _TextGpu(_address(m_gpu.group("addr")))
            gpus.append(current)
            stack = []
            continue
        m = _KV_RE.match(line)
        if m is None:
            continue
        indent = len(m.group("indent"))
        key = m.group("key").strip()
        value = m.group("value")
        if current is None or indent == 0:
            if value is not None:
                top.setdefault(key.lower(), value.strip())
            if indent == 0 and current is not None and value is None:
                current = None  # an unindented non-GPU section (e.g. "Unit ...") ends the GPU
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(name for _, name in stack) + (key,)
        if value is None or not value.strip():
            stack.append((indent, key))
            continue
        if key.lower() == "processes" and not stack:
            # "Processes : None" (or empty) at GPU level: no processes.
            continue
        current.add(path, value.strip())
    return SmiReport(
        driver_version=_clean(top.get("driver version")),
        cuda_version=_clean(top.get("cuda version")),
        timestamp=_clean(top.get("timestamp")),
        gpus=tuple(g.build() for g in gpus),
    )
