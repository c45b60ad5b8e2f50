"""nvidia-bug-report logs (``nvidia-bug-report.log.gz`` or ``.log``) as a source.

``nvidia-bug-report.sh`` writes one text file of sections, each after a line of 44 underscores::

    ____________________________________________

    *** /proc/driver/nvidia/./version
    *** ls: -r--r--r-- 1 root root 0 2022-08-25 20:30:39.5 +0200 /proc/driver/nvidia/./version
    NVRM version: NVIDIA UNIX x86_64 Kernel Module  510.73.08  ...
    ____________________________________________

    /usr/bin/nvidia-smi --query

    ==============NVSMI LOG==============
    ...

A file section (``*** <path>``) becomes that path in an in-memory tree (only ``proc/``, ``etc/`` and a few
``sys/`` files: the NUMA node list and each GPU's ``numa_node`` and ``local_cpulist``; the report's scattered
``sys/bus/pci`` power files must not pass for a sysfs tree); a command
section (several commands may share one, as nvidia-smi's do) answers the command spec it stands for.
The log is read once, at most :data:`MAX_LOG_BYTES` decompressed; a truncated or corrupt gzip is refused.
"""

from __future__ import annotations

import gzip
import re
import zlib

from doctor import specs
from doctor.errors import DoctorError
from doctor.safe_open import open_regular
from doctor.secrets import sanitize
from doctor.sources import CommandOutput, Source
from doctor.sources.kinds import BUGREPORT
from doctor.sources.tree import MAX_FILE_BYTES, MAX_MEMBERS, MAX_TAR_BYTES, OverlayTree, Tree, split_path

MARKER = "Start of NVIDIA bug report log file"
SEPARATOR = "\n" + "_" * 44 + "\n"
#: Largest log read, decompressed (the cap a tarball's contents have).
MAX_LOG_BYTES = MAX_TAR_BYTES
#: File sections kept as files (the rest is X, audio and installer logs nothing reads).
_KEEP = ("proc/", "etc/", "sys/kernel/mm/transparent_hugepage/", "sys/devices/system/node/")
#: A PCI function's NUMA node and local CPUs (recent reports print them for each NVIDIA GPU); its power files are
#: not kept. These few attribute files are no sysfs tree: :func:`doctor.facts.pci.build_pci` lays them over lspci.
_PCI_LOCALITY = re.compile(r"sys/bus/pci/devices/[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]/(?:numa_node|local_cpulist)")
#: Lines that start a command inside a section (``report_command`` writes several without separators).
_COMMAND_LINE = re.compile(r"(?:/[\w.+-]+)*/?(?:nvidia-smi|lspci)(?: .*)?")
#: Command headers and the spec each answers, in order of preference (the first match of a spec wins).
_COMMANDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nvidia_smi_xml", re.compile(r"\S*nvidia-smi (?:-q -x|-x -q|--query --xml-format|-q --xml-format)")),
    ("nvidia_smi_q", re.compile(r"\S*nvidia-smi (?:-q|--query)")),
    ("nvlink_status", re.compile(r"\S*nvidia-smi nvlink (?:-s|--status)")),
    ("nvlink_errors", re.compile(r"\S*nvidia-smi nvlink (?:-e|--errorcounters)")),
    ("lspci_vvv", re.compile(r"\S*lspci (?:-\w*vv\w*)")),  # -nnDvvvxxxx (535 and later)
    ("lspci_v", re.compile(r"\S*lspci -d \S+ -v -xxx")),  # 525 and older: -v per vendor, merged below
    ("lspci_tree", re.compile(r"\S*lspci -(?:t|tv|nntv|nnt|tnn)")),  # the tree: -t (older), -nntv (535 and later)
    ("lspci_nn", re.compile(r"\S*lspci -nn")),
    ("dmesg", re.compile(r"dmesg:?")),
    ("numactl_hardware", re.compile(r"\S*numactl (?:-H|--hardware)")),
)
_JOURNAL_BOOT0 = re.compile(r"^  journalctl -b -0:\n(.*?)(?=^  \S|\Z)", re.M | re.S)
_DMI = {"System Information": ("sys_vendor", "product_name"), "Base Board Information": ("board_vendor", "board_name")}
#: dmidecode's chassis ``Type`` words and their SMBIOS numbers (``sys/class/dmi/id/chassis_type``), SMBIOS 3.x 7.4.1
_CHASSIS = {"Desktop": 3, "Low Profile Desktop": 4, "Tower": 7, "Portable": 8, "Laptop": 9, "Notebook": 10,
            "Hand Held": 11, "Sub Notebook": 14, "Rack Mount Chassis": 23, "Blade": 28, "Tablet": 30,
            "Convertible": 31, "Detachable": 32, "Mini PC": 35, "Stick PC": 36}


