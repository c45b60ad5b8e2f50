"""What every report shows, prepared once from the result (no verdicts computed here).

``build_view`` turns a :class:`~doctor.runner.Result` (fresh, or read by :mod:`doctor.result_io`)
into the sections the HTML, PDF, Markdown and fix-script renderers lay out.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from doctor.findings import (
    CRITICAL,
    HIGH,
    INFO,
    LOW,
    MEDIUM,
    PASS,
    SEVERITIES,
    UNKNOWN,
    Evidence,
    Finding,
    actor_order,
    severity_order,
)
from doctor.i18n import width as columns
from doctor.record import record
from doctor.runner import Result

PROBLEMS = (CRITICAL, HIGH, MEDIUM, LOW)
#: Characters of a subject and of a title in the summary's one line per finding (the details hold them whole)
SUMMARY_SUBJECT = 60
SUMMARY_TITLE = 160
#: What a renderer accepts from a saved result: file size, findings shown (worst first), evidence lines
#: kept per finding and characters per text field. A real result is a few hundred KiB with tens of
#: findings; a crafted one must not take PDF rendering to tens of GB.
MAX_FINDINGS = 500
MAX_EVIDENCE = 50
MAX_FIELD = 4000


@record
class CheckLine:
    """A check in the passed / could-not-evaluate / did-not-apply lists."""

    id: str
    title: str
    why: str = ""


@record
class View:
    """Sections of a report, in display order."""

    result: Result
    host: str
    source_kind: str
    source_path: str
    collected_at: str
    generated_at: str
    tool_version: str
    redacted: bool
    counts: dict[str, int]
    problems: list[Finding]
    infos: list[Finding]
    unknowns: list[Finding]
    #: the summary's one line per problem: by severity, and within one the hardware's and firmware's
    #: first, then the operating system's, then the application's (then by rank)
    first_page: list[Finding]
    passed: list[CheckLine]
    not_evaluated: list[CheckLine]
    not_applicable: list[CheckLine]
    inventory: dict[str, Any] = field(default_factory=dict)
    omitted: int = 0  # findings beyond MAX_FINDINGS, not shown

    @property
    def findings(self) -> list[Finding]:
        """Every finding shown in the ranked list (problems, then information)."""
        return [*self.problems, *self.infos]


def first_page(findings: list[Finding]) -> list[Finding]:
    """``findings`` as the summary lists them: by severity, then who acts (hardware and firmware, the
    operating system, the application, not said), then rank."""
    return sorted(findings, key=lambda f: (severity_order(f.severity), actor_order(f.acts), f.rank))


def short(text: str, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters (a summary line; the details hold it whole)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _check_lines(checks: list[dict[str, Any]], status: str) -> list[CheckLine]:
    return [CheckLine(str(c.get("id", "")), str(c.get("title", ""))) for c in checks
            if isinstance(c, dict) and c.get("status") == status]


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def _capped(items: tuple[str, ...]) -> tuple[str, ...]:
    return items if len(items) <= MAX_EVIDENCE else (*items[:MAX_EVIDENCE], f"… {len(items) - MAX_EVIDENCE} more")


def _bounded(f: Finding) -> Finding:
    """``f`` with long text fields clipped and at most :data:`MAX_EVIDENCE` evidence lines, references and ids."""
    texts: dict[str, Any] = {k: _clip(v) for k in _TEXT_FIELDS if len(v := getattr(f, k)) > MAX_FIELD}
    evidence = tuple(Evidence(_clip(e.source), _clip(e.value)) for e in f.evidence[:MAX_EVIDENCE])
    if len(f.evidence) > MAX_EVIDENCE:
        evidence += (Evidence("gnd", f"… {len(f.evidence) - MAX_EVIDENCE} more in the JSON result"),)
    if not texts and evidence == f.evidence and len(f.references) <= MAX_EVIDENCE >= len(f.related):
        return f
    return replace(f, **texts, evidence=evidence, references=_capped(f.references), related=_capped(f.related))


_TEXT_FIELDS = ("subject", "title", "detail", "expected", "observed", "check", "category", "subject_id")


def build_view(result: Result) -> View:
    """Sections of the report for ``result`` (masked already, at the pipeline or ``--from-json`` boundary).

    At most :data:`MAX_FINDINGS` findings are shown (``omitted`` counts the rest) and long fields are clipped.
    """
    from doctor.i18n import localise

    result = localise(result)  # the prose in the current language (the same result when already done)
    findings = result.findings
    if len(findings) > MAX_FINDINGS:
        findings = sorted(findings, key=lambda f: severity_order(f.severity))
    omitted = max(0, len(findings) - MAX_FINDINGS)
    findings = [_bounded(f) for f in findings[:MAX_FINDINGS]]
    if any(f.rank == 0 for f in findings):  # hand-made JSON: keep its order, number it
        findings = [replace(f, rank=i) for i, f in enumerate(findings, 1)]
    problems = [f for f in findings if f.severity in PROBLEMS]
    infos = [f for f in findings if f.severity == INFO]
    unknowns = [f for f in findings if f.severity == UNKNOWN]
    checks = [c for c in result.checks if isinstance(c, dict)]
    not_evaluated = [CheckLine(f.check, f.title, f.detail or "; ".join(e.value for e in f.evidence))
                     for f in unknowns]
    passed = [CheckLine(str(c.get("id", "")), str(c.get("title", ""))) for c in result.passed_checks()]
    pass_titles = {f.check: f.title for f in findings if f.severity == PASS}
    passed = [CheckLine(c.id, c.title, pass_titles.get(c.id, "")) for c in passed]
    counts = {s: sum(1 for f in findings if f.severity == s) for s in SEVERITIES}
    counts[PASS] = len(passed)  # checks passed, as every output counts them (Result.passed_checks)
    src = result.source
    inv = result.inventory
    host = str(src.get("hostname") or (inv.get("host") or {}).get("hostname") or "unknown host")
    return View(
        result=result, host=host, source_kind=str(src.get("kind") or "?"), source_path=str(src.get("path") or ""),
        collected_at=str(src.get("collected_at") or ""), generated_at=result.generated_at,
        tool_version=result.tool_version, redacted=result.redacted,
        counts=counts, problems=problems, infos=infos, unknowns=unknowns, first_page=first_page(problems),
        passed=passed, not_evaluated=not_evaluated,
        not_applicable=_check_lines(checks, "not_applicable"), inventory=inv, omitted=omitted,
    )



def mono_lines(text: str, columns: int, indent: str = "  ") -> list[str]:
    """``text`` hard-wrapped for a ``white-space: pre`` block ``columns`` characters wide (a monospace font).

    Lines break at the last space that fits (in the second half of the line), else after ``columns``
    characters; continuation lines start with ``indent``. The PDF lays such a block out one line at a time
    with no line-breaking search (a wrapped paragraph costs WeasyPrint several layouts per line).
    """
    out: list[str] = []
    for line in text.split("\n"):
        while len(line) > columns:
            cut = line.rfind(" ", columns // 2, columns + 1)
            head, rest = (line[:cut], line[cut + 1:]) if cut > 0 else (line[:columns], line[columns:])
            out.append(head)
            line = indent + rest
        out.append(line)
    return out


#: how continuation lines of a command start (after the previous line's `` \``)
CONTINUATION = "    "


def shell_words(command: str) -> list[str] | None:
    """``command`` cut at the blanks between its shell words, each word's text as written (quotes kept);
    ``None`` where a cut could change what the shell reads: an open quote, a comment, a here-document,
    a line break of its own."""
    words: list[str] = []
    start: int | None = None
    quote = ""
    i = 0
    while i < len(command):
        ch = command[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            if i + 1 >= len(command) or command[i + 1] == "\n":
                return None
            start = i if start is None else start
            i += 1  # the escaped character belongs to the word
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in " \t":
            if start is not None:
                words.append(command[start:i])
                start = None
        elif ch in "\n\r":
            return None
        else:
            if start is None:
                start = i
                if ch == "#":  # a comment runs to the end of the line: a continuation inside it would end it
                    return None
            if ch in "'\"":
                quote = ch
            elif command.startswith("<<", i):
                return None
        i += 1
    if quote:
        return None
    if start is not None:
        words.append(command[start:])
    return words


def shell_lines(command: str, width: int) -> list[str]:
    """``command`` in lines of at most ``width`` columns (:func:`doctor.i18n.width`: a CJK glyph, about 1.7
    columns of DejaVu Sans Mono, counts two, so a line never runs wider than its block), cut only between
    shell words, each line but the last ending in `` \\`` (so a copied block runs as the one command); a
    word longer than a line gets a line of its own. A command that cannot be cut safely (see
    :func:`shell_words`) stays one line."""
    if columns(command) <= width:
        return [command]
    words = shell_words(command)
    if not words:
        return [command]
    lines: list[str] = []
    line, used = words[0], columns(words[0])
    for word in words[1:]:
        size = columns(word)
        if used + 1 + size + 2 <= width:
            line, used = line + " " + word, used + 1 + size
        else:
            lines.append(line + " \\")
            line, used = CONTINUATION + word, len(CONTINUATION) + size
    lines.append(line)
    return lines


#: characters per line of a command block and of an evidence block in the PDF (their fonts are sized to fit
#: the A4 text width: reports/templates/report.css)
COMMAND_COLUMNS = 96
EVIDENCE_COLUMNS = 116
#: lines of one command block at most: a block is never split across pages (break-inside: avoid), so one that
#: fits on a page breaks only between commands; a longer run of commands is cut into blocks between commands
BLOCK_LINES = 40


@record
class FixPart:
    """A run of one phase's steps as shown: shell lines of commands (``manual`` empty), or a manual step's text."""

    lines: tuple[str, ...] = ()
    manual: str = ""

    @property
    def longest(self) -> int:
        """The widest line, in columns (:func:`doctor.i18n.width`)."""
        return max((columns(line) for line in self.lines), default=0)


def fix_parts(f: Finding) -> list[tuple[str, list[FixPart]]]:
    """``(phase, parts)`` for each phase of ``f``'s fix that has steps: consecutive commands in one block of
    at most :data:`BLOCK_LINES` lines (a command longer than that has a block of its own), each command cut
    into lines by :func:`shell_lines`, manual steps (prose, never run) apart."""
    out: list[tuple[str, list[FixPart]]] = []
    for phase, texts in (("runtime", f.fix.runtime), ("persistent", f.fix.persistent), ("rollback", f.fix.rollback)):
        if not texts:
            continue
        # a manual step is prose; a 1.x result (no builder) holds its commands as manual steps
        manual = {s.text for s in f.fix.phase(phase) if s.kind == "manual"} if f.fix.builder else set()
        parts: list[FixPart] = []
        lines: list[str] = []
        for text in texts:
            if text in manual:
                if lines:
                    parts.append(FixPart(tuple(lines)))
                    lines = []
                parts.append(FixPart(manual=text))
            else:
                more = shell_lines(text, COMMAND_COLUMNS)
                if lines and len(lines) + len(more) > BLOCK_LINES:
                    parts.append(FixPart(tuple(lines)))
                    lines = []
                lines += more
        if lines:
            parts.append(FixPart(tuple(lines)))
        out.append((phase, parts))
    return out
