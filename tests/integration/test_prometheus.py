"""`gnd check --format prometheus -o` -> node_exporter's textfile collector -> a Prometheus server,
all from the distribution's packages (Debian: prometheus-node-exporter, prometheus), on 127.0.0.1 with
random free ports and storage in a temporary folder. The test asks Prometheus's HTTP API for the
finding series and their labels, for the example alerts (deploy/prometheus/gnd-alerts.yaml, first
checked by `promtool check rules`) and for every query of the Grafana dashboard.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers import SICK
from tests.integration.conftest import free_port, require_tool

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "gnd-alerts.yaml"
DASHBOARD = ROOT / "deploy" / "prometheus" / "gnd-dashboard.json"


def _get(port: int, path: str, **params: str) -> Any:
    url = f"http://127.0.0.1:{port}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=10) as resp:  # noqa: S310 - loopback, built here
        return json.load(resp) if "api" in path else resp.read().decode()


def _wait(what: str, probe: Any, timeout: float, logs: list[Path]) -> Any:
    end = time.monotonic() + timeout
    error = ""
    while time.monotonic() < end:
        try:
            found = probe()
            if found:
                return found
        except OSError as exc:
            error = str(exc)
        time.sleep(0.3)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists())
    raise AssertionError(f"{what} within {timeout:g} s {error}\n{tails}")


@contextlib.contextmanager
def _started(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def test_prometheus_scrapes_gnds_textfile_through_node_exporter(tmp_path: Path) -> None:
    exporter = require_tool("prometheus-node-exporter", "prometheus-node-exporter")
    prometheus = require_tool("prometheus", "prometheus")
    promtool = require_tool("promtool", "prometheus")

    rules = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert rules.returncode == 0, rules.stdout + rules.stderr

    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    prom = textfiles / "gnd.prom"
    run = subprocess.run([sys.executable, "-m", "doctor", "check", str(SICK), "--format", "prometheus", "-o",
                          str(prom)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 1, run.stderr  # the sick fixture has findings at or above high
    written = {tuple(sorted(m.groupdict().items())) for m in re.finditer(
        r'^gnd_finding\{check="(?P<check>[^"]*)",severity="(?P<severity>[^"]*)",subject="(?P<subject>[^"]*)"\} 1$',
        prom.read_text(), re.M)}
    assert len(written) > 5

    exporter_port, prom_port = free_port(), free_port()
    target = f"127.0.0.1:{exporter_port}"
    (tmp_path / "prometheus.yml").write_text(f"""\
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {RULES}
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["{target}"]
""")
    logs = [tmp_path / "node_exporter.log", tmp_path / "prometheus.log"]
    with _started([exporter, f"--web.listen-address={target}", "--collector.disable-defaults",
                   "--collector.textfile", f"--collector.textfile.directory={textfiles}"], logs[0]), \
         _started([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                   f"--web.listen-address=127.0.0.1:{prom_port}", f"--storage.tsdb.path={tmp_path / 'data'}",
                   "--storage.tsdb.retention.time=1h"], logs[1]):
        # node_exporter serves the file as it is, and says it read it without error
        metrics = _wait("node_exporter serves gnd_finding", lambda: _get(exporter_port, "/metrics"), 30, logs)
        assert "gnd_finding{" in metrics
        assert re.search(r'^node_textfile_scrape_error 0$', metrics, re.M), "the textfile collector refused gnd.prom"

        def series() -> list[dict[str, str]]:
            return [s["metric"] for s in _get(prom_port, "/api/v1/query", query="gnd_finding")["data"]["result"]]

        found = _wait("Prometheus has the gnd_finding series", series, 60, logs)
        assert {s["job"] for s in found} == {"node"} and {s["instance"] for s in found} == {target}
        assert {tuple(sorted((k, v) for k, v in s.items() if k in ("check", "severity", "subject")))
                for s in found} == written
        assert {tuple(sorted(s)) for s in found} == {("__name__", "check", "instance", "job", "severity",
                                                      "subject")}  # the label set the docs pin

        for name in ("gnd_findings", "gnd_check_status", "gnd_run_duration_seconds", "gnd_run_timestamp_seconds",
                     "gnd_run_info"):
            assert _get(prom_port, "/api/v1/query", query=name)["data"]["result"], name

        # the example alerts fire for what the sick fixture has
        def firing() -> set[tuple[str, str, str]]:
            alerts = _get(prom_port, "/api/v1/alerts")["data"]["alerts"]
            return {(a["labels"]["alertname"], a["labels"].get("check", ""), a["labels"].get("subject", ""))
                    for a in alerts if a["state"] == "firing"}

        expected = {("GndFindingCritical" if dict(w)["severity"] == "critical" else "GndFindingHigh",
                     dict(w)["check"], dict(w)["subject"]) for w in written if dict(w)["severity"] in
                    ("critical", "high")}
        got = _wait("the gnd alerts fire", lambda: firing() if expected <= firing() else set(), 30, logs)
        assert expected <= got
        assert not any(name == "GndResultStale" for name, _c, _s in got)

        # every query of the dashboard reads series that are there
        dashboard = json.loads(DASHBOARD.read_text())
        exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
        assert exprs and all("gnd_" in e for e in exprs)
        for expr in exprs:
            result = _get(prom_port, "/api/v1/query", query=expr.replace("$instance", ".*"))
            assert result["status"] == "success" and result["data"]["result"], expr
        variable = dashboard["templating"]["list"][0]["query"]["query"]
        label = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable)
        assert label, variable
        values = _get(prom_port, f"/api/v1/label/{label[2]}/values", **{"match[]": label[1]})["data"]
        assert values == [target]

