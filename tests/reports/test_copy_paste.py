"""Commands survive copy and paste: every fix and rollback command of every finding, read back from the PDF's
text (``pdftotext``) and from the HTML's command blocks (their ``textContent``, what a browser copies), with
the lines joined at the visible `` \\`` continuation, splits through ``shlex`` into the words of the command
in the result; on paper each command line, and every other line, stays inside the page's text area.

Both fixtures in both languages, a node whose host data is hostile, and a finding made to stress the layout:
quoted values with spaces, a word longer than a line, wide (CJK) characters, a fix longer than a page.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from doctor import i18n
from doctor.findings import Finding, Fix, FixStep, Impact, rank
from doctor.result_io import to_result
from doctor.runner import Result

PDFTOTEXT = shutil.which("pdftotext")
needs_pdftotext = pytest.mark.skipif(PDFTOTEXT is None,
                                     reason="pdftotext not installed (Debian/Ubuntu: apt-get install poppler-utils)")
#: the print stylesheet's left and right page margin (reports/templates/report.css: @page margin 12mm)
MARGIN_PT = 12 / 25.4 * 72
XHTML = "{http://www.w3.org/1999/xhtml}"
DATA = ["sick_data", "healthy_data", "hostile_data", "stress_data"]


def stress_finding() -> Finding:
    """A finding whose commands a layout could break: long quoted values with spaces, one word longer than any
    line, wide characters, and more command lines than fit on a page."""
    sysctls = "".join(f"net.ipv4.tcp_rmem_{i} = 4096 131072 134217728\n" for i in range(6))
    wide = "/srv/模型仓库/推理服务配置/" + "节点" * 30 + ".conf"
    steps = [
        FixStep("runtime", heredoc=("/etc/sysctl.d/90-gnd-stress.conf", sysctls), unattended=True),
        FixStep("runtime", argv=("sysctl", "-w", "net.ipv4.tcp_wmem=4096 16384 134217728 " * 3)),
        FixStep("runtime", argv=("setpci", "-s", "0000:9c:00.0", "x" * 160)),
        FixStep("runtime", argv=("install", "-D", "-m", "0644", wide, wide.replace(".conf", ".bak"))),
        FixStep("runtime", heredoc=(wide, "[服务]\nEnvironment=\"LANG=zh_CN.UTF-8 LC_ALL=zh_CN.UTF-8\"\n")),
        *(FixStep("persistent", argv=("ethtool", "-G", f"enp{i}s0np0", "rx", "8192", "tx", "8192", "--",
                                      "comment with spaces", f"value-{i}" * 8)) for i in range(40)),
        FixStep("rollback", argv=("rm", "-f", "/etc/sysctl.d/90-gnd-stress.conf", wide)),
    ]
    return Finding(severity="high", subject="stress", title="commands that stress the layout",
                   impact=Impact(50, "none"), fix=Fix(steps=tuple(steps)), check="test.stress", category="test")


@pytest.fixture(scope="module")
def stress_data(sick_data: dict[str, Any]) -> dict[str, Any]:
    result = Result.from_dict(sick_data)
    result.findings = rank([*result.findings, stress_finding()])
    return result.to_dict()


def commands(data: dict[str, Any]) -> list[str]:
    """Every command a report shows, in its order: each shown finding's fix, persistent and rollback
    commands (a fix step that is prose for a human, ``manual``, is no command)."""
    out: list[str] = []
    for f in sorted(data["findings"], key=lambda f: int(f["rank"])):
        if f["severity"] in ("pass", "unknown"):
            continue
        fix = f.get("fix") or {}
        manual = {s["text"] for s in fix.get("steps") or [] if s.get("kind") == "manual"} if fix.get("builder") else set()
        out += [t for phase in ("runtime", "persistent", "rollback") for t in fix.get(phase) or [] if t not in manual]
    return out


def joined(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Lines (text, right edge) with each line ending in `` \\`` joined to the next, as the shell reads them;
    a joined line's right edge is the widest of its parts."""
    out: list[tuple[str, float]] = []
    held: tuple[str, float] | None = None
    for text, right in lines:
        if held is not None:
            text, right = held[0] + " " + text.lstrip(), max(held[1], right)
            held = None
        if text.endswith(" \\"):
            held = (text[:-2], right)
        else:
            out.append((text, right))
    if held is not None:
        out.append(held)
    return out


