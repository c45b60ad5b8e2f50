"""Issue 12 item 1: `gnd collect` then `gnd check` of its output finds what checking the host finds,
on a stock-distribution layout where links point to absolute paths (merged /usr, /etc/alternatives,
systemd *.wants links, /etc/mtab, /etc/localtime)."""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from doctor.cli import main
from tests.roundtrip import differences

SICK = Path(__file__).resolve().parents[2] / "fixtures/hgx-h100-sick"
SECRET = "hf_" + "roundtrip" + "FAKEvalue" + "0" * 8  # built at run time so scanners do not mistake it
UNIT = f"""[Unit]
Description=SGLang server
[Service]
Environment=HF_TOKEN={SECRET}
ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path m --disable-cuda-graph
[Install]
WantedBy=multi-user.target
"""


def _stock_tree(root: Path) -> Path:
    """The sick H100 node dressed as a stock Debian/Ubuntu install."""
    shutil.copytree(SICK, root, symlinks=True)
    for d in ("bin", "sbin", "lib", "lib64"):
        (root / "usr" / d).mkdir(parents=True, exist_ok=True)
        os.symlink(f"usr/{d}", root / d)  # merged /usr
    units = root / "usr/lib/systemd/system"
    units.mkdir(parents=True)
    (units / "systemd-timesyncd.service").write_text("[Service]\nExecStart=/lib/systemd/systemd-timesyncd\n")
    (units / "sglang.service").write_text(UNIT)
    etc_units = root / "etc/systemd/system"
    (etc_units / "multi-user.target.wants").mkdir(parents=True, exist_ok=True)
    os.symlink("/lib/systemd/system/systemd-timesyncd.service", etc_units / "dbus-org.freedesktop.timesync1.service")
    os.symlink("/lib/systemd/system/sglang.service", etc_units / "sglang.service")
    os.symlink("/etc/systemd/system/sglang.service", etc_units / "multi-user.target.wants/sglang.service")
    (root / "usr/bin/python3.11").write_text("#!binary\n")
    (root / "etc/alternatives").mkdir()
    os.symlink("/usr/bin/python3.11", root / "etc/alternatives/python")
    os.symlink("/etc/alternatives/python", root / "usr/bin/python")
    os.symlink("../proc/self/mounts", root / "etc/mtab")
    os.symlink("4242", root / "proc/self")
    (root / "usr/share/zoneinfo/Etc").mkdir(parents=True)
    (root / "usr/share/zoneinfo/Etc/UTC").write_bytes(b"TZif2\0\0\0")
    os.symlink("/usr/share/zoneinfo/Etc/UTC", root / "etc/localtime")
    (root / "usr/lib/os-release").write_text('ID=ubuntu\nVERSION_ID="22.04"\n')
    os.symlink("../usr/lib/os-release", root / "etc/os-release")
    return root


def _check(capsys: pytest.CaptureFixture[str], source: str) -> dict[str, object]:
    capsys.readouterr()
    code = main(["check", "--format", "json", source])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


def test_collect_then_check_finds_what_the_host_check_finds(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    if not (SICK / "sys").is_dir():
        pytest.skip("fixture hgx-h100-sick not generated")
    root = _stock_tree(tmp_path / "host")
    snap = tmp_path / "s.tar.gz"
    assert main(["collect", "--root", str(root), "-o", str(snap)]) == 0
    host = _check(capsys, str(root))
    snapped = _check(capsys, str(snap))
    assert differences(host, snapped) == []
    # the unit reached through two absolute links was read in both, and its flag found
    titles = [f["title"] for f in snapped["findings"] if f["check"] == "runtime.cuda_graphs"]  # type: ignore[index]
    assert any("disable-cuda-graph" in t for t in titles), titles
    with tarfile.open(snap) as tf:
        names = set(tf.getnames())
        links = {m.name: m.linkname for m in tf.getmembers() if m.issym()}
        blobs = b"".join(tf.extractfile(m).read() for m in tf.getmembers() if m.isfile())  # type: ignore[union-attr]
    assert links["etc/systemd/system/sglang.service"] == "/lib/systemd/system/sglang.service"  # kept as recorded
    assert "usr/lib/systemd/system/sglang.service" in names and "lib" in links
    assert links.get("etc/os-release") == "../usr/lib/os-release" and "usr/lib/os-release" in names
    assert SECRET.encode() not in blobs  # the target file got the unit's sanitiser too
