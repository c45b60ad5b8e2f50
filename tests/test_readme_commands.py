"""The README followed literally (issue 25): every `gnd` command it shows parses with the options `gnd`
has, and a chain (`A && B`) goes on past a node with findings: only commands that exit 0 once they did
their work come before an `&&`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from doctor.cli import _with_command, build_parser

README = Path(__file__).resolve().parents[1] / "README.md"
#: commands whose exit status is 0 once their output is written, whatever the node's findings (`check`,
#: `diff`, `fleet` exit 1 on findings at or above --fail-on: a chain after them stops on a sick node)
EXIT_0_WHEN_DONE = {"collect", "baseline", "report", "fix-script", "checks", "help"}


def _code_lines() -> list[str]:
    """Shell lines of the README's code: fenced ``sh`` blocks and indented blocks."""
    lines, fenced = [], False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            lines.append(line.strip())
    joined: list[str] = []
    for line in lines:  # a line ending in `\` goes on in the next
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line
        elif line:
            joined.append(line)
    return joined


def _invocations() -> list[tuple[str, list[list[str]]]]:
    """Each code line with a ``gnd`` command, as its chain of commands (split at ``&&``, ``;``, ``|``)."""
    out = []
    for line in _code_lines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")  # `a; b` splits at the `;`
        lexer.whitespace_split = True
        words = list(lexer)
        chain, current = [], []
        for w in [*words, "&&"]:
            if w in ("&&", ";", "|", "||"):
                if current:
                    chain.append(current)
                current = []
                if w != "&&" and chain:
                    chain.append([w])
            else:
                current.append(w)
        if any(c and Path(c[0]).name == "gnd" for c in chain):
            out.append((line, chain))
    return out


INVOCATIONS = _invocations()


def test_the_readme_shows_gnd_commands() -> None:
    assert len(INVOCATIONS) >= 20


@pytest.mark.parametrize("line,chain", INVOCATIONS, ids=[line[:60] for line, _ in INVOCATIONS])
def test_every_readme_command_parses(line: str, chain: list[list[str]]) -> None:
    for command in chain:
        if Path(command[0]).name != "gnd":
            continue
        argv = _with_command(command[1:])
        parser, _ = build_parser(only=argv[0])
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            if argv[-1] != "--help" or exc.code != 0:
                raise AssertionError(f"README line does not parse: {line}") from None


@pytest.mark.parametrize("line,chain", INVOCATIONS, ids=[line[:60] for line, _ in INVOCATIONS])
def test_a_readme_chain_survives_a_node_with_findings(line: str, chain: list[list[str]]) -> None:
    for command, after in zip(chain, chain[1:]):
        if Path(command[0]).name != "gnd" or after[0] in (";", "|", "||"):
            continue
        sub = _with_command(command[1:])[0]
        assert sub in EXIT_0_WHEN_DONE, f"`{' '.join(command)}` exits 1 on a node with findings: {line}"


def test_the_set_up_uses_the_environment_it_made() -> None:
    """The first command a newcomer pastes calls the gnd it installed, not one on PATH."""
    setup = next(line for line in _code_lines() if "venv" in line)
    assert re.search(r"\.venv/bin/(gnd|python)\b", setup), setup
