"""Settings inside the config file a server names with --config (runtime.cuda_graphs, runtime.debug_env)."""

from __future__ import annotations

from tests.checks._netnuma_base import cmdline, healthy
from tests.helpers import facts, findings_of

SERVE = ("/usr/bin/python3", "/usr/local/bin/vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct")
CONFIG = "etc/vllm/llama70b.yaml"


def _alarms(found: list) -> list[tuple[str, str, str]]:
    return [(f.subject, f.severity, f.observed) for f in found if f.severity not in ("pass", "info")]


def test_flags_in_the_named_config_are_found() -> None:
    yaml = ("# served by vllm.service\ntensor-parallel-size: 8\nenforce-eager: true\n"
            "disable-custom-all-reduce: true\n")
    node = {**cmdline(*SERVE, "--config", "/" + CONFIG), CONFIG: yaml}
    graphs = findings_of(facts(node, base=healthy()), "runtime.cuda_graphs")
    assert [(f.severity, f.evidence[0].source) for f in graphs if f.severity != "pass"] == [("high", "/" + CONFIG)]
    debug = findings_of(facts(node, base=healthy()), "runtime.debug_env")
    assert _alarms(debug) == [("/" + CONFIG, "medium", "--disable-custom-all-reduce")]


def test_config_values_that_keep_graphs_on_are_quiet() -> None:
    yaml = "enforce-eager: false\n# enforce-eager: true\ndisable-custom-all-reduce: false\n"
    node = {**cmdline(*SERVE, "--config=/" + CONFIG), CONFIG: yaml}
    assert _alarms(findings_of(facts(node, base=healthy()), "runtime.cuda_graphs")) == []
    assert _alarms(findings_of(facts(node, base=healthy()), "runtime.debug_env")) == []


def test_config_not_in_the_snapshot_or_relative_is_unknown() -> None:
    missing = findings_of(facts(cmdline(*SERVE, "--config", "/" + CONFIG), base=healthy()), "runtime.cuda_graphs")
    assert [(f.subject, f.severity) for f in missing if f.severity != "pass"] == [("4242", "unknown")]
    assert "not in this snapshot" in missing[0].detail or "not in this" in missing[-1].detail
    relative = findings_of(facts(cmdline(*SERVE, "--config", "cfg.yaml"), base=healthy()), "runtime.cuda_graphs")
    (u,) = [f for f in relative if f.severity == "unknown"]
    assert "relative" in u.detail
