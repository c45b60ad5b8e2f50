"""Masking a ``bash -c`` script splits it into words as :func:`shlex.split` does, quoted or not."""

from __future__ import annotations

import random
import shlex

from doctor import secrets
from doctor.secrets import MASK, mask_argv


def _split(text: str) -> list[str]:
    return [w for w in secrets._SHELL_WHITESPACE.split(text) if w]


def test_the_unquoted_split_is_shlex_split() -> None:
    rng = random.Random(15)
    alphabet = "ab=-_# \t\r\n\x0b\x0c\u00a0\u2003\x00;|&$(){}*?~é漢"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 24)))
        assert _split(text) == shlex.split(text), repr(text)


def test_secrets_in_a_shell_script_are_masked_with_or_without_quotes() -> None:
    token = "hf_" + "Ab1" * 8
    for script in (f"exec vllm serve m --api-key {token} --port 8000",
                   f"exec vllm serve m --api-key '{token}' --port 8000",
                   f"HF_TOKEN={token} python -m sglang.launch_server",
                   "serve\t--password\thunter2x --port 1"):
        masked = mask_argv(["bash", "-c", script])
        assert masked[:2] == ["bash", "-c"]
        assert token not in masked[2] and "hunter2x" not in masked[2].split("--password", 1)[-1][:12]
        assert MASK in masked[2]
    plain = "exec vllm serve m --max-num-batched-tokens 8192 --port 8000"
    assert mask_argv(["bash", "-c", plain]) == ["bash", "-c", plain]  # nothing to hide: unchanged


def test_a_vertical_tab_or_form_feed_between_option_and_secret_still_masks_it() -> None:
    """No shell splits there, but a reader of the report sees two words: the value is hidden anyway."""
    for sep in ("\x0b", "\x0c", " \x0b "):
        for argv in (["vllm", f"--password{sep}hunter2xyz"], ["bash", "-c", f"serve --api-key{sep}hunter2xyz"]):
            masked = mask_argv(argv)
            assert "hunter2xyz" not in "".join(masked) and MASK in masked[-1], (sep, masked)
    assert mask_argv(["vllm", "--max-num-batched-tokens\x0b8192"]) == ["vllm", "--max-num-batched-tokens\x0b8192"]
