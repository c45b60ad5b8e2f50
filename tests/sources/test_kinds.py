"""Source recognition: one rule for open_source, tarballs and gnd fleet's folder scan."""

from __future__ import annotations

from doctor.sources.kinds import inner_folder, source_kind


def test_markers_decide_the_kind_and_a_sosreport_wins() -> None:
    assert source_kind(["sys", "proc", "etc"]) == "snapshot"
    assert source_kind(["gnd-manifest.json"]) == "snapshot"
    assert source_kind(["sos_commands", "proc"]) == "sosreport"
    assert source_kind(["etc", "notes.txt"]) is None


def test_a_single_wrapper_folder_is_looked_into_but_not_a_lone_root_folder() -> None:
    always = lambda name: True  # noqa: E731
    assert inner_folder(["sosreport-node1"], always) == "sosreport-node1"
    assert inner_folder(["sosreport-node1"], lambda name: False) is None  # a file
    assert inner_folder(["etc"], always) is None and inner_folder(["sys"], always) is None
    assert inner_folder(["a", "b"], always) is None
