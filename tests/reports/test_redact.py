"""Redaction: consistent placeholders, a private map, nothing identifying left in any output."""

from __future__ import annotations

import json
import os
import re
import stat
import tarfile
from pathlib import Path
from typing import Any

import pytest

from doctor.collect import collect
from doctor.redact import Redactor, load_map, redact_result, snapshot_transform
from doctor.result_io import to_result
from doctor.sources import open_source
from reports.markdown import render_markdown
from tests.helpers import SICK


def _identities(root: Path) -> set[str]:
    """Every identifying value the fixture tree holds (what a redacted output must not contain)."""
    found: set[str] = set()
    for rel in ("etc/hostname", "proc/sys/kernel/hostname", "etc/machine-id"):
        p = root / rel
        if p.exists():
            found.add(p.read_text().strip())
    for p in (root / "sys/class/net").glob("*/address"):
        mac = p.read_text().strip()
        if mac and mac != "00:00:00:00:00:00":
            found.add(mac)
    xml = (root / "commands/nvidia-smi_-q_-x").read_text()
    found |= set(re.findall(r"<serial>([^<]+)</serial>", xml))
    found |= {u.removeprefix("GPU-") for u in re.findall(r"<uuid>([^<]+)</uuid>", xml)}
    for p in (root / "sys/class/infiniband").glob("*/ports/*/gids/*"):
        gid = p.read_text().strip()
        if gid.strip("0:"):
            found.add(gid)
    return {v for v in found if v}


def _leaks(text: str, identities: set[str]) -> list[str]:
    low = text.lower()
    leaks = [v for v in identities if v.lower() in low]
    leaks += re.findall(r"(?<![\d.])10\.\d+\.\d+\.\d+(?![\d])", text)  # the fixture's data addresses
    return leaks


@pytest.fixture(scope="module")
def identities() -> set[str]:
    if not SICK.exists():
        pytest.skip("sick fixture not generated yet")
    ids = _identities(SICK)
    assert "gpu-node-13" in ids and any(re.fullmatch(r"[0-9a-f:]{17}", v) for v in ids)
    return ids


def test_redacted_json_html_md_leak_nothing(sick_data: dict[str, Any], identities: set[str],
                                            tmp_path: Path) -> None:
    from reports.html import render_html

    map_path = tmp_path / "map.json"
    red = redact_result(sick_data, str(map_path))
    for name, text in (("json", json.dumps(red)), ("html", render_html(to_result(red))), ("md", render_markdown(to_result(red)))):
        assert _leaks(text, identities) == [], name
    assert "host-1" in json.dumps(red) and red["redacted"] is True
    # PCI addresses and sysctl values stay readable
    assert "0000:3c:00.0" in json.dumps(red)
    mapping = json.loads(map_path.read_text())["map"]
    assert mapping["host-1"] == "gpu-node-13"
    assert stat.S_IMODE(os.stat(map_path).st_mode) == 0o600
    assert not any(v in json.dumps(red) for v in ("gpu-node-13",))


def test_same_value_same_placeholder_across_runs(sick_data: dict[str, Any], tmp_path: Path) -> None:
    map_path = str(tmp_path / "map.json")
    first = redact_result(sick_data, map_path)
    second = redact_result(sick_data, map_path)
    assert first == second
    r = load_map(map_path)
    assert r.text("gpu-node-13 talks to gpu-node-13") == "host-1 talks to host-1"


def test_patterns() -> None:
    r = Redactor()
    out = r.text("10.1.2.3 and 10.1.2.3/24 fe80:0000:0000:0000:ba3f:d2ff:fe01:0203 "
                 "0000:0000:0000:0000:0000:ffff:0a01:0203 00:1b:21:aa:bb:cc 0000:18:00.0 550.90.07 127.0.0.1")
    assert out.split()[0] == out.split()[2].split("/")[0] and out.startswith("ip-")
    assert f"::ffff:{out.split()[0]}" in out  # the RoCE v2 IPv4 GID shares the IPv4's placeholder
    assert "mac-1" in out and "0000:18:00.0" in out and "550.90.07" in out and "127.0.0.1" in out


def test_redacted_snapshot_leaks_nothing(identities: set[str], tmp_path: Path) -> None:
    source = open_source(str(SICK))
    map_path = tmp_path / "snap.map.json"
    out = tmp_path / "snap.tar.gz"
    collect(source, str(out), snapshot_transform(source, str(map_path)))
    with tarfile.open(out) as tf:
        for member in tf.getmembers():
            if not member.isfile():
                continue
            data = tf.extractfile(member).read()  # type: ignore[union-attr]
            if b"\0" in data:
                continue  # binary config space
            assert _leaks(data.decode("utf-8", "replace"), identities) == [], member.name
    assert json.loads(map_path.read_text())["map"]["host-1"] == "gpu-node-13"
    # the redacted snapshot still reads as a node
    from doctor.facts import Facts

    facts = Facts(open_source(str(out)))
    assert len(facts.gpus.gpus) == 8 and facts.host.hostname == "host-1"