class BugreportSource(Source):
    """An nvidia-bug-report log: its file sections as a tree, its command sections as command specs."""

    kind = BUGREPORT

    def __init__(self, tree: Tree, location: str, commands: dict[str, tuple[str, str | None]],
                 date: str | None) -> None:
        super().__init__(tree, location)
        #: spec name -> (section header, output or ``None`` when the command only printed its failure)
        self.sections = commands
        self._date = date

    def _command(self, spec: specs.Spec) -> CommandOutput:
        hit = self.sections.get(spec.name)
        if hit is None:
            return CommandOutput(spec.name, None, self.location,
                                 reason=f"{spec.name}: no such section in this nvidia-bug-report log")
        header, text = hit
        where = f"{self.location}: {header}"
        if text is None or not text.strip():
            return CommandOutput(spec.name, None, where, reason=f"{header} printed no output")
        if spec.name == "nvidia_smi_q" and "NVSMI LOG" not in text:
            first = text.strip().splitlines()[0][:200]
            return CommandOutput(spec.name, None, where, reason=f"{header} failed: {first}")
        return CommandOutput(spec.name, text, where)

    def collected_at(self) -> str | None:
        return self._date

    def as_root(self) -> bool | None:
        """``nvidia-bug-report.sh`` refuses to run unless as root ("Please run ... as root")."""
        return True


class _Empty(Tree):
    """A tree with nothing in it (the base the report's files are laid over)."""

    def kind(self, path: str) -> str | None:
        return "dir" if path == "" else None

    def readlink(self, path: str) -> None:
        return None

    def listdir(self, path: str) -> list[str] | None:
        return [] if path == "" else None

    def read(self, path: str, cap: int = MAX_FILE_BYTES) -> None:
        return None


def sniff(path: str) -> bool:
    """Whether the file at ``path`` (gzip or plain) begins like an nvidia-bug-report log."""
    try:
        with open_regular(path) as fh:
            head = fh.read(4096)
    except DoctorError:
        return False
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 2048)
        except zlib.error:
            return False
    return MARKER.encode() in head[:1024]


def _read(path: str, limit: int) -> str:
    with open_regular(path) as fh:
        gzipped = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
        try:  # gzip -c >> log writes one gzip member per section; GzipFile reads them all
            raw = gzip.GzipFile(fileobj=fh).read(limit + 1) if gzipped else fh.read(limit + 1)
        except EOFError:
            raise DoctorError(f"{path}: cannot read the nvidia-bug-report log: truncated gzip") from None
        except (OSError, zlib.error) as exc:
            raise DoctorError(f"{path}: cannot read the nvidia-bug-report log: corrupt gzip ({exc})") from None
    if len(raw) > limit:
        raise DoctorError(f"{path}: nvidia-bug-report log larger than {limit >> 20} MiB decompressed; refused")
    return raw.decode("utf-8", "replace")


def _split_commands(section: str) -> list[tuple[str, str]]:
    """``(header, body)`` for each command in a command section."""
    out: list[tuple[str, str]] = []
    lines = section.split("\n")
    start = 0
    for i in range(1, len(lines)):
        if not lines[i - 1].strip() and _COMMAND_LINE.fullmatch(lines[i]):
            out.append((lines[start], "\n".join(lines[start + 1:i])))
            start = i
    out.append((lines[start], "\n".join(lines[start + 1:])))
    return out


