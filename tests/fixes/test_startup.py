"""Fixes where the server is started: drop-ins, unit edits and patches that run unattended and whose
rollback restores exactly what was there (applied for real to copies of the files)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from doctor.derived.procs import user_env
from doctor.facts import Facts
from doctor.findings import Fix, FixStep
from doctor.fixes.startup import env_fix, flag_fix
from tests.checks._netnuma_base import cmdline
from tests.helpers import facts, healthy

COMPOSE = "etc/compose/llm.yaml"
MANIFEST = "etc/kubernetes/manifests/llm.yaml"
UNIT = "etc/systemd/system/llm.service"
COMPOSE_TEXT = """services:
  vllm:
    image: vllm/vllm-openai:v0.11.0
    command: ["--model", "m", "--enforce-eager", "--port", "8000"]
    environment:
      - HF_HOME=/data/hf
      - NCCL_IB_DISABLE=1
      - OMP_NUM_THREADS=1
"""
MANIFEST_TEXT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm
spec:
  template:
    spec:
      containers:
        - name: vllm
          args:
            - --model
            - m
            - --enforce-eager
          env:
            - name: NCCL_P2P_DISABLE
              value: "1"
            - name: HF_HOME
              value: /data/hf
"""
UNIT_TEXT = """[Service]
Environment=NCCL_IB_DISABLE=1 HF_HOME=/data/hf
ExecStart=/usr/bin/vllm serve m --enforce-eager --api-key sk-real-secret-123 --port 8000
"""


def _facts(path: str, text: str) -> Facts:
    return facts({path: text}, base=healthy())


def _setting(f: Facts, name: str, path: str):  # type: ignore[no-untyped-def]
    return next(s for s in user_env(f, [name]) if path in s.files)


def _apply(fix: Fix, phase: str, moved: dict[str, Path]) -> list[FixStep]:
    """Run ``phase``'s unattended steps with absolute paths moved under tmp; the steps left for a human."""
    def move(text: str) -> str:
        for old, new in moved.items():
            text = text.replace(old, str(new))
        return text

    by_hand = []
    for step in fix.phase(phase):
        if not step.unattended:
            by_hand.append(step)
        elif step.heredoc:
            Path(move(step.heredoc[0])).write_text(step.heredoc[1])
        else:
            subprocess.run([move(a) for a in step.argv], check=True, capture_output=True)
    return by_hand


needs_patch = pytest.mark.skipif(shutil.which("patch") is None, reason="patch not installed")


@needs_patch
@pytest.mark.parametrize("path,text,name,gone", [
    (COMPOSE, COMPOSE_TEXT, "NCCL_IB_DISABLE", "- NCCL_IB_DISABLE=1"),
    (MANIFEST, MANIFEST_TEXT, "NCCL_P2P_DISABLE", "name: NCCL_P2P_DISABLE"),
])
def test_deployment_file_patch_applies_and_reverses_exactly(tmp_path: Path, path: str, text: str, name: str,
                                                            gone: str) -> None:
    f = _facts(path, text)
    fix = env_fix(f, _setting(f, name, path), notes="n")
    assert fix.builder == "file_patch"
    target = tmp_path / "llm.yaml"
    target.write_text(text)
    by_hand = _apply(fix, "runtime", {"/" + path: target})
    after = target.read_text()
    assert gone not in after and after.count("\n") < text.count("\n")
    assert "HF_HOME" in after  # the neighbours stay
    apply = f"docker compose -f /{path} up -d" if path == COMPOSE else f"kubectl apply -f /{path}"
    assert [s.text for s in by_hand] == [apply]  # recreating the container is for a human
    _apply(fix, "rollback", {"/" + path: target})
    assert target.read_text() == text
    assert not (tmp_path / "llm.yaml.gnd.patch").exists()


@needs_patch
@pytest.mark.parametrize("path,text,line_after", [
    (COMPOSE, COMPOSE_TEXT, '    command: ["--model", "m", "--port", "8000"]'),
    (MANIFEST, MANIFEST_TEXT, None),
])
def test_flag_removed_from_a_deployment_file_and_put_back(tmp_path: Path, path: str, text: str,
                                                          line_after: str | None) -> None:
    f = _facts(path, text)
    fix = flag_fix(f, [path], None, "--enforce-eager", notes="n")
    assert fix.builder == "file_patch"
    target = tmp_path / "llm.yaml"
    target.write_text(text)
    _apply(fix, "runtime", {"/" + path: target})
    after = target.read_text()
    assert "--enforce-eager" not in after and "--model" in after
    if line_after:
        assert line_after in after.splitlines()
    else:  # the list item goes, not just its text (an empty "- " would pass null to the container)
        assert len(after.splitlines()) == len(text.splitlines()) - 1
    _apply(fix, "rollback", {"/" + path: target})
    assert target.read_text() == text


def test_unit_env_drop_in_and_its_exact_rollback(tmp_path: Path) -> None:
    f = _facts(UNIT, UNIT_TEXT)
    fix = env_fix(f, _setting(f, "NCCL_IB_DISABLE", UNIT), notes="n")
    assert fix.builder == "unit_env"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    by_hand = _apply(fix, "runtime", {"/etc/systemd/system": tmp_path})
    conf = tmp_path / "llm.service.d" / "90-gnd-nccl-ib-disable.conf"
    assert "[Service]\nUnsetEnvironment=NCCL_IB_DISABLE\n" in conf.read_text()
    assert [s.text for s in by_hand] == ["systemctl daemon-reload", "systemctl restart llm.service"]
    back = _apply(fix, "rollback", {"/etc/systemd/system": tmp_path})
    assert not conf.exists() and sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == before
    assert [s.text for s in back] == ["systemctl daemon-reload", "systemctl restart llm.service"]


