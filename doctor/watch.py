"""``gnd watch``: sample the cheap, changing facts of a source over time into bounded summaries.

What is sampled, at each interval: the speed and width of the link of every GPU and NIC and of
every hop above them (sysfs), each GPU's activity, clock-event reasons and replay counter (NVML on
the live host, the recorded ``nvidia-smi`` output of a directory source), the AER counters of those
devices, InfiniBand/RoCE port counters, ``carrier_changes`` of the physical interfaces, and the
kernel-log lines that appeared since the sample before (``/dev/kmsg`` on the live host, the
recorded ``dmesg`` of a directory source). A directory source is read afresh at each sample, so a
test drives a watch by rewriting its files.

The subjects are found once, from the first sample's facts; :class:`Recorder` folds each sample
into per-series summaries of fixed size (:mod:`doctor.facts.watch`), so memory stays constant
whatever the duration. The over-time checks (``checks/watch_*.py``) judge the resulting
:class:`~doctor.facts.watch.WatchRecord`; the static checks then run once on the last sample.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from doctor.errors import DoctorError
from doctor.facts.kernel_log import XID_RE, xid_address
from doctor.facts.pci import link_speed, link_width
from doctor.facts.util import normalise_bdf, parse_int, parse_speed
from doctor.facts.watch import RECENT, ClockSeries, CounterSeries, KernelEvents, LinkSeries, WatchRecord
from doctor.sources import LIVE, Source, open_source
from doctor.sources.tree import TarTree

if TYPE_CHECKING:
    from doctor.facts import Facts
    from doctor.facts.gpu import Gpu
    from doctor.facts.pci import PciTree

#: ``--duration`` at most (24 h) and ``--interval`` between these bounds, seconds
MAX_DURATION_S = 24 * 3600.0
MIN_INTERVAL_S, MAX_INTERVAL_S = 0.05, 3600.0
#: clock-event reasons that say nothing about a slowdown (idle, a clock the user set, boost sync)
BENIGN_REASONS = frozenset({"gpu_idle", "applications_clocks_setting", "sync_boost", "display_clock_setting"})
#: AER counter files -> the total line each holds -> the counter's name here
AER_FILES = {"aer_dev_fatal": ("TOTAL_ERR_FATAL", "aer_fatal"),
             "aer_dev_nonfatal": ("TOTAL_ERR_NONFATAL", "aer_nonfatal"),
             "aer_dev_correctable": ("TOTAL_ERR_COR", "aer_correctable")}
#: InfiniBand/RoCE port counters sampled (``counters/`` and ``hw_counters/`` of each port)
IB_COUNTERS = ("symbol_error", "link_downed", "link_error_recovery", "port_rcv_errors",
               "port_rcv_remote_physical_errors", "port_xmit_discards", "excessive_buffer_overrun_errors",
               "local_link_integrity_errors", "port_rcv_constraint_errors", "port_xmit_constraint_errors",
               "VL15_dropped")
IB_HW_COUNTERS = ("rnr_nak_retry_err", "out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
                  "req_transport_retries_exceeded")
#: most new kernel-log lines taken from one sample (a storm is counted, not held)
MAX_NEW_LINES = 10_000
#: most distinct kernel-event subjects kept
MAX_EVENT_SUBJECTS = 256
_AER_LINE = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b.*?\b(?:AER|PCIe Bus Error)\b")
_LINK_DOWN = re.compile(r"\blink (?:is )?down\b", re.IGNORECASE)
_GPU_BLOCK = re.compile(r"<pci_bus_id>([0-9A-Fa-f:.]+)</pci_bus_id>.*?<gpu_temp>(\d{1,3}) C</gpu_temp>", re.S)
_DEVICE = re.compile(r"\b([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b|\b([a-z][a-z0-9_.-]{1,15}): ")


@dataclass
class Sample:
    """One reading of the changing facts, ``t`` seconds after the watch began."""

    t: float
    links: dict[str, tuple[float | None, int | None]] = field(default_factory=dict)
    activity: dict[str, str] = field(default_factory=dict)  # GPU address -> busy, idle or unknown
    clocks: dict[str, tuple[str, ...]] = field(default_factory=dict)  # GPU address -> active reasons
    temps: dict[str, int] = field(default_factory=dict)  # GPU address -> core temperature, degrees C
    counters: dict[tuple[str, str], int] = field(default_factory=dict)  # (subject, name) -> value
    lines: list[str] = field(default_factory=list)  # kernel-log lines new since the sample before


@dataclass(frozen=True)
class Subjects:
    """What a watch samples, found once from the first facts."""

    links: dict[str, tuple[str, tuple[str, ...]]]  # address -> (role, GPUs at or below it)
    ib_counters: tuple[tuple[str, str, str], ...]  # (subject, counter name, path)
    carriers: tuple[tuple[str, str], ...]  # (interface, path)
    gpus: tuple[str, ...]

    @classmethod
    def of(cls, facts: Facts) -> Subjects:
        pci = facts.pci
        links: dict[str, tuple[str, tuple[str, ...]]] = {}
        below: dict[str, list[str]] = {}
        gpus = tuple(d.address for d in pci.gpus)
        for dev in [*pci.gpus, *pci.nics]:
            role = "gpu" if dev.address in gpus else "nic"
            chain = list(dev.path) if dev.path and dev.path[-1] == dev.address else [dev.address]
            for hop in chain:
                if dev.address in gpus:
                    below.setdefault(hop, []).append(dev.address)
                if hop == dev.address:
                    links[hop] = (role, ())
                else:
                    links.setdefault(hop, ("hop", ()))
        links = {a: (role, tuple(below.get(a, ()))) for a, (role, _) in links.items()}
        src = facts.source
        ib: list[tuple[str, str, str]] = []
        for hca in src.listdir("sys/class/infiniband"):
            for port in src.listdir(f"sys/class/infiniband/{hca}/ports"):
                base = f"sys/class/infiniband/{hca}/ports/{port}"
                for folder, names in (("counters", IB_COUNTERS), ("hw_counters", IB_HW_COUNTERS)):
                    present = set(src.listdir(f"{base}/{folder}"))
                    ib += [(f"{hca} port {port}", n, f"{base}/{folder}/{n}") for n in names if n in present]
        carriers = tuple((name, f"sys/class/net/{name}/carrier_changes") for name in src.listdir("sys/class/net")
                         if src.exists(f"sys/class/net/{name}/device") and src.exists(f"sys/class/net/{name}/carrier_changes"))
        return cls(links, tuple(ib), carriers, gpus)


class KernelTail:
    """The kernel-log lines that appeared since the last call."""

    def __init__(self, live: bool) -> None:
        self.fd: int | None = None
        self.seen: int | None = None  # lines of the recorded log already seen
        self.last: str | None = None  # the last line seen, to notice a log that was replaced
        self.problem: str | None = None
        if live:
            try:
                self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
                os.lseek(self.fd, 0, os.SEEK_END)
            except OSError as exc:
                self.problem = f"kernel log: /dev/kmsg: {exc.strerror or exc}"

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None

    def new_lines(self, src: Source | None) -> list[str]:
        if self.fd is not None:
            return self._kmsg()
        if src is None or self.problem:
            return []
        out = src.command("dmesg")
        if out.text is None:
            self.problem = f"kernel log: {out.where}: {out.reason or 'not recorded'}"
            return []
        lines = out.text.splitlines()
        if self.seen is None:  # the first sample: what is there already is the static checks' business
            fresh: list[str] = []
        elif self.seen <= len(lines) and (self.seen == 0 or lines[self.seen - 1] == self.last):
            fresh = lines[self.seen:]
        else:  # the log was replaced (rotated, rewritten): all of it is new
            fresh = lines
        self.seen, self.last = len(lines), (lines[-1] if lines else None)
        return fresh[-MAX_NEW_LINES:]

    def _kmsg(self) -> list[str]:
        lines: list[str] = []
        assert self.fd is not None
        while len(lines) < MAX_NEW_LINES:
            try:
                data = os.read(self.fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # records overwritten before they were read: go on with the next
                continue
            except OSError as exc:
                self.problem = f"kernel log: /dev/kmsg: {exc.strerror or exc}"
                self.close()
                break
            if not data:
                break
            text = data.decode("utf-8", "replace")
            lines.append(text.split(";", 1)[-1].split("\n", 1)[0])
        return lines


class Sampler:
    """Reads one :class:`Sample` at a time from a fresh view of the source."""

    def __init__(self, location: str | None, subjects: Subjects, pci: PciTree, live: bool) -> None:
        self.location = location
        self.subjects = subjects
        self.pci = pci
        self.tail = KernelTail(live)
        self.problems: dict[str, str] = {}

    def sample(self, t: float) -> Sample:
        src = open_source(self.location)
        s = Sample(t)
        for address in self.subjects.links:
            base = f"sys/bus/pci/devices/{address}"
            s.links[address] = (link_speed(parse_speed(src.read_line(f"{base}/current_link_speed"))),
                                link_width(parse_int(src.read_line(f"{base}/current_link_width"))))
            for file, (total, name) in AER_FILES.items():
                value = _aer_total(src.read_text(f"{base}/{file}", cap=65536), total)
                if value is not None:
                    s.counters[(address, name)] = value
        if not any(v != (None, None) for v in s.links.values()) and self.subjects.links:
            self.problems["links"] = "PCIe links: no current_link_speed/width in sys/bus/pci/devices"
        for subject, name, path in self.subjects.ib_counters:
            value = _counter(src.read_line(path))
            if value is not None:
                s.counters[(subject, name)] = value
        for name, path in self.subjects.carriers:
            value = _counter(src.read_line(path))
            if value is not None:
                s.counters[(name, "carrier_changes")] = value
        self._gpus(src, s)
        s.lines = self.tail.new_lines(src)
        if self.tail.problem:
            self.problems["kernel"] = self.tail.problem
        return s

    def _gpus(self, src: Source, s: Sample) -> None:
        if not self.subjects.gpus:
            return
        from doctor.facts.gpu import build_gpus

        inventory = build_gpus(src, self.pci)
        if inventory.runtime_origin is None:
            self.problems["gpus"] = ("GPU activity, clocks and replays: "
                                     f"{inventory.runtime_missing or 'no NVML and no nvidia-smi output'}")
            return
        for gpu in inventory.gpus:
            s.activity[gpu.address] = gpu.activity
            rt = gpu.runtime
            if rt is None:
                continue
            s.clocks[gpu.address] = tuple(sorted(k for k, on in rt.clock_event_reasons.items() if on))
            if rt.replays_since_reset is not None and rt.replays_since_reset >= 0:
                s.counters[(gpu.address, "replay")] = rt.replays_since_reset
        s.temps = _nvml_temps(inventory.gpus) if inventory.runtime_origin == "nvml" else _smi_temps(src)

    def not_sampled(self) -> tuple[str, ...]:
        notes = list(self.problems.values())
        if not self.subjects.gpus:
            notes.append("GPUs: none on the PCI bus")
        if not self.subjects.ib_counters:
            notes.append("InfiniBand/RoCE port counters: no sys/class/infiniband ports")
        return tuple(notes)


def _smi_temps(src: Source) -> dict[str, int]:
    """Core temperatures from the recorded ``nvidia-smi -q -x`` (its readings are left out of the parse)."""
    out = src.command("nvidia_smi_xml")
    temps: dict[str, int] = {}
    for block in (out.text or "").split("<gpu id=")[1:]:
        match = _GPU_BLOCK.search(block)
        if match:
            address = normalise_bdf(match.group(1)[-12:].lower())
            if address and 0 < int(match.group(2)) < 150:
                temps[address] = int(match.group(2))
    return temps


def _nvml_temps(gpus: tuple[Gpu, ...]) -> dict[str, int]:
    """Core temperatures through NVML (``nvmlDeviceGetTemperature``); none when a call fails."""
    try:
        import pynvml
    except ImportError:
        return {}
    temps: dict[str, int] = {}
    for gpu in gpus:
        with contextlib.suppress(Exception):  # NVMLError_NotSupported and friends, per GPU
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(gpu.address.encode())
            temps[gpu.address] = int(pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU))
    return temps


def _aer_total(text: str | None, total: str) -> int | None:
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == total:
            return _counter(parts[1])
    return None


def _counter(text: str | None) -> int | None:
    """A counter's value; ``None`` for anything that is no count (negative, absurd, not a number)."""
    value = parse_int(text)
    return value if value is not None and 0 <= value < 1 << 62 else None


