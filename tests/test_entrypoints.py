"""The start-up-cheap entry point scan finds what importlib.metadata finds."""

from __future__ import annotations

import sys
import zipfile
from importlib.metadata import entry_points as metadata_entry_points
from pathlib import Path

import pytest

from doctor.entrypoints import _parse, entry_points

GROUP = "gpu_node_doctor.checks"


def _dist(root: Path, folder: str, name: str, entry_points_txt: str) -> None:
    dist = root / folder
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points_txt)


def test_parse_reads_only_the_group_and_skips_comments() -> None:
    text = ("[console_scripts]\nx = a:b\n\n; comment\n[gpu_node_doctor.checks]\n# comment\n"
            "one = pkg.mod\n two =  pkg.other:CHECKS.first [extra]\n[other]\nthree = c\n")
    assert _parse(text, GROUP) == [("one", "pkg.mod"), ("two", "pkg.other:CHECKS.first [extra]")]


def test_same_names_and_values_as_importlib_metadata_for_installed_distributions() -> None:
    for group in (GROUP, "console_scripts"):
        ours = sorted((name, value) for name, value, _ in entry_points(group))
        theirs = sorted((ep.name, ep.value) for ep in metadata_entry_points(group=group))
        assert ours == theirs


def test_first_distribution_of_a_name_wins_and_attributes_load(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    (first / "gnd_ep_probe.py").parent.mkdir()
    (first / "gnd_ep_probe.py").write_text("class Holder:\n    value = 42\n")
    _dist(first, "gnd_ep_probe-2.0.dist-info", "gnd-ep-probe", f"[{GROUP}]\nprobe = gnd_ep_probe:Holder.value\n")
    _dist(second, "GND.EP_Probe-1.0.dist-info", "GND.EP_Probe", f"[{GROUP}]\nstale = gnd_ep_probe\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    try:
        found = {name: (value, load) for name, value, load in entry_points(GROUP)}
        assert "stale" not in found  # the shadowed copy of the same distribution is not read
        assert found["probe"][0] == "gnd_ep_probe:Holder.value" and found["probe"][1]() == 42
    finally:
        sys.modules.pop("gnd_ep_probe", None)


def test_a_zip_on_sys_path_is_read_through_importlib_metadata(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("gnd_zipped.py", "VALUE = 'zipped'\n")
        zf.writestr("gnd_zipped-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: gnd-zipped\nVersion: 0.1\n")
        zf.writestr("gnd_zipped-0.1.dist-info/entry_points.txt", f"[{GROUP}]\nzipped = gnd_zipped:VALUE\n")
    monkeypatch.syspath_prepend(str(archive))
    try:
        found = {name: load for name, _, load in entry_points(GROUP)}
        assert found["zipped"]() == "zipped"
    finally:
        sys.modules.pop("gnd_zipped", None)


def test_unreadable_metadata_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "gnd_bad-0.1.dist-info", "gnd-bad", "")
    (tmp_path / "gnd_bad-0.1.dist-info" / "entry_points.txt").write_bytes(b"[gpu_node_doctor.checks]\nx = \xff\xfe\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "x" not in {name for name, _, _ in entry_points(GROUP)}
