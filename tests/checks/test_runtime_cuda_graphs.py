"""Check runtime.cuda_graphs (tests moved from test_runtime_checks.py)."""

from __future__ import annotations

from tests.checks._netnuma_base import UNIT, cmdline, healthy, sick
from tests.helpers import facts, findings_of

VLLM = ("/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m")
SGL = ("python3", "-m", "sglang.launch_server", "--model-path", "m")


def _pairs(found: list) -> list[tuple[str, str]]:
    return [(f.subject_id, f.severity) for f in found if f.severity != "pass"]


def test_sick_enforce_eager_high_merged_with_unit() -> None:
    found = findings_of(facts(base=sick()), "runtime.cuda_graphs")
    assert _pairs(found) == [("pid:4242", "high")]
    assert found[0].subject == "vllm api_server (pid 4242)"  # a reader can place it
    assert {e.source for e in found[0].evidence} == {"proc/4242/cmdline", UNIT}
    assert "0000:3a:00.0" in found[0].related


def test_healthy_has_no_graph_finding() -> None:
    assert [f.severity for f in findings_of(facts(base=healthy()), "runtime.cuda_graphs")] == ["pass"]


def test_vllm_variants() -> None:
    for extra, sev in ((("-cc.cudagraph_mode=none",), "high"),
                       (("--compilation-config", '{"cudagraph_mode": "NONE"}'), "high"),
                       (("-O0",), "medium"), (("--no-enforce-eager",), None),
                       (("--enforce-eager", "--kv-transfer-config", '{"kv_role":"kv_producer"}'), "low")):
        found = findings_of(facts(cmdline(*VLLM, *extra), base=healthy()), "runtime.cuda_graphs")
        assert [s for _, s in _pairs(found)] == ([sev] if sev else []), extra


def test_sglang_prefill_worker_is_low_decode_is_high() -> None:
    prefill = cmdline(*SGL, "--disaggregation-mode", "prefill", "--disable-cuda-graph")
    assert _pairs(findings_of(facts(prefill, base=healthy()), "runtime.cuda_graphs")) == [("pid:4242", "low")]
    decode = cmdline(*SGL, "--disable-cuda-graph")
    assert _pairs(findings_of(facts(decode, base=healthy()), "runtime.cuda_graphs")) == [("pid:4242", "high")]
    padding = cmdline(*SGL, "--disable-cuda-graph-padding")
    assert _pairs(findings_of(facts(padding, base=healthy()), "runtime.cuda_graphs")) == [("pid:4242", "low")]


def test_deploy_files_yaml_and_trtllm() -> None:
    compose = ("services:\n  llm:\n    image: vllm/vllm-openai\n    command: [\"--model\", \"m\", \"--enforce-eager\"]\n")
    found = findings_of(facts({"etc/compose/llm.yaml": compose}, base=healthy()), "runtime.cuda_graphs")
    assert ("etc/compose/llm.yaml", "high") in _pairs(found)
    trt = {"etc/compose/trt.yaml": "services:\n  gen:\n    command: trtllm-serve m --extra_llm_api_options x.yaml\n"
                                   "configs:\n  x:\n    content: |\n      cuda_graph_config: null\n"}
    assert ("etc/compose/trt.yaml", "high") in _pairs(findings_of(facts(trt, base=healthy()), "runtime.cuda_graphs"))
    nested = {"etc/compose/ok.yaml": "cuda_graph_config:\n  enable_padding: true\n"}
    assert _pairs(findings_of(facts(nested, base=healthy()), "runtime.cuda_graphs")) == []
    ctx = {"etc/compose/ctx-config.yaml": "cuda_graph_config: null\n"}
    assert _pairs(findings_of(facts(ctx, base=healthy()), "runtime.cuda_graphs")) == [("etc/compose/ctx-config.yaml",
                                                                                        "low")]


def test_literal_gates_give_what_the_patterns_give() -> None:
    """Rules, command blocks and prefill file names skip their pattern only where it cannot match."""
    import random

    import checks.runtime_cuda_graphs as rcg

    def every_rule(text: str) -> list[object]:
        is_vllm = "vllm" in text.lower()
        out = []
        for rule in rcg.RULES:
            m = None if rule.vllm_only and not is_vllm else rule.pattern.search(text)
            if m is not None and not (rule.key == "trtllm.cuda_graph_config_null" and not m.group(1)
                                      and rcg._has_children(text, m)):
                out.append(rule)
        return out

    pieces = ("--enforce-eager", "--ENFORCE_EAGER", "enforce_eager: true", "\"enforce-eager\" = 1", "cudagraph_mode",
              "CUDAGRAPH-MODE", ": none", "=NONE", " ", "\n", "  ", "vllm", "-O 0", "-O0", "--optimization-level=0",
              "-O.level=0", "-cc.mode=none", "--compilation-config.level 0", "--disable-cuda-graph",
              "--disable-cuda-graph-padding", "disable_cuda_graph: true", "--cuda-graph-backend-x disabled",
              "cuda_graph_config:", " null", "use_cuda_graph: no", "ſ", "\u212a", "-", "x", "ExecStart=", "command:",
              "ARGS =", "entrypoint:", "- ", "Exec", "start", "ctx", "Context", "PREFILL", "_", ".", "/", "args",
              "--diſable-cuda-graph", "--cuda-graph-bac\u212aend disabled", "uſe_cuda_graph: no", "ExecStart", "prefi", "ll")
    rng = random.Random(9)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 9)))
        assert rcg._match(text, "w", None) == [rcg.Hit(r, "w", r.pattern.search(text).group(0).strip(),  # type: ignore[union-attr]
                                                      bool(rcg.PREFILL.search(text)), bool(rcg.NON_CUDA.search(text)))
                                               for r in every_rule(text)], repr(text)
        assert rcg._segment_start(text) == bool(rcg.SEGMENT_START.match(text)), repr(text)
        assert rcg._prefill_path(text) == bool(rcg.PREFILL_PATH.search(text)), repr(text)
