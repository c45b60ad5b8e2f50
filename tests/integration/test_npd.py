"""`gnd npd` as node-problem-detector's custom plugin, run the way NPD runs it.

NPD itself is not packaged by Debian, so its side is what its custom-plugin contract says: the plugin
config (deploy/kubernetes/npd-daemonset.yaml's ConfigMap) names a program and its arguments, NPD runs
it every invoke_interval, kills it after `timeout`, keeps max_output_length of its stdout and maps
exit 0/1/2 to the condition False/True/Unknown. The result file is written by the collector
DaemonSet's own command line (`gnd check SNAPSHOT --format json -o /state/result.json`), with the
node's /var/lib/gpu-node-doctor standing in a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import HEALTHY, SICK

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
STATE = "/var/lib/gpu-node-doctor"


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]


def _plugin() -> dict[str, Any]:
    config = next(d for d in _docs("npd-daemonset.yaml") if d["kind"] == "ConfigMap")
    return json.loads(config["data"]["gnd-plugin.json"])  # type: ignore[no-any-return]


def _seconds(text: str) -> float:
    match = re.fullmatch(r"(\d+)s", text)
    assert match, text
    return float(match[1])


def _collect(source: Path, state: Path) -> Path:
    """What the collector DaemonSet runs after each snapshot, with /state here."""
    ds = next(d for d in _docs("collect-daemonset.yaml") if d["kind"] == "DaemonSet")
    script = ds["spec"]["template"]["spec"]["containers"][0]["args"][0]
    line = next(ln.strip() for ln in script.splitlines() if ln.strip().startswith("gnd check"))
    argv = shlex.split(line.split("||")[0])
    assert argv[:2] == ["gnd", "check"] and argv[-2:] == ["-o", "/state/result.json"], line
    argv = [sys.executable, "-m", "doctor", "check", str(source), *argv[3:-1], str(state / "result.json")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return state / "result.json"


def _invoke(plugin: dict[str, Any], state: Path, *extra: str) -> tuple[int, str, float]:
    """Run the rule as NPD does: its path (here: this gnd) and args, its timeout, its output cap."""
    (rule,) = plugin["rules"]
    assert rule["path"] == "/usr/local/bin/gnd"  # where pip puts gnd in deploy/kubernetes/Dockerfile.npd
    args = [a.replace(STATE, str(state)) for a in rule["args"]] + list(extra)
    timeout = _seconds(rule["timeout"])
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    elapsed = time.monotonic() - start
    out = proc.stdout
    assert out.endswith("\n") and out.count("\n") == 1, out  # one line: the condition's message
    assert len(out.rstrip("\n")) <= plugin["pluginConfig"]["max_output_length"]
    return proc.returncode, out.rstrip("\n"), elapsed


def test_the_plugin_config_keeps_npds_contract() -> None:
    plugin = _plugin()
    assert plugin["plugin"] == "custom"
    cfg = plugin["pluginConfig"]
    assert _seconds(cfg["timeout"]) <= 5 and _seconds(plugin["rules"][0]["timeout"]) <= _seconds(cfg["timeout"])
    (condition,) = plugin["conditions"]
    (rule,) = plugin["rules"]
    assert rule["type"] == "permanent" and rule["condition"] == condition["type"] == "GpuNodeDoctorProblem"
    assert rule["args"][:2] == ["npd", f"{STATE}/result.json"]
    # the NPD pod mounts the folder the collector writes, read-only, and the config where NPD is told
    npd = next(d for d in _docs("npd-daemonset.yaml") if d["kind"] == "DaemonSet")
    pod = npd["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts[STATE]["readOnly"] is True
    paths = {v["name"]: v.get("hostPath", {}).get("path") for v in pod["volumes"]}
    assert paths[mounts[STATE]["name"]] == STATE
    assert "--config.custom-plugin-monitor=/config/gnd-plugin.json" in container["command"]
    collect = next(d for d in _docs("collect-daemonset.yaml") if d["kind"] == "DaemonSet")
    cpod = collect["spec"]["template"]["spec"]
    cmounts = {m["mountPath"]: m["name"] for m in cpod["containers"][0]["volumeMounts"]}
    cpaths = {v["name"]: v.get("hostPath", {}).get("path") for v in cpod["volumes"]}
    assert cpaths[cmounts["/state"]] == STATE


def test_sick_node_is_a_problem_healthy_is_ok_within_the_timeout(tmp_path: Path) -> None:
    plugin = _plugin()
    _collect(SICK, tmp_path)
    rc, message, elapsed = _invoke(plugin, tmp_path)
    assert rc == 1 and message.startswith("gnd: critical ")
    assert elapsed < _seconds(plugin["rules"][0]["timeout"])
    _collect(HEALTHY, tmp_path)
    rc, message, _ = _invoke(plugin, tmp_path)
    assert rc == 0 and "nothing at or above high" in message


def test_a_gpu_finding_is_keyed_by_its_uuid(tmp_path: Path) -> None:
    result = json.loads(_collect(SICK, tmp_path).read_text())
    uuid = {g["address"]: g["uuid"] for g in result["inventory"]["gpus"]}
    link = next(f for f in result["findings"] if f["check"] == "pcie.link_downgrade" and f["subject_id"] in uuid)
    rc, message, _ = _invoke(_plugin(), tmp_path, "--gpu", uuid[link["subject_id"]])
    assert rc == 1 and uuid[link["subject_id"]] in message and link["subject"] not in message
    healthy_gpu = next(u for a, u in uuid.items()
                       if not any(f["subject_id"] == a and f["severity"] in ("critical", "high")
                                  for f in result["findings"]))
    rc, message, _ = _invoke(_plugin(), tmp_path, "--gpu", healthy_gpu)
    assert rc == 0 and healthy_gpu in message
    rc, message, _ = _invoke(_plugin(), tmp_path, "--gpu", "GPU-00000000-0000-0000-0000-000000000000")
    assert rc == 2


def _rewrite(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_old_missing_corrupt_or_cut_results_are_unknown(tmp_path: Path) -> None:
    plugin = _plugin()
    rc, message, _ = _invoke(plugin, tmp_path)  # the collector has not written one yet
    assert rc == 2 and "no such file" in message
    result = _collect(SICK, tmp_path)
    _rewrite(result, generated_at=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() - 3 * 3600)))
    rc, message, _ = _invoke(plugin, tmp_path)
    assert rc == 2 and "old" in message and "--max-age" in message
    _rewrite(result, generated_at=time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + 3600)))
    rc, message, _ = _invoke(plugin, tmp_path)
    assert rc == 2 and "future" in message
    result.write_text('{"findings": [')
    rc, message, _ = _invoke(plugin, tmp_path)
    assert rc == 2 and message.startswith("gnd: unknown")
    # a healthy node's run its deadline cut: nothing found, but not judged whole
    result = _collect(HEALTHY, tmp_path)
    data = json.loads(result.read_text())
    data["findings"].append({"severity": "unknown", "check": "doctor.deadline", "subject": "node", "rank": 99,
                             "title": "nvidia-smi -q -x: did not finish before the deadline"})
    result.write_text(json.dumps(data))
    rc, message, _ = _invoke(plugin, tmp_path)
    assert rc == 2 and "--deadline" in message
