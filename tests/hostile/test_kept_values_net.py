"""The second net over kept values: a value under a name a check judges is kept by design (the allowlist's
first net lets it through), so the token patterns of :mod:`doctor.secrets` must run over it. Every corpus
shape with a documented format (a prefix, a URL, a parameter that says what it is), planted as the value of
a judged variable, option or kernel parameter, or in a deployment-file line a fix rewrites, never survives.
Values with no format of their own (an AWS secret key, 32 hex digits, a random or base64 string, a
passphrase) cannot be told from a setting and survive there by design."""

from __future__ import annotations

import pytest

from doctor.allowlist import env_value, keep_argv, keep_cmdline, keep_deploy
from tests.hostile.secret_corpus import SHAPES, encodings

#: shapes with no format of their own: kept under a judged name by design
UNFORMATTED = frozenset({"aws_secret", "azure_key", "random", "random_lower", "base64", "urlenc", "passphrase",
                         "lower_word"})
FORMATTED = sorted(set(SHAPES) - UNFORMATTED)


def _places(value: str) -> dict[str, str]:
    """Where a check keeps a value: what each place gives for ``value``."""
    return {
        "judged variable": env_value("NCCL_SOCKET_IFNAME", value),
        "judged option": " ".join(keep_argv(["vllm", "serve", "--kv-transfer-config", value])),
        "judged option=": " ".join(keep_argv(["vllm", "serve", f"--compilation-config={value}"])),
        "judged kernel parameter": keep_cmdline(f"ro isolcpus={value}"),
        # a line holding an option a fix removes is kept whole (facts a fix is built from, a server's config)
        "rewritten compose line": keep_deploy(f'    command: ["--enforce-eager", "--served-model-name", "{value}"]\n',
                                              "/etc/compose/vllm.yaml"),
        "rewritten script line": keep_deploy(f"vllm serve --enforce-eager --kv-transfer-config {value}\n",
                                             "/srv/run.sh"),
        "rewritten config line": keep_deploy(f"args: --enforce-eager --model {value}\n", "/etc/vllm/config.yaml"),
    }


@pytest.mark.parametrize("shape", FORMATTED)
def test_a_formatted_secret_under_a_judged_name_is_masked_by_the_second_net(shape: str) -> None:
    for _ in range(3):  # fresh random values
        value = SHAPES[shape]()
        leaked = {where: out for where, out in _places(value).items() if any(f in out for f in encodings(value))}
        assert not leaked, (shape, value, leaked)


def test_a_judged_value_that_is_no_secret_is_kept() -> None:
    """The net is no blanket: settings a check reads stay readable."""
    places = _places("enp155s0np0")
    assert places["judged variable"] == "enp155s0np0"
    assert "enp155s0np0" in places["judged option"] and "enp155s0np0" in places["rewritten script line"]
    assert keep_cmdline("ro isolcpus=2-31") == "ro isolcpus=2-31"


@pytest.mark.parametrize("shape", ["aws_secret", "base64", "random", "azure_key"])
def test_a_token_that_starts_like_a_path_is_no_path_in_an_argument(shape: str) -> None:
    """Paths in an argv are kept wherever they stand (``python3 /usr/bin/vllm serve``); a value that only
    starts with ``/`` (an AWS secret key or a base64 value does one time in 64) is a value, not a path:
    ``redis-cli auth /Ab3...`` keeps no part of it. Each shape is tried 200 times, starting with ``/``."""
    for _ in range(200):
        value = "/" + SHAPES[shape]()
        shown = " ".join(keep_argv(["redis-cli", "auth", value, "--db", "/srv/x", value]))
        assert not any(form in shown for form in encodings(value)), shown


def test_paths_as_people_name_them_stay_in_an_argument() -> None:
    paths = ["/usr/bin/vllm", "./run.py", "/models/Llama-3.1-70B-Instruct", "/models/Mixtral-8x7B-Instruct-v0.1",
             "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.535.104.05", "/models/Qwen2.5-72B-Instruct-AWQ",
             "/workspace/TensorRT-LLM/examples/run.py", "/opt/MyCompanyInferenceServer/bin/server",
             "/usr/local/cuda-12.4/bin/nvcc", "/models/gpt-oss-120b", "/sys/class/infiniband/mlx5_0"]
    for path in paths:
        assert keep_argv(["redis-cli", "auth", path])[-1] == path