def words(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:  # an open quote: a command cut inside one
        return None


def read_back(expected: list[str], lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """For each expected command in turn, the next line that splits into its words; AssertionError naming the
    first command that no line after the previous one reads back as."""
    found: list[tuple[str, float]] = []
    split = [(words(text), text, right) for text, right in lines]
    at = 0
    for command in expected:
        want = shlex.split(command)
        for i in range(at, len(split)):
            if split[i][0] == want:
                found.append(split[i][1:])
                at = i + 1
                break
        else:
            raise AssertionError(f"command {len(found) + 1} of {len(expected)} does not read back: {command!r}")
    return found


def pdf_lines(pdf: bytes, tmp_path: Path) -> tuple[list[tuple[str, float]], float]:
    """``pdftotext -bbox-layout``'s lines of ``pdf`` (their words, and how far the line reaches past the
    page's text area, in pt: negative inside it)."""
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf)
    assert PDFTOTEXT is not None
    xml = subprocess.run([PDFTOTEXT, "-enc", "UTF-8", "-bbox-layout", str(path), "-"], capture_output=True,
                         check=True, timeout=120).stdout
    lines: list[tuple[str, float]] = []
    for page in ET.fromstring(xml).iter(XHTML + "page"):
        edge = float(page.get("width") or 0) - MARGIN_PT
        for line in page.iter(XHTML + "line"):
            text = " ".join(w.text or "" for w in line.iter(XHTML + "word"))
            lines.append((text, float(line.get("xMax") or 0) - edge))
    return lines, 0.5


@needs_pdftotext
@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("name", DATA)
def test_every_command_reads_back_from_the_pdf(name: str, lang: str, request: pytest.FixtureRequest,
                                                tmp_path: Path) -> None:
    pytest.importorskip("weasyprint")
    from reports.pdf import render_pdf

    data = request.getfixturevalue(name)
    with i18n.use(lang):
        pdf = render_pdf(to_result(data), attachments=())
    lines, slack = pdf_lines(pdf, tmp_path)
    expected = commands(data)
    found = read_back(expected, joined(lines))
    assert len(found) == len(expected)
    outside = [(text, right) for text, right in found if right > slack]
    assert not outside, f"command lines reach past the page's text area (pt): {outside[:3]}"
    beyond = [(text, right) for text, right in lines if right > slack]
    assert not beyond, f"text reaches past the page's text area (pt): {beyond[:3]}"  # titles, evidence, notes too
    if name == "sick_data":
        assert len(expected) > 100  # the fixture's fixes, all of them checked


class _Commands(HTMLParser):
    """The ``textContent`` of every ``<pre class="cmd">``: its text with entities decoded, tags dropped."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._depth:
            self._depth += 1
        elif tag == "pre" and "cmd" in (dict(attrs).get("class") or "").split():
            self._depth = 1
            self.blocks.append("")

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.blocks[-1] += data


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("name", DATA)
def test_every_html_command_block_reads_back_as_its_commands(name: str, lang: str,
                                                            request: pytest.FixtureRequest) -> None:
    """Each command block, copied whole, is its commands one per line: nothing else in it, none broken."""
    from reports.html import render_html

    data = request.getfixturevalue(name)
    with i18n.use(lang):
        page = render_html(to_result(data))
    parser = _Commands()
    parser.feed(page)
    parser.close()
    shown = [words(text) for block in parser.blocks for text, _r in joined([(t, 0.0) for t in block.split("\n")])]
    assert shown == [shlex.split(c) for c in commands(data)]


def test_any_quoted_command_is_cut_only_between_its_words() -> None:
    """Commands of arbitrary words (quotes, backslashes, operators, tabs, wide characters), cut for a narrow
    block: each line fits or is one word, and the lines joined at their continuations are the same words."""
    import random

    from reports.view import CONTINUATION, columns, shell_lines

    pick = random.Random(25)
    alphabet = "ab c'\"\\$`;|&<>#*?~=%{}()[]\t-x/é中"
    for _ in range(3000):
        argv = ["".join(pick.choice(alphabet) for _c in range(pick.randint(0, 30))) for _w in range(pick.randint(1, 12))]
        command = shlex.join(argv) + (" > " + shlex.quote("/run/" + "模" * pick.randint(1, 30)) if pick.random() < 0.3 else "")
        lines = shell_lines(command, 40)
        for line in lines:
            body = line.removesuffix(" \\").removeprefix(CONTINUATION)
            assert columns(line) <= 40 or len(shlex.split(body)) == 1, line
        assert [words(text) for text, _r in joined([(t, 0.0) for t in lines])] == [shlex.split(command)]
