"""Leak scan: every secret shape planted in a node never reaches any output or a collected snapshot.

Shapes (issue 11 item 2): URL credentials without a user, passwords holding ``/``, ``?token=`` and
``?password=`` query values, ``Authorization: Bearer``, JSON values under password/secret/token keys
(vLLM ``--kv-transfer-config``), ``bash -c "..."`` scripts, unit-file values in single quotes,
``*_PASSWD``/``*_PASS`` names, Kubernetes ``name:``/``value:`` env pairs and ``args: ["--api-key", "x"]``.
Every planted value is random and built at run time, so no scanner flags this file.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from doctor import cli
from doctor.secrets import MASK
from tests.helpers import SICK
from tests.hostile.work import LINEAR_CPU, cpu_growth

PID, UNIT = 4242, "etc/systemd/system/vllm.service"
SHAPES = ("redis_nouser", "slash_pw", "query_token", "query_password", "bearer", "kv_json", "bash_c_key",
          "bash_c_env", "unit_single", "unit_passwd", "unit_pass", "k8s_env", "k8s_flow_args", "k8s_block_args",
          "compose_args", "compose_passwd", "kernel_url", "hf_shaped")
S: dict[str, str] = {k: f"plant{k.replace('_', '')}{secrets.token_hex(6)}" for k in SHAPES}
S["hf_shaped"] = "hf_" + secrets.token_hex(12)


def _nul(*words: str) -> bytes:
    return b"".join(w.encode() + b"\0" for w in words)


def _manifest() -> str:
    return f"""apiVersion: v1
kind: Pod
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai
    args: ["--model", "m", "--enforce-eager", "--api-key", "{S['k8s_flow_args']}"]
    command:
    - vllm
    - --hf-token
    - {S['k8s_block_args']}
    env:
    - name: HF_TOKEN
      value: "{S['k8s_env']}"
    livenessProbe:
      httpGet:
        path: /health?token={S['query_token']}
        httpHeaders:
        - name: Authorization
          value: Bearer {S['bearer']}
"""


def _compose() -> str:
    return f"""services:
  vllm:
    image: vllm/vllm-openai
    command: ["--model", "m", "--enforce-eager", "--api-key", "{S['compose_args']}"]
    environment:
      - REDIS_URL=redis://:{S['redis_nouser']}@redis:6379
      - ADMIN_PASSWD={S['compose_passwd']}
      - HF_TOKEN={S['hf_shaped']}