def _label(speed: float | None, width: int | None) -> str:
    return f"{'?' if speed is None else f'{speed:g} GT/s'} x{'?' if width is None else width}"


class _Link:
    """A link's running summary (mutable while the watch runs): counts, extremes and the seconds spent
    at each (speed, width, busy) state, so time below the top speed can be told at the end."""

    def __init__(self, address: str, role: str, gpus: tuple[str, ...], interval: float) -> None:
        self.address, self.role, self.gpus, self.interval = address, role, gpus, interval
        self.samples = self.transitions = self.width_changes = self.speed_changes = self.busy_speed_changes = 0
        self.busy_samples = 0
        self.time_at: dict[tuple[float | None, int | None, bool], float] = {}
        self.prev: tuple[float | None, int | None] | None = None
        self.prev_busy = False
        self.recent: deque[str] = deque(maxlen=RECENT)

    def add(self, sample: Sample) -> None:
        value = sample.links.get(self.address, (None, None))
        if value == (None, None):
            return
        speed, width = value
        states = [sample.activity.get(g, "unknown") for g in self.gpus]
        busy = "busy" in states
        self.samples += 1
        self.busy_samples += busy
        if self.prev is not None and value != self.prev:
            self.transitions += 1
            self.width_changes += width != self.prev[1]
            if speed != self.prev[0]:
                self.speed_changes += 1
                self.busy_speed_changes += busy and self.prev_busy
        self.prev, self.prev_busy = value, busy
        key = (speed, width, busy)
        self.time_at[key] = self.time_at.get(key, 0.0) + self.interval  # the reading holds until the next
        state = "busy" if busy else ("idle" if states and all(x == "idle" for x in states) else "")
        self.recent.append(f"t={sample.t:.1f}s {_label(speed, width)}{' ' + state if state else ''}")

    def result(self) -> LinkSeries:
        speeds = [k[0] for k in self.time_at if k[0] is not None]
        widths = [k[1] for k in self.time_at if k[1] is not None]
        top_s, top_w = max(speeds, default=None), max(widths, default=None)

        def below(k: tuple[float | None, int | None, bool]) -> bool:
            return (k[0] is not None and top_s is not None and k[0] < top_s) or \
                   (k[1] is not None and top_w is not None and k[1] < top_w)

        return LinkSeries(
            address=self.address, role=self.role, samples=self.samples, top_speed=top_s, top_width=top_w,
            low_speed=min(speeds, default=None), low_width=min(widths, default=None),
            transitions=self.transitions, width_changes=self.width_changes, speed_changes=self.speed_changes,
            busy_speed_changes=self.busy_speed_changes, busy_samples=self.busy_samples,
            busy_s=round(sum(v for k, v in self.time_at.items() if k[2]), 3),
            busy_below_s=round(sum(v for k, v in self.time_at.items() if k[2] and below(k)), 3),
            below_s=round(sum(v for k, v in self.time_at.items() if below(k)), 3),
            seconds=round(sum(self.time_at.values()), 3), recent=tuple(self.recent))


