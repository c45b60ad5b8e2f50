"""A real nvidia-bug-report read directly gives the findings its sosreport equivalent gives.

Each published log of the real corpus (tests/realworld/PROVENANCE.md) is turned into the sosreport a support
engineer would make of it by hand: every section copied verbatim to the path sos stores that output at
(``nvidia-smi --query`` to ``sos_commands/nvidia/nvidia-smi_-q``, the lspci dumps to ``sos_commands/pci/lspci_-nnvv``,
``dmesg:`` to ``sos_commands/kernel/dmesg``, ``numactl -H`` to ``sos_commands/numa/numactl_--hardware``, the tree
(``lspci -t``, ``-nntv``) to ``sos_commands/pci/lspci_-tv`` (``lspci -nn`` has no sosreport place and is left out),
``*** /proc/...``, ``*** /etc/...`` and ``*** /sys/...`` files (the NUMA node list, each GPU's ``numa_node`` and
``local_cpulist``, its power files) to their paths, the
``uname`` host name to ``sos_commands/host/hostname``, dmidecode's system, board and chassis lines to
``sys/class/dmi/id``). The conversion here is deliberately naive: it knows the report's layout, not the source's
code. ``gnd check <log>`` must then judge the machine as ``gnd check <sosreport>`` does: the same checks at the
same severities about the same subjects. Where the two differ, one of the readers loses or misreads evidence.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.sources import open_source
from tests.helpers import run

REAL = Path(__file__).resolve().parent.parent / "realworld"
LOGS = sorted([*REAL.glob("cases/bugreport-*/nvidia-bug-report.log*"), *REAL.glob("bugreport/*/nvidia-bug-report.log*")])
BAR = "\n" + "_" * 44 + "\n"
#: dmidecode block, field -> sys/class/dmi/id file (what the kernel exports from the same SMBIOS tables)
DMI = {("System Information", "Manufacturer"): "sys_vendor", ("System Information", "Product Name"): "product_name",
       ("Base Board Information", "Manufacturer"): "board_vendor",
       ("Base Board Information", "Product Name"): "board_name"}
CHASSIS = {"Desktop": 3, "Tower": 7, "Portable": 8, "Laptop": 9, "Notebook": 10, "Rack Mount Chassis": 23}
#: the command lines of a report and where a sosreport keeps the same output
COMMANDS = ((re.compile(r"\S*nvidia-smi (?:--query|-q)"), "sos_commands/nvidia/nvidia-smi_-q"),
            (re.compile(r"\S*nvidia-smi nvlink (?:--status|-s)"), "sos_commands/nvidia/nvidia-smi_nvlink_-s"),
            (re.compile(r"\S*nvidia-smi nvlink (?:--errorcounters|-e)"), "sos_commands/nvidia/nvidia-smi_nvlink_-e"),
            (re.compile(r"\S*lspci -\w*vv\w*"), "sos_commands/pci/lspci_-nnvv"),
            (re.compile(r"\S*lspci -d \S+ -v -xxx"), "sos_commands/pci/lspci_-nnvv"),
            (re.compile(r"\S*numactl -H"), "sos_commands/numa/numactl_--hardware"),
            (re.compile(r"\S*lspci -(?:t|nntv)"), "sos_commands/pci/lspci_-tv"))


def _text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")


def _commands(section: str) -> list[tuple[str, str]]:
    """(command line, output) of each command in a section: nvidia-smi's and lspci's follow one another."""
    out: list[tuple[str, list[str]]] = []
    for line in section.split("\n"):
        if any(rx.fullmatch(line) for rx, _ in COMMANDS) or (not out and line.strip()):
            out.append((line, []))
        elif out:
            out[-1][1].append(line)
    return [(line, "\n".join(body)) for line, body in out]


def _dmi(section: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for block in section.split("\n\n"):
        lines = block.strip("\n").split("\n")
        title = lines[1].strip() if len(lines) > 1 and lines[0].startswith("Handle") else ""
        for line in lines[2:]:
            key, _, value = line.strip().partition(": ")
            name = DMI.get((title, key))
            if name and value.strip() and name not in files:
                files[name] = value.strip() + "\n"
            if title == "Chassis Information" and key == "Type" and value in CHASSIS:
                files.setdefault("chassis_type", f"{CHASSIS[value]}\n")
    return files


def sosreport(log: Path, root: Path) -> Path:
    """The hand-made sosreport of ``log`` under ``root``."""
    files: dict[str, str] = {}
    text = _text(log)
    sections = text.split(BAR)
    m = re.search(r"^uname: \S+ (\S+)", sections[0], re.M)
    if m:
        files["sos_commands/host/hostname"] = m.group(1) + "\n"
    for section in sections[1:]:
        section = section.lstrip("\n")
        head, _, body = section.partition("\n")
        if head.startswith(("*** /proc/", "*** /etc/", "*** /sys/")) and not head.endswith(" does not exist"):
            if body.startswith("*** ls:"):
                body = body.partition("\n")[2]
            files.setdefault(head[5:].replace("/./", "/"), body.rstrip("\n") + "\n")
        elif head == "dmesg:":
            files.setdefault("sos_commands/kernel/dmesg", body.strip("\n") + "\n")
        elif head.endswith("dmidecode"):
            for name, value in _dmi(body).items():
                files.setdefault(f"sys/class/dmi/id/{name}", value)
        else:
            for line, output in _commands(section):
                dest = next((d for rx, d in COMMANDS if rx.fullmatch(line)), None)
                if dest and output.strip():
                    files[dest] = files.get(dest, "") + output.strip("\n") + "\n\n"
    for rel, body in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    return root


def _verdicts(path: str) -> set[tuple[str, str, str]]:
    result = run(Facts(open_source(path)))
    return {(f.check, f.severity, f.subject) for f in result.findings}


@pytest.mark.parametrize("log", LOGS, ids=[p.parent.name for p in LOGS])
def test_a_report_reads_as_its_sosreport(log: Path, tmp_path: Path) -> None:
    direct = _verdicts(str(log))
    via_sos = _verdicts(str(sosreport(log, tmp_path / "sosreport")))
    assert direct == via_sos, (f"only direct: {sorted(direct - via_sos)}\nonly via sosreport: "
                               f"{sorted(via_sos - direct)}")


def test_the_corpus_is_all_here() -> None:
    assert len(LOGS) >= 6
