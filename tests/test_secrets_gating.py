"""Masking skips the costly patterns only where they cannot match: same output as running them all."""

from __future__ import annotations

import random

import pytest

from doctor import secrets
from doctor.secrets import MASK, mask_text
from tests.hostile.work import LINEAR_CPU, cpu_growth


def _every_pattern(text: str) -> str:
    """mask_text as it was before the gate on secret words: every pattern on every hinted text."""
    if not text:
        return text
    text = secrets.SECRET_VALUE.sub(MASK, text)
    if "://" in text:
        text = secrets.URL_CREDENTIALS.sub(lambda m: m.group(1) + MASK + "@", text)
    if not secrets._HINT.search(text):
        return text
    text = secrets.QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    text = secrets.AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    text = secrets.BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = secrets.AUTH_VALUE.sub(lambda m: m.group(1) + MASK, text)
    text = secrets.KEY_VALUE.sub(secrets._mask_quoted, text)
    return secrets.OPTION_VALUE.sub(secrets._mask_quoted, text)


PIECES = ("pass", "passed", "bypass", "db_pass", "password", "passwd", "pwd", "auth", "author", "authorization",
          "Authorization", "proxy-authorization", "AUTHORİZATİON", "authorızation", "ſecret", "secret", "token",
          "tokens", "TOKEN", "api-key", "api_key", "Key", "monkey", "credential", "credentials", "bearer", "Bearer",
          "basic", "Basic", "digest", "Digest", "Negotiate", "hf_", "sk-", "x" * 9, "abcDEF123456789",
          "s3cr3tvalue", "=", ":", ": ", " = ", "&", "?", ";", ",", "-", "--", "_", ".", " ", "\t", "\n", '"', "'",
          "{", "}", "[", "]", "://", "@", "/", "user", "https://u:p@host", "value", "0", "ı", "K", "\x0b", "\x0c", "x=y", "a:b", "-x")


def test_the_gate_changes_no_output() -> None:
    rng = random.Random(2026)
    for _ in range(20000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 10)))
        assert mask_text(text) == _every_pattern(text), repr(text)


def test_secrets_are_still_masked_and_prose_left_alone() -> None:
    assert mask_text("Authorization: Bearer abcdefgh12345") == f"Authorization: Bearer {MASK}"
    assert mask_text("curl -H 'authorization: Basic dXNlcjpwYXNz'") == f"curl -H 'authorization: Basic {MASK}'"
    assert mask_text("x?api_key=s3cr3t&b=1") == f"x?api_key={MASK}&b=1"
    assert mask_text("--db-password hunter2") == f"--db-password {MASK}"
    assert mask_text("ſecret: value") == f"ſecret: {MASK}"  # case-insensitive as the patterns are
    for prose in ("pass", "digest", "IOMMU translating GPU/NIC DMA instead of passthrough", "checks passed: 12"):
        assert mask_text(prose) == prose


def _every_pattern_argv(argv: list[str]) -> list[str]:
    """mask_argv as it was before the gate: every pattern on every argument."""
    import shlex

    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            opt = arg.partition("=")[0]
            if secrets.SECRET_OPTION.match(opt):
                out.append(f"{opt}={MASK}")
                continue
        elif secrets.SECRET_OPTION.match(arg):
            out.append(arg)
            hide_next = True
            continue
        assignment = secrets.ASSIGNMENT.match(arg)
        if assignment and (secrets._KW_RE.search(assignment.group(1))
                           or (assignment.group(1).isupper() and secrets.SECRET_NAME.search(assignment.group(1)))):
            out.append(f"{assignment.group(1)}={MASK}")
            continue
        if any(ch.isspace() for ch in arg):
            text = _every_pattern(arg)
            try:
                words = shlex.split(text)
            except ValueError:
                out.append(text)
                continue
            masked = _every_pattern_argv(words) if len(words) > 1 else words
            out.append(text if masked == words else shlex.join(masked))
        else:
            out.append(_every_pattern(arg))
    return out


ARG_PIECES = (*PIECES, "to'ken'", 'to"k"en', "to\\ken", "se\\\"cret", "--api-key", "--api-key=", "--auth-required",
              "HF_TOKEN=", "MY_SESSION=", "Cookie", "bash", "-c", "vllm", "serve", "to\\'\\'ken\\ x", "'", '"', "\\",
              "AKIA" + "A" * 16, "gh", "ghp_" + "a" * 20, "eyJ", "xoxb-", "glpat-", "K", "ſ", "x=1", "{\"a\": 1}")