@dataclass
class _Counter:
    first: int
    first_t: float
    last: int = 0
    last_t: float = 0.0
    growth: int = 0
    increases: int = 0
    resets: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT))

    def add(self, value: int, t: float) -> None:
        if self.recent:
            if value > self.last:
                self.growth += value - self.last
                self.increases += 1
            elif value < self.last:
                self.resets += 1
        self.last, self.last_t = value, t
        self.recent.append(f"t={t:.1f}s {value}")


@dataclass
class _Clocks:
    samples: int = 0
    max_temp: int | None = None
    busy_samples: int = 0
    busy_reasons: dict[str, int] = field(default_factory=dict)
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT))


@dataclass
class _Events:
    first_t: float
    last_t: float
    count: int = 0
    examples: list[str] = field(default_factory=list)


class Recorder:
    """Folds samples into bounded summaries; :meth:`record` gives the :class:`WatchRecord`."""

    def __init__(self, subjects: Subjects, interval: float, origin: str) -> None:
        self.interval = interval
        self.origin = origin
        self.links = {a: _Link(a, role, gpus, interval) for a, (role, gpus) in subjects.links.items()}
        self.counters: dict[tuple[str, str], _Counter] = {}
        self.clocks: dict[str, _Clocks] = {}
        self.events: dict[tuple[str, str], _Events] = {}
        self.samples = 0
        self.first_t: float | None = None
        self.last_t = 0.0

    def add(self, sample: Sample) -> None:
        self.samples += 1
        self.first_t = sample.t if self.first_t is None else self.first_t
        self.last_t = sample.t
        for link in self.links.values():
            link.add(sample)
        for key, value in sample.counters.items():
            counter = self.counters.get(key)
            if counter is None:
                counter = self.counters[key] = _Counter(first=value, first_t=sample.t)
            counter.add(value, sample.t)
        for address, reasons in sample.clocks.items():
            clocks = self.clocks.setdefault(address, _Clocks())
            clocks.samples += 1
            activity = sample.activity.get(address, "unknown")
            if activity == "busy":
                clocks.busy_samples += 1
                for reason in reasons:
                    if reason not in BENIGN_REASONS:
                        clocks.busy_reasons[reason] = clocks.busy_reasons.get(reason, 0) + 1
            temp = sample.temps.get(address)
            if temp is not None:
                clocks.max_temp = temp if clocks.max_temp is None else max(clocks.max_temp, temp)
            shown = f" {temp} C" if temp is not None else ""
            clocks.recent.append(f"t={sample.t:.1f}s {activity}{shown} {','.join(reasons) or 'none'}")
        for line in sample.lines:
            self._event(line, sample.t)

    def _event(self, line: str, t: float) -> None:
        kind = subject = None
        xid = XID_RE.search(line)
        if xid:
            kind, subject = "xid", f"{xid_address(xid.group(1))} Xid {xid.group(2)}"
        elif (aer := _AER_LINE.search(line)) is not None:
            kind, subject = "aer", normalise_bdf(aer.group(1)) or aer.group(1)
        elif _LINK_DOWN.search(line):
            device = _DEVICE.search(line)
            kind = "link_down"
            subject = (device.group(1) or device.group(2)) if device else "node"
        if kind is None or subject is None:
            return
        key = (kind, subject)
        if key not in self.events and len(self.events) >= MAX_EVENT_SUBJECTS:
            key = (kind, "other subjects")
        events = self.events.get(key)
        if events is None:
            events = self.events[key] = _Events(first_t=t, last_t=t)
        events.count += 1
        events.last_t = t
        if len(events.examples) < 3:
            events.examples.append(line.strip()[:300])

    def record(self, not_sampled: tuple[str, ...] = ()) -> WatchRecord:
        return WatchRecord(
            origin=self.origin, duration_s=round(self.last_t - (self.first_t or 0.0), 3),
            interval_s=self.interval, samples=self.samples,
            links=tuple(link.result() for link in self.links.values() if link.samples),
            counters=tuple(CounterSeries(subject=k[0], name=k[1], first=c.first, last=c.last, first_t=c.first_t,
                                         last_t=c.last_t, growth=c.growth, increases=c.increases, resets=c.resets,
                                         recent=tuple(c.recent)) for k, c in self.counters.items()),
            clocks=tuple(ClockSeries(address=a, samples=c.samples, busy_samples=c.busy_samples, max_temp=c.max_temp,
                                     busy_reasons=dict(c.busy_reasons), recent=tuple(c.recent))
                         for a, c in self.clocks.items()),
            events=tuple(KernelEvents(kind=k[0], subject=k[1], count=e.count, first_t=e.first_t, last_t=e.last_t,
                                      examples=tuple(e.examples)) for k, e in self.events.items()),
            not_sampled=not_sampled)