def test_unit_env_replacement_sets_the_value() -> None:
    f = _facts(UNIT, UNIT_TEXT)
    fix = env_fix(f, _setting(f, "NCCL_IB_DISABLE", UNIT), notes="n", replacement="0")
    content = next(s.heredoc[1] for s in fix.steps if s.heredoc)
    assert 'Environment="NCCL_IB_DISABLE=0"\n' in content and "UnsetEnvironment" not in content


def test_masked_command_line_is_edited_in_place_and_restored(tmp_path: Path) -> None:
    """The ExecStart= line holds a secret gnd masks: no drop-in can copy it, so sed edits the unit."""
    f = _facts(UNIT, UNIT_TEXT)
    fix = flag_fix(f, [UNIT], None, "--enforce-eager", notes="n")
    assert fix.builder == "unit_flag"
    assert "sk-real-secret" not in str(fix.to_dict())
    target = tmp_path / "llm.service"
    target.write_text(UNIT_TEXT)
    by_hand = _apply(fix, "runtime", {"/" + UNIT: target})
    assert target.read_text() == UNIT_TEXT.replace(" --enforce-eager", "")
    assert all("systemctl" in s.text for s in by_hand)
    _apply(fix, "rollback", {"/" + UNIT: target})
    assert target.read_text() == UNIT_TEXT and not (tmp_path / "llm.service.gnd-bak").exists()


def test_plain_command_line_gets_an_exec_start_drop_in() -> None:
    text = 'ExecStart=/usr/bin/vllm serve "my model" --enforce-eager --port 8000\n'
    f = _facts(UNIT, text)
    fix = flag_fix(f, [UNIT], None, "--enforce-eager", notes="n")
    write = next(s for s in fix.steps if s.heredoc)
    assert write.heredoc == ("/etc/systemd/system/llm.service.d/90-gnd-no-enforce-eager.conf",
                             "# Written by gpu-node-doctor; delete this file to undo.\n[Service]\nExecStart=\n"
                             'ExecStart=/usr/bin/vllm serve "my model" --port 8000\n')
    assert not write.unattended  # it carries a command line: a human reviews it
    assert [s.text for s in fix.phase("rollback")][0] == f"rm -f {write.heredoc[0]}"


def test_bare_process_gets_manual_steps_naming_it() -> None:
    f = facts(cmdline("/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--enforce-eager"),
              base=healthy())
    fix = flag_fix(f, [], 4242, "--enforce-eager", notes="n")
    assert fix.builder == "process_restart"
    assert [s.kind for s in fix.steps] == ["manual", "manual"]
    assert "vllm api_server (pid 4242) without --enforce-eager" in fix.steps[0].manual


@pytest.mark.parametrize("path,text", [
    ("etc/systemd/system/vllm$(reboot).service", "[Service]\nEnvironment=NCCL_IB_DISABLE=1\n"),
    ("etc/systemd/system/a b;rm -rf x.service.d/10-env.conf", "[Service]\nEnvironment=NCCL_IB_DISABLE=1\n"),
    ("etc/compose/x;reboot.yaml", "services:\n  s:\n    environment:\n      - NCCL_IB_DISABLE=1\n"),
])
def test_hostile_file_and_unit_names_give_advice_not_commands(path: str, text: str) -> None:
    f = _facts(path, text)
    fix = env_fix(f, _setting(f, "NCCL_IB_DISABLE", path), notes="Remove it.")
    assert not fix.steps and fix.notes.startswith("Remove it.")


def test_hostile_values_in_a_patched_line_stay_literal() -> None:
    """A patch carries the file's own line; the fix script writes it as one shell-quoted word."""
    from reports.fixscript import line_for

    text = "services:\n  s:\n    environment:\n      - NCCL_IB_DISABLE=1$(reboot)`id`'\n"
    f = _facts(COMPOSE, text)
    fix = env_fix(f, _setting(f, "NCCL_IB_DISABLE", COMPOSE), notes="n")
    write = next(s for s in fix.steps if s.heredoc)
    words = shlex.split(line_for(write))
    assert words[0] == "put" and words[2:] == [write.heredoc[0], write.heredoc[1]]
    assert "-      - NCCL_IB_DISABLE=1$(reboot)`id`'\n" in write.heredoc[1]


@needs_patch
@pytest.mark.parametrize("path,text,name,line_after", [
    (COMPOSE, COMPOSE_TEXT, "NCCL_IB_DISABLE", "      - NCCL_IB_DISABLE=0"),
    (COMPOSE, COMPOSE_TEXT.replace("- NCCL_IB_DISABLE=1", "NCCL_IB_DISABLE: 1").replace("- HF_HOME=/data/hf",
                                   "HF_HOME: /data/hf").replace("- OMP_NUM_THREADS=1", "OMP_NUM_THREADS: 1"),
     "NCCL_IB_DISABLE", '      NCCL_IB_DISABLE: "0"'),
    (MANIFEST, MANIFEST_TEXT, "NCCL_P2P_DISABLE", '              value: "0"'),
])
def test_deployment_file_value_changed_and_restored(tmp_path: Path, path: str, text: str, name: str,
                                                    line_after: str) -> None:
    f = _facts(path, text)
    fix = env_fix(f, _setting(f, name, path), notes="n", replacement="0")
    assert fix.builder == "file_patch", fix.notes
    target = tmp_path / "llm.yaml"
    target.write_text(text)
    _apply(fix, "runtime", {"/" + path: target})
    after = target.read_text().splitlines()
    assert line_after in after and len(after) == len(text.splitlines())
    assert [a for a, b in zip(after, text.splitlines()) if a != b] == [line_after]  # nothing else changes
    _apply(fix, "rollback", {"/" + path: target})
    assert target.read_text() == text