def test_the_argv_gate_changes_no_output() -> None:
    rng = random.Random(15)
    for _ in range(6000):
        argv = ["".join(rng.choice(ARG_PIECES) for _ in range(rng.randrange(1, 6))) for _ in range(rng.randrange(1, 5))]
        assert secrets.mask_argv(argv) == _every_pattern_argv(argv), repr(argv)


def test_words_joined_by_a_shell_split_are_still_masked() -> None:
    """A secret word cut by quotes or backslashes in a ``bash -c`` script is one word to the shell."""
    for script in ("x to'ken'=abc", 'x "sec"ret=abc', "x pass\\word=abc", "x --api-\\key abc", "a hf'_'ABCDEFGHijklmnop12",
                   "x to\\'\\'ken=1\\ x y"):
        argv = ["bash", "-c", script]
        assert secrets.mask_argv(argv) == _every_pattern_argv(argv), script
        assert secrets.mask_argv(argv) != argv, script
    rng = random.Random(16)
    pieces = ("to", "ken", "'", '"', "\\", " ", "=", "abc", "--api", "-key", "pass", "word", "hf", "_", "ABCDEFGHijklmnop12")
    for _ in range(6000):
        argv = ["bash", "-c", "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))]
        assert secrets.mask_argv(argv) == _every_pattern_argv(argv), repr(argv)


def _every_pattern_deploy(raw: bytes) -> bytes:
    """sanitize_deploy as it was before the literal gates: every line pattern on every line."""
    text = raw.decode("utf-8", "replace")
    lines = []
    hide_value = hide_item = False
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        end = line[len(body):]
        if hide_value and (m := secrets._ENV_VALUE_LINE.match(body)):
            body = m.group(1) + MASK + m.group(3)
            hide_value = False
        elif hide_item and (m := secrets._LIST_ITEM.match(body)):
            body = m.group(1) + MASK + m.group(3)
            hide_item = False
        else:
            name = secrets._ENV_NAME_LINE.match(body)
            if name:
                hide_value = bool(secrets.SECRET_NAME.search(name.group(1)))
            elif body.strip():
                hide_value = hide_value and body.lstrip().startswith(("valueFrom", "#"))
            item = secrets._LIST_ITEM.match(body)
            hide_item = bool(item and secrets.SECRET_OPTION.match(item.group(2).strip("\"'")))
            body = secrets._UNIT_ENV.sub(secrets._unit_environment, body)
            body = secrets._ENV_FLOW.sub(lambda m: m.group(1) + MASK if secrets.SECRET_NAME.search(m.group(2))
                                         else m.group(0), body)
            body = _every_pattern(body)
        lines.append(body + end)
    return "".join(lines).encode()


def test_deployment_files_are_masked_as_with_every_pattern() -> None:
    pieces = ("- name: HF_TOKEN", "- name: NCCL_X", "  value: s3cret", "value: x", "valueFrom:", "# c", "- --api-key",
              "- sk-abcdefghijklmnop", "- --port", "Environment=HF_TOKEN=abc 'A=1'", "Environment=\"PASS=x y\"",
              "{name: API_KEY, value: abc}", "name: X", "ExecStart=/usr/bin/vllm serve --api-key k1", "-", "\n",
              "\r\n", " ", "EnvironmentFile=/etc/x", "ſecret: v", "key=value", "\x0b", "\u2028", "- ",
              "-\t--api-key", "name:HF_TOKEN", " Environment =HF_TOKEN=1", "{name:TOKEN,value:abc}", "-\thunter2")
    rng = random.Random(21)
    for _ in range(4000):
        raw = "".join(rng.choice(pieces) + rng.choice(("\n", "", " ")) for _ in range(rng.randrange(1, 10))).encode()
        assert secrets.sanitize_deploy(raw) == _every_pattern_deploy(raw), raw


@pytest.mark.parametrize("shape", [("-", "token_"), ("-", "a-token", "=x"), ("x ", "pass.pwd-auth:")])
def test_masking_hostile_text_does_not_stall(shape: tuple[str, ...]) -> None:
    """Linear in the text: the CPU time for 4x the text is a ratio, never a time bound (tests/hostile/work.py)."""
    head, unit, tail = (*shape, "")[:3]

    def mask(n: int) -> None:
        text = head + unit * n + tail
        secrets.mask_argv([text, text])
        mask_text(text)

    ratio = cpu_growth(mask, 12_500)
    assert ratio < LINEAR_CPU, f"{ratio:.1f}x the CPU time for 4x the text"
