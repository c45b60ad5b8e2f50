"""Advice fits who ran the doctor: a source says whether it was read as root, and root is never told to
"run as root" (issue 25: messages that fit who runs them)."""

from __future__ import annotations

import json

import pytest

from doctor.facts import Facts
from doctor.sources.kinds import MANIFEST
from tests.helpers import findings_of, source


@pytest.mark.parametrize(("uid", "expected"), [(0, True), (1000, False), ("0", None), (True, None), (None, None)])
def test_a_snapshot_says_whether_it_was_collected_as_root(uid: object, expected: bool | None) -> None:
    changes = {} if uid is None else {MANIFEST: json.dumps({"uid": uid})}
    assert source(changes).as_root() is expected


def _refused_dmesg(uid: int) -> Facts:
    manifest = {"uid": uid, "specs": {"dmesg": {"status": "missing",
                                                "detail": "dmesg: read kernel buffer failed: Operation not permitted"}}}
    return Facts(source({MANIFEST: json.dumps(manifest), "commands/dmesg": None}))


@pytest.mark.parametrize("uid", [0, 1000])
def test_a_refused_kernel_log_is_explained_for_who_read_it(uid: int) -> None:
    facts = _refused_dmesg(uid)
    [finding] = [f for f in findings_of(facts, "gpu.xid_errors") if f.severity == "unknown"]
    told = f"{finding.evidence[0].value} {finding.fix.notes}"
    if uid == 0:
        assert "as root" in told and "run as root" not in told.lower() and "sudo" not in told, told
    else:
        assert "sudo gnd collect" in told, told