"""


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sick fixture with every secret shape planted in processes, units, compose files and manifests."""
    if not SICK.exists():
        pytest.skip("sick fixture not generated")
    dest = tmp_path_factory.mktemp("leaky") / "node"
    shutil.copytree(SICK, dest, symlinks=True)
    proc = dest / f"proc/{PID}"
    kv = json.dumps({"kv_connector": "MooncakeConnector",
                     "kv_connector_extra_config": {"password": S["kv_json"], "secret": S["kv_json"]}})
    (proc / "cmdline").write_bytes(proc.joinpath("cmdline").read_bytes() + _nul(
        "--kv-transfer-config", kv, "--redis-url", f"redis://:{S['redis_nouser']}@cache:6379",
        "--db", f"postgresql://app:pa/{S['slash_pw']}@db:5432/x"))
    (proc / "environ").write_bytes(proc.joinpath("environ").read_bytes() + _nul(
        f"VLLM_ENDPOINT=https://api.internal/v1?token={S['query_token']}&password={S['query_password']}",
        f"VLLM_HEADER=Authorization: Bearer {S['bearer']}",
        f"VLLM_KV_CONFIG={kv}", f"VLLM_REDIS=redis://:{S['redis_nouser']}@cache:6379"))
    shell = dest / "proc/7001"
    shell.mkdir()
    (shell / "cmdline").write_bytes(_nul("/bin/bash", "-c", f"exec vllm serve m --enforce-eager --api-key "
                                         f"{S['bash_c_key']} && export DB_PASS={S['bash_c_env']}"))
    (shell / "status").write_text("Name:\tbash\nPid:\t7001\nPPid:\t1\nCpus_allowed_list:\t0-95\n")
    (shell / "environ").write_bytes(_nul("CUDA_VISIBLE_DEVICES=0"))
    unit = (dest / UNIT).read_text().replace("[Service]\n", (
        "[Service]\n"
        f"Environment='HF_TOKEN={S['unit_single']} extra'\n"
        f"Environment=DB_PASSWD={S['unit_passwd']}\n"
        f"Environment=\"REDIS_PASS={S['unit_pass']}\"\n"
        f"ExecStartPre=/bin/bash -c \"curl -H 'Authorization: Bearer {S['bearer']}' https://h/x\"\n"))
    (dest / UNIT).write_text(unit)
    (dest / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    (dest / "etc/kubernetes/manifests/vllm.yaml").write_text(_manifest())
    (dest / "etc/compose").mkdir(parents=True, exist_ok=True)
    (dest / "etc/compose/vllm.yaml").write_text(_compose())
    cmdline = (dest / "proc/cmdline").read_text().strip()
    (dest / "proc/cmdline").write_text(f"{cmdline} inst.ks=http://ks:{S['kernel_url']}@boot/ks.cfg\n")
    return dest


@pytest.fixture(scope="module")
def deploy(node: Path) -> list[str]:
    """The same manifest and compose file given with --deploy (outside the source)."""
    extra = node.parent / "extra"
    extra.mkdir(exist_ok=True)
    (extra / "pod.yaml").write_text(_manifest())
    (extra / "compose.yaml").write_text(_compose())
    return ["--deploy", str(extra / "pod.yaml"), "--deploy", str(extra / "compose.yaml")]


def _assert_clean(blob: str | bytes, where: str) -> None:
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    leaked = [name for name, value in S.items() if value in text]
    assert not leaked, f"{', '.join(leaked)} leaked in {where}"


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(args)
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return out + err


def _masked(out: str) -> bool:
    """Whether ``out`` shows the placeholder (as text, or escaped in HTML)."""
    return MASK in out or "&lt;redacted&gt;" in out


@pytest.mark.parametrize("fmt", ["json", "text", "prometheus"])
def test_check_outputs(node: Path, deploy: list[str], fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["check", str(node), *deploy, "--format", fmt, "--verbose"] if fmt == "text"
               else ["check", str(node), *deploy, "--format", fmt], capsys)
    if fmt == "json":
        assert f"inst.ks={MASK}" in out  # the planted kernel parameter is shown, its value masked
    _assert_clean(out, f"check --format {fmt}")


@pytest.mark.parametrize("suffix", ["md", "html", "json"])
def test_reports_from_the_node(node: Path, deploy: list[str], suffix: str, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"r.{suffix}"
    _run(["report", str(node), *deploy, "-o", str(out)], capsys)
    _assert_clean(out.read_bytes(), f"report .{suffix}")


@pytest.fixture(scope="module")
def hostile(node: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved result (an older gnd, or crafted) that holds every planted shape in its findings."""
    tmp = tmp_path_factory.mktemp("hostile")
    saved = tmp / "saved.json"
    cli.main(["check", str(node), "--format", "json", "-o", str(saved)])
    data: dict[str, Any] = json.loads(saved.read_text())
    texts = [
        f"redis://:{S['redis_nouser']}@cache:6379", f"postgresql://app:pa/{S['slash_pw']}@db/x",
        f"https://h/v1?token={S['query_token']}&password={S['query_password']}",
        f"Authorization: Bearer {S['bearer']}", json.dumps({"password": S["kv_json"]}),
        f"bash -c 'vllm serve --api-key {S['bash_c_key']} && DB_PASS={S['bash_c_env']} x'",
        f"Environment='HF_TOKEN={S['unit_single']}'", f"DB_PASSWD={S['unit_passwd']}",
        f"REDIS_PASS={S['unit_pass']}", f'args: ["--api-key", "{S["k8s_flow_args"]}"]',
        f"inst.ks=http://ks:{S['kernel_url']}@boot/ks.cfg", f"HF_TOKEN: {S['hf_shaped']}",
    ]
    for i, f in enumerate(data["findings"][:len(texts)]):
        f["title"] = f"{f['title']} {texts[i]}"
        f["detail"] = texts[i]
        f["evidence"] = [*f["evidence"], {"source": texts[i], "value": texts[i]}]
        f["fix"]["runtime"] = [*f["fix"]["runtime"], f"echo {texts[i]}"]
    data["source"]["path"] = texts[0]
    out = tmp / "hostile.json"
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("suffix", ["md", "html", "json"])
def test_reports_from_a_hostile_result(hostile: Path, suffix: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"r.{suffix}"
    _run(["report", "--from-json", str(hostile), "-o", str(out)], capsys)
    body = out.read_text()
    assert _masked(body)  # the planted fields are rendered, masked
    _assert_clean(body, f"report --from-json .{suffix}")


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_diff(node: Path, hostile: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["diff", str(node), str(hostile), "--format", fmt, "-v"], capsys)
    assert _masked(out)
    _assert_clean(out, f"diff --format {fmt}")


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_fleet(node: Path, hostile: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(["fleet", str(hostile), str(node), "-j", "1", "-q", "--format", fmt], capsys)
    assert _masked(out)
    _assert_clean(out, f"fleet --format {fmt}")


@pytest.mark.parametrize("redact", [False, True])
def test_collected_tarball(node: Path, tmp_path: Path, redact: bool, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "snap.tar.gz"
    extra = ["--redact", "--redact-map", str(tmp_path / "map.json")] if redact else []
    assert cli.main(["collect", "--root", str(node), "-o", str(out), *extra]) == 0
    capsys.readouterr()
    with tarfile.open(out) as tf:
        names = {m.name for m in tf.getmembers()}
        assert {f"proc/{PID}/cmdline", "proc/7001/cmdline", UNIT, "etc/kubernetes/manifests/vllm.yaml",
                "etc/compose/vllm.yaml", "proc/cmdline"} <= names
        for member in tf.getmembers():
            if member.isfile():
                data = tf.extractfile(member)
                assert data is not None
                _assert_clean(data.read(), f"tarball member {member.name}")
    # the snapshot still shows what the checks need, and reads like the node
    assert cli.main(["check", str(out), "--format", "json", "--only", "runtime"]) == 1
    _assert_clean(capsys.readouterr().out, "check of the collected snapshot")


#: hostile lines as (head, repeated unit, tail); the unit repeats ``count`` times at the largest size
HOSTILE_LINES = {"name=": ("", "a", "=", 200_000), "a-": ("", "a-", "", 100_000), "--a": ("", "--a", "", 70_000),
                 "token_": ("", "token_", "", 35_000), "url": ("", "://a:", "", 40_000),
                 "spaces": ("- a", " ", "b", 200_000), "bearer": ("", "Bearer ", "", 30_000),
                 "x_token=": ("", "x_token=", "", 25_000), "colons": ("", "a:", "g", 100_000)}


@pytest.mark.parametrize("name", HOSTILE_LINES)
def test_masking_a_hostile_line_takes_linear_time(name: str) -> None:
    from doctor.secrets import mask_argv, sanitize_deploy

    head, unit, tail, count = HOSTILE_LINES[name]

    def mask(n: int) -> None:
        line = head + unit * n + tail
        sanitize_deploy(line.encode())
        mask_argv([line, "--api-key", line])

    # the CPU time at an eighth and at half of the count, a ratio (tests/hostile/work.py)
    ratio = cpu_growth(mask, count // 8)
    assert ratio < LINEAR_CPU, f"{ratio:.1f}x the CPU time for 4x the line"


@pytest.mark.parametrize("text", [
    "2-3x per-token latency at small batch", "Token throughput dropped", "--max-num-batched-tokens 8192",
    "--tokenizer meta-llama/Llama-3.1-8B", '"pass": 4', "iommu=pt passthrough bypass=1", "tokens_per_second=5",
    "NCCL_IB_DISABLE=1", '{"kv_connector": "MooncakeConnector"}', "https://huggingface.co/meta-llama/x",
    "sysctl net.core.rmem_max=268435456", "keyfile: /etc/ssl/node.pem", "author: someone",
])
def test_lookalikes_are_not_masked(text: str) -> None:
    from doctor.secrets import mask_argv, mask_text

    assert mask_text(text) == text
    assert mask_argv(text.split()) == text.split()