def check_bounds(duration: float, interval: float) -> None:
    """Refuse a duration or interval outside what a watch accepts (one line, exit 2)."""
    if not 0 <= duration <= MAX_DURATION_S:
        raise DoctorError(f"--duration {duration:g}: must be between 0 and {MAX_DURATION_S:g} seconds (24 h)")
    if not MIN_INTERVAL_S <= interval <= MAX_INTERVAL_S:
        raise DoctorError(f"--interval {interval:g}: must be between {MIN_INTERVAL_S:g} and {MAX_INTERVAL_S:g} seconds")


def run_watch(location: str | None, duration: float, interval: float, *,
              on_sample: Callable[[Sample, Recorder], None] | None = None,
              clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep,
              stopped: Callable[[], bool] = lambda: False) -> WatchRecord:
    """Sample ``location`` (``None``: the live host) every ``interval`` seconds for ``duration`` seconds.

    ``clock`` and ``sleep`` are the time source (tests pass their own, and rewrite the source's files
    in ``sleep``); ``on_sample`` sees each sample as it is folded in (the TUI's live view), and
    ``stopped`` ends the watch early (the TUI's stop key): the record covers what was sampled.
    """
    from doctor.facts import Facts

    check_bounds(duration, interval)
    first = open_source(location)
    live = first.kind == LIVE
    facts = Facts(first)
    subjects = Subjects.of(facts)
    sampler = Sampler(location, subjects, facts.pci, live)
    origin = "gnd watch of this host" if live else f"gnd watch of {first.location}"
    recorder = Recorder(subjects, interval, origin)
    start = clock()
    due = start
    try:
        while True:
            sample = sampler.sample(round(clock() - start, 3))
            recorder.add(sample)
            if on_sample is not None:
                on_sample(sample, recorder)
            due += interval
            if due - start > duration + 1e-9 or stopped():
                break
            sleep(max(0.0, due - clock()))
    finally:
        sampler.tail.close()
    notes = sampler.not_sampled()
    if isinstance(first.tree, TarTree):
        notes += ("a tarball does not change: every sample reads the same recording",)
    return recorder.record(notes)