def _dmi(body: str) -> dict[str, str]:
    """``sys/class/dmi/id`` names from ``dmidecode``'s system and base-board blocks."""
    out: dict[str, str] = {}
    for block in body.split("\n\n"):
        if "\nChassis Information\n" in f"\n{block}\n":
            kind = next((line.split(":", 1)[1].strip() for line in block.splitlines()
                         if line.strip().startswith("Type:")), "")
            if kind in _CHASSIS:
                out.setdefault("sys/class/dmi/id/chassis_type", f"{_CHASSIS[kind]}\n")
            continue
        names = _DMI.get(block.strip().split("\n", 2)[1].strip() if block.count("\n") > 1 else "")
        if names is None:
            continue
        for line in block.splitlines():
            key, _, value = line.strip().partition(": ")
            name = names[0] if key == "Manufacturer" else names[1] if key == "Product Name" else None
            if name and value.strip():
                out.setdefault(f"sys/class/dmi/id/{name}", value.strip() + "\n")
    return out


def _date(prologue: str) -> str | None:
    m = re.search(r"^Date: \w{3} (\w{3}) +(\d{1,2}) (\d\d):(\d\d:\d\d)(?: ([AP]M))? (?:\S+ )?(\d{4})$", prologue, re.M)
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    if not m or m.group(1) not in months:
        return None  # a localised date (LANG was not C) is not guessed at
    hour = int(m.group(3))
    if m.group(5):  # a 12-hour clock (date's default in en_US locales)
        hour = hour % 12 + (12 if m.group(5) == "PM" else 0)
    return f"{m.group(6)}-{months.index(m.group(1)) + 1:02d}-{int(m.group(2)):02d}T{hour:02d}:{m.group(4)}"


def parse(text: str, location: str) -> BugreportSource:
    """The source for a bug report's text (sections past :data:`tree.MAX_MEMBERS` are ignored)."""
    files: dict[str, bytes] = {}
    commands: dict[str, tuple[str, str | None]] = {}
    lspci_v: list[str] = []
    journal: str | None = None
    sections = text.split(SEPARATOR, MAX_MEMBERS)[:MAX_MEMBERS]
    for section in sections:
        section = section.lstrip("\n")
        head = section.split("\n", 1)[0]
        if head.startswith("*** ") and not head.startswith("*** ls:"):
            if head.endswith(" does not exist"):
                continue
            rel = "/".join(split_path(head[4:]))
            body = section.split("\n", 1)[1] if "\n" in section else ""
            if body.startswith("*** ls:"):
                body = body.split("\n", 1)[1] if "\n" in body else ""
            if (rel.startswith(_KEEP) or _PCI_LOCALITY.fullmatch(rel)) and rel not in files \
                    and len(body) <= MAX_FILE_BYTES:
                files[rel] = sanitize(rel, body.rstrip("\n").encode() + b"\n",
                                      "cpuinfo" if rel == "proc/cpuinfo" else None)
            continue
        if head.startswith("Scanning kernel log files for N"):
            m = _JOURNAL_BOOT0.search(section)
            journal = m.group(1) if m else journal
            continue
        if head.endswith("dmidecode"):
            for rel, value in _dmi(section).items():
                files.setdefault(rel, value.encode())
            continue
        for header, body in _split_commands(section):
            name = next((n for n, rx in _COMMANDS if rx.fullmatch(header.strip())), None)
            if name == "lspci_v":
                lspci_v.append(body.strip("\n"))
            elif name and name not in commands:
                commands[name] = (header.strip(), sanitize("", body.strip("\n")[:MAX_FILE_BYTES].encode(),
                                                           None).decode("utf-8", "replace"))
    if "lspci_vvv" not in commands and lspci_v:
        commands["lspci_vvv"] = ("lspci -d <vendor> -v -xxx", "\n\n".join(lspci_v) + "\n")
    if not (commands.get("dmesg") or ("", None))[1] and journal:
        commands["dmesg"] = ("journalctl -b -0 (NVIDIA lines only)", journal)
    uname = re.search(r"^uname: \S+ (\S+)", sections[0] if sections else "", re.M)
    if uname:
        files.setdefault("hostname", (uname.group(1) + "\n").encode())
    return BugreportSource(OverlayTree(_Empty(), files), location, commands, _date(sections[0] if sections else ""))


def open_bugreport(path: str) -> BugreportSource:
    """Read and parse the log at ``path`` (gzip or plain); a corrupt or oversized one is refused in one line."""
    return parse(_read(path, MAX_LOG_BYTES), path)
