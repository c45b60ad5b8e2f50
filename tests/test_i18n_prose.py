"""The zh-CN edition reads as Chinese: English prose outside commands and evidence stays under 10 % of words.

Counted over the rendered text output and HTML report of both fixtures. Commands (fix, rollback, code
blocks), evidence lines, ids, paths, values with digits or punctuation and technical names written the
same way in Chinese (GPU, NVLink, PCIe, vLLM: any word with a capital after its first letter) are left
out; every other run of Latin letters is an English word, and every two CJK characters count as one word.
"""

from __future__ import annotations

import html
import json
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
_NAMES = frozenset(["sysfs", "lspci", "ethtool", "sysctl", "irqbalance", "systemd", "kubelet", "nvidia", "smi", "taskset", "numactl", "tuned", "grub", "dmesg", "iperf", "prlimit", "netplan", "eager", "batch", "rank", "worker", "prefill", "decode", "ring", "tree", "token", "snapshot", "sosreport", "baseline", "rail", "incast", "bootstrap", "socket", "trust", "pending", "replay", "recovery", "hinting", "fault", "cordon", "governor", "powersave", "performance", "static", "down", "up", "legacy", "profiler", "vllm", "pid", "ms", "graph", "graphs", "python", "dell",
                    "gnd", "xid", "sudo", "root", "enter", "tab", "esc", "ctrl", "markdown"])


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


#: Renders the TUI headless in zh-CN (the key bindings are translated when the app module is imported, so in
#: a process of its own) and prints the text of the findings, detail, topology and help screens
_TUI_SCREENS = r"""
import asyncio, html, json, re, sys
from doctor import i18n
i18n.set_language("zh-CN")
from doctor.pipeline import analyse
from doctor.tui.app import DoctorApp

result = analyse(sys.argv[1])

def text_of(svg):
    rows = {}
    for m in re.finditer(r'<text[^>]*y="([\d.]+)"[^>]*>(.*?)</text>', svg, re.S):
        rows.setdefault(float(m.group(1)), []).append(html.unescape(re.sub("<[^>]+>", "", m.group(2))))
    return "\n".join("".join(v) for _k, v in sorted(rows.items())).replace("\xa0", " ")

async def main():
    app = DoctorApp(lambda: result)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        print(text_of(app.export_screenshot()))
        for keys in (("enter",), ("escape", "t"), ("escape", "question_mark")):
            for key in keys:
                await pilot.press(key)
            await pilot.pause()
            print(text_of(app.export_screenshot()))
    names = {str(d.get("name")) for d in result.inventory.get("topology") or [] if d.get("name")}
    print("\0" + json.dumps(sorted(names, key=len, reverse=True)))

asyncio.run(main())
"""
#: TUI lines that hold commands or evidence: a detail pane shows them indented under 立即修复/回滚/证据
_TUI_VERBATIM = re.compile(r"^\s*(\$ |\S+/\S+: )")


@pytest.mark.parametrize("tree", [SICK, HEALTHY], ids=["sick", "healthy"])
def test_chinese_tui_screens_are_chinese(tree) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("textual")
    if not tree.exists():
        pytest.skip("fixture not generated")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _TUI_SCREENS, str(tree)], capture_output=True, text=True,
                          timeout=120, check=True)
    screens, _, names = done.stdout.partition("\0")
    for name in json.loads(names):  # device names as the host reports them (lspci), not prose
        screens = screens.replace(name, " ")
    panes = [part for line in screens.splitlines() for part in line.split("│")]
    prose = "\n".join(p for p in panes if not _TUI_VERBATIM.match(p))
    share, words = _english_share(prose)
    assert share <= LIMIT, f"{share:.0%} English prose: {' '.join(words[:80])}"
