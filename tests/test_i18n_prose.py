"""The zh-CN edition reads as Chinese: English prose outside commands and evidence stays under 10 % of words.

Counted over the rendered text output and HTML report of both fixtures. Commands (fix, rollback, code
blocks), evidence lines, ids, paths, values with digits or punctuation and technical names written the
same way in Chinese (GPU, NVLink, PCIe, vLLM: any word with a capital after its first letter) are left
out; every other run of Latin letters is an English word, and every two CJK characters count as one word.
"""

from __future__ import annotations

import html
import re

import pytest

from doctor import i18n
from doctor.cli import main
from tests.helpers import SICK

HEALTHY = SICK.parent / "hgx-h100-healthy"
LIMIT = 0.10
#: text-output lines that hold commands or evidence (their labels in Chinese)
_VERBATIM_LINE = re.compile(r"^\s*(修复：|回滚：|持久化：|证据：|相关：|\$ |#)")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"(?<![\w./:=\-@<>$])[A-Za-z][a-z]+(?![\w./:=\-@<>(])")
#: lower-case names of programs, files and kernel knobs that Chinese text writes as they are
_NAMES = frozenset(["sysfs", "lspci", "ethtool", "sysctl", "irqbalance", "systemd", "kubelet", "nvidia", "smi", "taskset", "numactl", "tuned", "grub", "dmesg", "iperf", "prlimit", "netplan", "eager", "batch", "rank", "worker", "prefill", "decode", "ring", "tree", "token", "snapshot", "sosreport", "baseline", "rail", "incast", "bootstrap", "socket", "trust", "pending", "replay", "recovery", "hinting", "fault", "cordon", "busy", "idle", "governor", "powersave", "performance", "static", "none", "unset", "auto", "active", "down", "up", "unknown", "legacy", "profiler", "vllm", "pid", "ms", "graph", "graphs", "python", "dell"])


def _english_share(text: str) -> tuple[float, list[str]]:
    words = [w for w in _WORD.findall(text) if w.lower() not in _NAMES and not w.isupper()]
    cjk = len(_CJK.findall(text)) / 2
    total = len(words) + cjk
    return (len(words) / total if total else 0.0), words


def _text_prose(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not _VERBATIM_LINE.match(line))


def _html_prose(doc: str) -> str:
    doc = re.sub(r"(?is)<(script|style|pre|code|kbd|samp)\b.*?</\1>", " ", doc)
    doc = re.sub(r'(?is)<([a-z]+)[^>]*class="[^"]*\b(evidence|ev|cmd|command|verbatim|mono)\b[^"]*"[^>]*>.*?</\1>', " ", doc)
    return html.unescape(re.sub(r"(?s)<[^>]+>", " ", doc))


@pytest.fixture(autouse=True)
def _english_after():  # type: ignore[no-untyped-def]
    yield
    i18n.set_language("en")


@pytest.mark.parametrize("tree", [SICK, HEALTHY], ids=["sick", "healthy"])
def test_chinese_text_output_is_chinese(tree, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    if not tree.exists():
        pytest.skip("fixture not generated")
    main(["check", str(tree), "--lang", "zh-CN", "--verbose"])
    share, words = _english_share(_text_prose(capsys.readouterr().out))
    assert share <= LIMIT, f"{share:.0%} English prose: {' '.join(words[:80])}"


@pytest.mark.parametrize("tree", [SICK, HEALTHY], ids=["sick", "healthy"])
def test_chinese_html_report_is_chinese(tree, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("jinja2")
    if not tree.exists():
        pytest.skip("fixture not generated")
    out = tmp_path / "r.html"
    main(["report", str(tree), "--lang", "zh-CN", "-o", str(out)])
    share, words = _english_share(_html_prose(out.read_text(encoding="utf-8")))
    assert share <= LIMIT, f"{share:.0%} English prose: {' '.join(words[:80])}"
