"""Item 10: mistakes are never taken silently."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.hostile.conftest import SICK


def test_only_must_name_existing_checks(gnd: Any) -> None:
    gnd("check", str(SICK), "--only", "pcie,nosuch").refused("nosuch", "gnd checks")
    gnd("check", str(SICK), "--only", "").refused("--only")
    gnd("check", str(SICK), "--only", ",").refused("--only")
    outcome = gnd("check", "--format", "json", str(SICK), "--only", "pcie")
    outcome.ran()
    ran = {c["id"] for c in json.loads(outcome.out)["checks"]}
    assert ran and all(c.startswith("pcie.") for c in ran)


def test_missing_deploy_file_is_refused(gnd: Any, tmp_path: Path) -> None:
    gnd("check", str(SICK), "--deploy", "/nonexistent/vllm.service").refused("/nonexistent/vllm.service",
                                                                             "no such file")
    gnd("check", str(SICK), "--deploy", str(tmp_path)).refused(str(tmp_path), "directory")
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nExecStart=/usr/bin/vllm serve m --enforce-eager\n")
    outcome = gnd("check", "--format", "json", str(SICK), "--deploy", str(unit), "--only", "runtime.cuda_graphs")
    outcome.ran()
    assert str(unit) in outcome.out  # the file given is read and cited


def test_redaction_map_never_follows_a_symlink(gnd: Any, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    os.symlink(target, tmp_path / "dangling.json")
    gnd("check", str(SICK), "--redact", "--redact-map", str(tmp_path / "dangling.json")).refused("dangling.json")
    assert not target.exists()  # the link's target was not created
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, tmp_path / "link.json")
    gnd("check", str(SICK), "--redact", "--redact-map", str(tmp_path / "link.json")).refused("link.json")
    assert victim.read_text() == "keep me\n"


def test_redaction_map_is_created_private_and_reused(gnd: Any, tmp_path: Path) -> None:
    path = tmp_path / "map.json"
    first = gnd("check", "--format", "json", str(SICK), "--redact", "--redact-map", str(path))
    first.ran()
    assert path.stat().st_mode & 0o777 == 0o600
    second = gnd("check", "--format", "json", str(SICK), "--redact", "--redact-map", str(path))
    second.ran()
    assert json.loads(first.out)["findings"] == json.loads(second.out)["findings"]
