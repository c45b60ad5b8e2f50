"""``--redact`` works on data, never on the tool's own words (issue 23, class 6).

The construction is checked as an equivalence: a node named ``NAME`` and redacted renders exactly
as the same node named ``host-1`` (its placeholder) and redacted, in every format, for host names
that are words of the tool's text (severities, ``gpu``, ``PCIe``, ``fix``, a Chinese word),
regular-expression metacharacters, and names that are parts of evidence values.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from doctor import cli
from doctor.findings import Evidence, Finding
from doctor.redact import Redactor, redact_data
from doctor.runner import Result
from tests.helpers import HEALTHY, SICK, facts, run

#: words of the tool's own text, Chinese ones of its zh-CN catalogue, metacharacters, parts of evidence
NAMES = ["high", "critical", "pass", "unknown", "info", "gpu", "GPU", "nvidia", "PCIe", "fix", "link", "node",
         "DOWN", "ACTIVE", "vllm", "mlx5", "enp25s0", "fe00", "0000", "13", "链路", "严重", "a.b*c(d)+[x]$",
         "x16", "gpu-node-doctor",
         # numbers that are NUMA nodes, GPU indexes and counts in the tool's text; a GPU UUID, an
         # interface and words of its sentences and evidence
         "0", "1", "7", "8",
         "docker0", "root", "numa", "the", "medium", "irq", "mtu", "node0", "localhost", "cpu"]


def _named(base: Path, name: str) -> Result:
    return run(facts({"etc/hostname": name + "\n", "proc/sys/kernel/hostname": name + "\n"}, base=base))


def _redacted(result: Result, redactor: Redactor | None = None) -> Result:
    out = Result.from_dict(redact_data(result.to_dict(), redactor or Redactor()))
    out.duration_s, out.generated_at = 0.0, "2026-01-01T00:00:00+00:00"
    out.checks = [{**c, "duration_ms": 0} for c in out.checks]
    return out


def _renders(result: Result) -> dict[str, str]:
    from reports.html import render_html, render_html_view
    from reports.markdown import render_markdown
    from reports.prometheus import render_prometheus
    from reports.text import render_text
    from reports.view import build_view

    return {"text": render_text(result, verbose=True), "json": json.dumps(result.to_dict(), indent=1),
            "md": render_markdown(result), "html": render_html(result), "prom": render_prometheus(result),
            "pdf-html": render_html_view(build_view(result), links=False, style=False)}


#: A name the kubelet fix cannot name a node by (it then builds no fix): compared without that finding
_NODE_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_KUBELET = "numa.kubelet_policy"


def _without_kubelet(result: Result) -> Result:
    result.findings = [f for f in result.findings if f.check != _KUBELET]
    return result


@pytest.fixture(scope="module")
def control() -> dict[bool, dict[str, str]]:
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    return {True: _renders(_redacted(_named(SICK, "host-1"))),
            False: _renders(_without_kubelet(_redacted(_named(SICK, "host-1"))))}


@pytest.mark.parametrize("name", NAMES)
def test_a_redacted_node_reads_as_if_named_by_its_placeholder(name: str, control: dict[bool, dict[str, str]]) -> None:
    plain = _named(SICK, name)
    valid = bool(_NODE_NAME.fullmatch(name))
    red = _redacted(plain)
    renders = _renders(red if valid else _without_kubelet(red))
    for fmt, text in renders.items():
        assert text == control[valid][fmt], f"{fmt}: redacting host {name!r} changed the tool's words"
    data = json.loads(renders["json"])
    assert data["source"]["hostname"] == "host-1" and data["inventory"]["host"]["hostname"] == "host-1"
    assert _redacted(plain).to_dict()["summary"] == plain.to_dict()["summary"]  # no severity lost
    kubectl = [s["argv"] for f in data["findings"] for s in f["fix"]["steps"] if s["argv"][:1] == ["kubectl"]]
    assert all(a[2] == "host-1" for a in kubectl) and (kubectl or not valid)  # the fix names the placeholder


def test_a_word_host_name_is_replaced_where_the_data_says_it_is_the_host() -> None:
    r = Redactor()
    r.learn("high", "host")
    assert r.text("NCCL_COMM_ID=high:29500") == "NCCL_COMM_ID=host-1:29500"
    assert r.text("--host high --port 8000") == "--host host-1 --port 8000"
    assert r.text("MASTER_ADDR=high http://high/v1 root@high") == "MASTER_ADDR=host-1 http://host-1/v1 root@host-1"
    # as a word of data it stays: a state, a path, a sentence
    assert r.text("power level: high; /sys/high/x; high latency") == "power level: high; /sys/high/x; high latency"
    assert r.prose("high latency, --host high, NCCL_COMM_ID=high:29500") == "high latency, --host high, NCCL_COMM_ID=host-1:29500"
    assert r.field("High") == "host-1"


def test_a_name_is_replaced_whole_never_inside_a_longer_name_or_a_tool_word() -> None:
    r = Redactor()
    r.learn("gpu-node-7", "host")
    r.learn("mlx5", "host")  # one part: could be a word of data, so only where it is a host by syntax
    assert (r.prose("peer gpu-node-7 and gpu-node-7-ib0, not gpu-node-70 or xgpu-node-7")
            == "peer host-1 and host-1-ib0, not gpu-node-70 or xgpu-node-7")
    assert r.text("mlx5_0/1 mlx5_core mlx5 --host mlx5") == "mlx5_0/1 mlx5_core mlx5 --host host-2"
    tool = Redactor()
    tool.learn("gpu-node", "host")
    assert tool.text("# Written by gpu-node-doctor on gpu-node") == "# Written by gpu-node-doctor on host-1"


@pytest.mark.parametrize("spelling", ["GPU-e51a1391-08fb-e45b-6956-d837f8aef667", "e51a1391-08fb-e45b-6956-d837f8aef667",
                                      "E51A1391-08FB-E45B-6956-D837F8AEF667", "e51a139108fbe45b6956d837f8aef667",
                                      "{E51A1391-08FB-E45B-6956-D837F8AEF667}", "MIG-e51a1391-08fb-e45b-6956-d837f8aef667"])
def test_a_gpu_uuid_in_every_spelling_gets_one_placeholder(spelling: str) -> None:
    r = Redactor()
    r.learn("GPU-E51A1391-08FB-E45B-6956-D837F8AEF667", "uuid")
    out = r.text(f"uuid {spelling} seen")
    assert "e51a" not in out.lower() and "uuid-1" in out and r.counts["uuid"] == 1


@pytest.mark.parametrize("spelling", ["02:ab:cd:00:11:22", "02:AB:CD:00:11:22", "02-ab-cd-00-11-22", "02ab.cd00.1122",
                                      "02ABCD001122"])
def test_a_mac_in_every_spelling_gets_one_placeholder(spelling: str) -> None:
    r = Redactor()
    r.learn("02:ab:cd:00:11:22", "mac")
    assert r.text(f"hwaddr {spelling} up") == "hwaddr mac-1 up" and r.counts["mac"] == 1
    fresh = Redactor()  # not learned: the separated spellings still go by their shape
    if not re.fullmatch(r"[0-9A-Fa-f]{12}", spelling):
        assert "mac-1" in fresh.text(spelling)


@pytest.mark.parametrize("spelling", ["b8ce:f603:00a1:b2c3", "B8CE:F603:00A1:B2C3", "0xb8cef60300a1b2c3",
                                      "0xB8CEF60300A1B2C3", "b8cef60300a1b2c3"])
def test_an_infiniband_guid_in_every_spelling_gets_one_placeholder(spelling: str) -> None:
    """sysfs writes a node GUID as ``b8ce:f603:00a1:b2c3``, ibstat as ``0xb8cef60300a1b2c3``: the
    GUID learned from one is replaced in the other (the 0x form kept it before)."""
    r = Redactor()
    r.learn("b8ce:f603:00a1:b2c3", "guid")
    assert r.text(f"Node GUID: {spelling} up") == "Node GUID: guid-1 up" and r.counts["guid"] == 1


def test_evidence_of_an_identity_file_is_replaced_whole() -> None:
    result = _named(HEALTHY, "critical")
    result.findings.append(Finding("info", "node", "host name", evidence=(Evidence("etc/hostname", "critical"),),
                                   check="x.y", category="doctor"))
    red = _redacted(result)
    assert red.findings[-1].evidence[0].value == "host-1" and red.findings[-1].title == "host name"
    assert red.findings[-1].severity == "info"


def test_redacted_results_diff_and_fleet_keep_the_tool_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``gnd diff`` and ``gnd fleet`` of results redacted from nodes named ``high`` and ``host-2`` read
    exactly as those of nodes named by their placeholders."""
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    outputs = []
    for first in ("high", "host-1"):
        shared = Redactor()  # one map for the fleet: two hosts never share a placeholder
        paths = []
        for i, (base, name) in enumerate(((SICK, first), (HEALTHY, "host-2"))):
            red = _redacted(_named(base, name), shared)
            path = tmp_path / f"{first}-{i}.json"
            path.write_text(json.dumps(red.to_dict()))
            paths.append(str(path))
        texts = []
        for argv in (["diff", *paths, "--cross-host"], ["diff", *paths, "--cross-host", "--format", "html"],
                     ["fleet", *paths], ["fleet", *paths, "--format", "html"]):
            cli.main(argv)
            out = capsys.readouterr().out.replace(first + "-", "NODE-")
            texts.append(re.sub(r"\(\d+(\.\d+)? s\b", "(T s", out))  # the fleet's run time
        outputs.append(texts)
    assert outputs[0] == outputs[1]
    assert re.search(r"(?i)\bhigh\b", outputs[0][0])  # the high findings are still called high


def test_pdf_text_keeps_the_tool_words() -> None:
    pypdf = pytest.importorskip("pypdf")
    pytest.importorskip("weasyprint")
    import io

    from reports.pdf import render_pdf

    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    pdf = render_pdf(_redacted(_named(SICK, "PCIe")))
    text = "".join(p.extract_text() or "" for p in pypdf.PdfReader(io.BytesIO(pdf)).pages)
    assert "host-1" in text and "PCIe" in text and "gpu-node-doctor" in text.replace("\n", "")
