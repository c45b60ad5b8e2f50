"""Findings: one schema (the JSON contract) with severity, subject, evidence, impact and fixes.

A fix is a list of structured steps (argv or a file to write) built by a named builder from
validated parameters (``doctor.fixes``); text, reports and fix scripts are rendered from the steps.
Ranking happens once, here: by severity, then who acts (hardware and firmware, the operating system, the
application), then by impact score, then by check id and subject.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from dataclasses import field, fields, replace
from enum import Enum
from typing import Any, Final

from doctor.lazyre import lazy
from doctor.record import record


class Severity(str, Enum):
    """How bad a finding is; the values are the JSON strings."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    UNKNOWN = "unknown"
    INFO = "info"
    PASS = "pass"

    __str__ = str.__str__

    def __format__(self, spec: str) -> str:
        return str.__format__(str(self), spec)

    @classmethod
    def parse(cls, value: object) -> Severity:
        """The severity named by ``value``; ``unknown`` for anything else."""
        try:
            return cls(str(value))
        except ValueError:
            return cls.UNKNOWN


#: Aliases so checks read well; typed ``str`` so dicts keyed by them accept JSON strings too
CRITICAL: Final[str] = Severity.CRITICAL
HIGH: Final[str] = Severity.HIGH
MEDIUM: Final[str] = Severity.MEDIUM
LOW: Final[str] = Severity.LOW
INFO: Final[str] = Severity.INFO
UNKNOWN: Final[str] = Severity.UNKNOWN
PASS: Final[str] = Severity.PASS
#: Display and ranking order, worst first.
SEVERITIES = (CRITICAL, HIGH, MEDIUM, LOW, UNKNOWN, INFO, PASS)
#: Levels ``--fail-on`` accepts, worst first (``unknown`` and ``pass`` never fail a run); plain strings,
#: as a user types and reads them (an error lists ``critical, high, ...``)
FAIL_LEVELS: tuple[str, ...] = tuple(str(s.value) for s in (Severity.CRITICAL, Severity.HIGH, Severity.MEDIUM,
                                                            Severity.LOW, Severity.INFO))
_ORDER = {s: i for i, s in enumerate(SEVERITIES)}
CATEGORIES = ("pcie", "iommu", "numa", "network", "rdma", "runtime", "gpu", "baseline", "doctor")


class Actor(str, Enum):
    """Who acts on a finding: what its fix changes, and so whom a ticket goes to; the values are the JSON strings.

    ``hardware``: the hardware or its firmware (a link that trained low, a card in the wrong slot, ECC
    faults, a BIOS setting): the vendor or the data-centre technician. ``os``: the operating system as
    the node's administrator sets it up (kernel parameters, sysctls, drivers and their services, the
    kubelet). ``application``: the workload and its deployment (server flags, NCCL variables, where
    its processes run, the limits its unit or container gives it).
    """

    HARDWARE = "hardware"
    OS = "os"
    APPLICATION = "application"

    __str__ = str.__str__

    def __format__(self, spec: str) -> str:
        return str.__format__(str(self), spec)

    @classmethod
    def parse(cls, value: object) -> Actor | None:
        """The actor named by ``value``; ``None`` for anything else (a result older than the field)."""
        try:
            return cls(str(value))
        except ValueError:
            return None


#: Who acts, in the order a report lists the findings of one severity: the vendor's faults first
ACTORS: tuple[Actor, ...] = (Actor.HARDWARE, Actor.OS, Actor.APPLICATION)


def actor_order(acts: Actor | str | None) -> int:
    """0 for hardware, 1 for the operating system, 2 for the application, 3 when not known."""
    actor = Actor.parse(acts) if acts is not None else None
    return ACTORS.index(actor) if actor is not None else len(ACTORS)


def severity_order(severity: str) -> int:
    """0 for critical up to 6 for pass."""
    return _ORDER.get(severity, len(SEVERITIES))


def at_least(severity: str, level: str) -> bool:
    """Whether ``severity`` is at or above the ``--fail-on`` ``level``."""
    if severity not in FAIL_LEVELS or level not in FAIL_LEVELS:
        return False
    return FAIL_LEVELS.index(severity) <= FAIL_LEVELS.index(level)


def cmd(*argv: object) -> str:
    """A shell command with every argument quoted (``cmd("sysctl", "-w", "a=b c")``)."""
    return shlex.join(str(a) for a in argv)


def q(value: object) -> str:
    """One shell-quoted word, for commands that need redirections or pipes around it."""
    return shlex.quote(str(value))


@record
class Evidence:
    """One observation: the file or command it came from and what it said."""

    source: str
    value: str


@record
class Impact:
    """What this costs: ``text`` (a sentence saying what it applies to), ``basis`` (where the estimate
    comes from: a bandwidth ratio, a published measurement) and ``score``, a 0-100 ranking weight
    that is never shown as a measurement."""

    score: float = 0.0
    text: str = ""
    basis: str = ""
    #: where a figure the basis quotes was published (a URL): a quoted measurement always names its source
    source: str = ""

    @property
    def line(self) -> str:
        """The impact for people: the sentence, its basis and the basis's source (in the current language's words)."""
        from doctor.i18n import _

        text, basis = self.text.rstrip(".。"), self.basis.rstrip(".。")
        if basis and self.source:
            basis = _("{basis}; source: {url}").format(basis=basis, url=self.source)
        if text and basis:
            return _("{text} (basis: {basis}).").format(text=text, basis=basis)
        return self.text or (_("basis: {basis}").format(basis=basis) if basis else "")


PHASES = ("runtime", "persistent", "rollback")
_IRQ_FILE = lazy(r"/proc/irq/(\d+)/smp_affinity_list")


@record
class FixStep:
    """One step of a fix: a command (``argv``), a file to write (``heredoc``: path, content) or, for
    what only a human can do, ``manual`` text that is never executed.

    ``unattended``: safe to run from a script without a human watching. ``key`` names what the step
    changes; a rollback step carries the key of the step it undoes, so a script rolls back only what
    it ran.
    """

    phase: str
    argv: tuple[str, ...] = ()
    heredoc: tuple[str, str] | None = None
    manual: str = ""
    description: str = ""
    unattended: bool = False
    key: str = ""

    @property
    def kind(self) -> str:
        """``command``, ``write`` or ``manual``."""
        return "command" if self.argv else "write" if self.heredoc else "manual"

    @property
    def text(self) -> str:
        """The step as one shell command for people to read (every value quoted); never parsed back."""
        if self.argv:
            return shlex.join(self.argv)
        if self.heredoc:
            path, content = self.heredoc
            body = content[:-1] if content.endswith("\n") else content
            if "\n" not in body and not body.startswith("-"):
                return f"echo {q(body)} > {q(path)}"
            lines = body.split("\n")  # one argument per line: the command itself stays on one line
            words = " ".join(q(line) for line in lines)
            if content.endswith("\n"):
                return f"printf '%s\\n' {words} > {q(path)}"
            head = " ".join(q(line) for line in lines[:-1])
            return f"{{ printf '%s\\n' {head}; printf %s {q(lines[-1])}; }} > {q(path)}"
        return self.manual

    def to_dict(self) -> dict[str, Any]:
        return {"phase": self.phase, "kind": self.kind, "argv": list(self.argv),
                "heredoc": {"path": self.heredoc[0], "content": self.heredoc[1]} if self.heredoc else None,
                "manual": self.manual, "description": self.description, "unattended": self.unattended,
                "key": self.key, "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FixStep:
        doc = data.get("heredoc")
        phase = str(data.get("phase", ""))
        return cls(phase=phase if phase in PHASES else "runtime",
                   argv=tuple(map(str, data.get("argv") or ())) if isinstance(data.get("argv"), list) else (),
                   heredoc=(str(doc.get("path", "")), str(doc.get("content", ""))) if isinstance(doc, dict) else None,
                   manual=str(data.get("manual") or ""), description=str(data.get("description") or ""),
                   unattended=data.get("unattended") is True, key=str(data.get("key") or ""))


@record
class Fix:
    """Steps to apply now, to make it survive a reboot and to undo, plus advice (``notes``, never commands).

    ``builder`` and ``params`` name the ``doctor.fixes`` builder that made the steps and its validated
    parameters, so a fix script can rebuild the steps instead of trusting command text from a file.
    """

    steps: tuple[FixStep, ...] = ()
    notes: str = ""
    builder: str = ""
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def phase(self, phase: str) -> tuple[FixStep, ...]:
        return tuple(s for s in self.steps if s.phase == phase)

    def texts(self, phase: str) -> tuple[str, ...]:
        """The steps of ``phase`` as text for people; one value written to several IRQs' affinity
        reads as one ``for irq in ...`` line (display only: scripts run the steps themselves)."""
        out: list[str] = []
        run: list[str] = []
        value = ""
        for step in (*self.phase(phase), None):
            m = _IRQ_FILE.fullmatch(step.heredoc[0]) if step is not None and step.heredoc else None
            if m and step is not None and step.heredoc and (not run or step.heredoc[1] == value):
                run.append(m.group(1))
                value = step.heredoc[1]
                continue
            if len(run) > 1:
                out.append(f"for irq in {' '.join(run)}; do echo {q(value)} > /proc/irq/$irq/smp_affinity_list; done")
            elif run:
                out.append(f"echo {q(value)} > /proc/irq/{run[0]}/smp_affinity_list")
            run = []
            if m and step is not None and step.heredoc:
                run, value = [m.group(1)], step.heredoc[1]
            elif step is not None:
                out.append(step.text)
        return tuple(out)

    @property
    def runtime(self) -> tuple[str, ...]:
        """The runtime steps as text (for display)."""
        return self.texts("runtime")

    @property
    def persistent(self) -> tuple[str, ...]:
        return self.texts("persistent")

    @property
    def rollback(self) -> tuple[str, ...]:
        return self.texts("rollback")

    @property
    def empty(self) -> bool:
        return not (self.steps or self.notes)

    def to_dict(self) -> dict[str, Any]:
        return {"builder": self.builder, "params": self.params, "steps": [s.to_dict() for s in self.steps],
                "runtime": list(self.runtime), "persistent": list(self.persistent), "rollback": list(self.rollback),
                "notes": self.notes}

    @classmethod
    def from_text(cls, runtime: tuple[str, ...] = (), persistent: tuple[str, ...] = (),
                  rollback: tuple[str, ...] = (), notes: str = "") -> Fix:
        """A fix of display-only ``manual`` steps (what 1.x results hold); no script ever runs them."""
        return cls(steps=tuple(FixStep(phase, manual=str(c)) for phase, texts in
                               (("runtime", runtime), ("persistent", persistent), ("rollback", rollback))
                               for c in texts), notes=notes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        """A fix from its JSON form; 1.x command strings become display-only ``manual`` steps."""
        notes = str(data.get("notes") or "")
        if isinstance(data.get("steps"), list):
            params = data.get("params")
            return cls(steps=tuple(FixStep.from_dict(s) for s in data["steps"] if isinstance(s, dict)), notes=notes,
                       builder=str(data.get("builder") or ""), params=dict(params) if isinstance(params, dict) else {})
        texts = {p: tuple(map(str, v)) if isinstance(v := data.get(p), list) else () for p in PHASES}
        return cls.from_text(texts["runtime"], texts["persistent"], texts["rollback"], notes)


@record
class Finding:
    """What one check concluded about one subject."""

    #: a :class:`Severity` (a plain string is converted; an unknown one becomes ``unknown``)
    severity: str
    subject: str
    title: str
    detail: str = ""
    evidence: tuple[Evidence, ...] = ()
    expected: str = ""
    observed: str = ""
    impact: Impact = field(default_factory=Impact)
    fix: Fix = field(default_factory=Fix)
    references: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    confidence: float = 1.0
    check: str = ""
    category: str = ""
    #: who acts on it (:class:`Actor`): the check's declaration (``@check(acts=...)``), which a finding
    #: overrides only where one check finds faults of different owners; ``None`` in results older than 2.2
    acts: Actor | None = None
    rank: int = 0
    #: Stable id of the subject: PCI address, netdev, RDMA port (``mlx5_0/1``), ``pid:N``, sysctl
    #: name, ``cpu``, ``node`` ... (``subject`` is the display text); ``related`` holds ids too.
    subject_id: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.severity, Severity):
            object.__setattr__(self, "severity", Severity.parse(self.severity))
        if self.acts is not None and not isinstance(self.acts, Actor):
            object.__setattr__(self, "acts", Actor(self.acts))  # an unknown value is a programming error
        if not self.subject_id:
            object.__setattr__(self, "subject_id", subject_id_of(self.subject))
        if self.severity in (Severity.INFO, Severity.PASS) and self.fix.steps:
            # nothing to fix: a finding saying a setting is fine carries no steps (its notes stay)
            object.__setattr__(self, "fix", Fix(notes=self.fix.notes))

    def to_dict(self) -> dict[str, Any]:
        # field by field: dataclasses.asdict deep-copies every value and was a third of a fleet node's time
        data: dict[str, Any] = {}
        for f in _FINDING_FIELDS:
            value = getattr(self, f)
            if f == "severity":
                value = Severity.parse(value).value
            elif f == "acts":
                value = None if value is None else Actor(value).value
            elif f == "evidence":
                value = [_scalars(e) for e in value]
            elif f == "impact":
                value = _scalars(value)
            elif f in ("references", "related"):
                value = list(value)
            data[f] = value
        data["fix"] = self.fix.to_dict()
        messages = self.messages()
        if messages:
            data["i18n"] = messages
        return data

    def messages(self) -> dict[str, object]:
        """The translatable prose fields (``title``, ``impact.text``, ``fix.steps.2.description`` ...) as
        :func:`doctor.i18n.encode` writes them: what ``--lang`` translates when a saved result is rendered."""
        from doctor.i18n import Msg, encode

        out: dict[str, object] = {}
        for path, value in self._prose():
            if isinstance(value, Msg):
                out[path] = encode(value)
        return out

    def _prose(self) -> Iterator[tuple[str, str]]:
        for name in _PROSE_FIELDS:
            yield name, getattr(self, name)
        yield "impact.text", self.impact.text
        yield "impact.basis", self.impact.basis
        yield "fix.notes", self.fix.notes
        for i, step in enumerate(self.fix.steps):
            yield f"fix.steps.{i}.description", step.description
            yield f"fix.steps.{i}.manual", step.manual

    def with_messages(self, messages: object) -> Finding:
        """This finding with the prose fields ``messages`` (from :meth:`messages`) encodes, where they
        read exactly as the field does (an edited or redacted field keeps its own text)."""
        if not isinstance(messages, dict) or not messages:
            return self
        from doctor.i18n import restore

        top: dict[str, Any] = {n: restore(getattr(self, n), messages[n]) for n in _PROSE_FIELDS if n in messages}
        impact = self.impact
        if "impact.text" in messages or "impact.basis" in messages:
            impact = replace(impact, text=restore(impact.text, messages.get("impact.text")),
                             basis=restore(impact.basis, messages.get("impact.basis")))
        fix = self.fix
        if any(str(k).startswith("fix.") for k in messages):
            steps = tuple(replace(st, description=restore(st.description, messages.get(f"fix.steps.{i}.description")),
                                  manual=restore(st.manual, messages.get(f"fix.steps.{i}.manual")))
                          for i, st in enumerate(fix.steps))
            fix = replace(fix, steps=steps, notes=restore(fix.notes, messages.get("fix.notes")))
        return replace(self, **top, impact=impact, fix=fix)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """Rebuild a finding from its JSON form (``gnd report --from-json``, ``gnd diff``)."""
        raw_fix = data.get("fix")
        fix: dict[str, Any] = raw_fix if isinstance(raw_fix, dict) else {}
        impact = data.get("impact") or {}
        score = impact.get("score", 0)  # an int stays an int: a saved result reads back as it was written
        return cls(
            severity=Severity.parse(data.get("severity", UNKNOWN)), subject=str(data.get("subject", "")),
            subject_id=str(data.get("subject_id") or ""),
            title=str(data.get("title", "")), detail=str(data.get("detail", "")),
            evidence=tuple(Evidence(str(e.get("source", "")), str(e.get("value", "")))
                           for e in data.get("evidence") or [] if isinstance(e, dict)),
            expected=str(data.get("expected", "")), observed=str(data.get("observed", "")),
            impact=Impact(score if type(score) in (int, float) else float(score or 0), str(impact.get("text", "")),
                          str(impact.get("basis", "") or ""), str(impact.get("source", "") or "")),
            fix=Fix.from_dict(fix),
            references=tuple(map(str, data.get("references") or ())),
            related=tuple(map(str, data.get("related") or ())),
            confidence=float(data.get("confidence", 1.0) or 0), check=str(data.get("check", "")),
            category=str(data.get("category", "")), acts=Actor.parse(data.get("acts")),
            rank=int(data.get("rank", 0) or 0),
        ).with_messages(data.get("i18n"))


_PCI_IN_LABEL = lazy(r"\(([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\)$")
_PID_IN_LABEL = lazy(r"\(pid (\d+)\)$")
_ENV_IN_LABEL = lazy(r"([A-Z][A-Z0-9_]{1,127}) in \S.*")


_PID_IN_SUBJECT = lazy(r" ?\(pid \d+\)")


def stable_subject(subject: str) -> str:
    """``subject`` without its process ids (``vllm api_server (pid 4242)`` -> ``vllm api_server``): how
    findings about one process are matched across a restart (``gnd diff``) or between nodes (``gnd fleet``)."""
    if "(pid " not in subject:
        return subject
    plain = _PID_IN_SUBJECT.sub("", subject)
    from doctor.i18n import Msg

    if isinstance(subject, Msg) and subject.params and subject.parts is None:  # keep it translatable
        kept = Msg(subject.msgid, {k: stable_subject(v) if isinstance(v, str) else v for k, v in subject.params.items()},
                   plural=subject.plural, cap=subject.cap)
        if str.__str__(kept) == plain:
            return kept
    return plain


def subject_id_of(subject: str) -> str:
    """The stable id of a display subject: the address of ``GPU 5 (0000:9c:00.0)``, ``pid:N`` for
    ``vllm serve (pid 4242)`` or a bare process id, ``NCCL_IB_DISABLE`` for ``NCCL_IB_DISABLE in
    vllm serve (pid 4242)``, else the subject itself (an address, interface, RDMA port, sysctl, node)."""
    m = _PCI_IN_LABEL.search(subject)
    if m:
        return m.group(1)
    env = _ENV_IN_LABEL.fullmatch(subject)
    if env:
        return env.group(1)
    pid = _PID_IN_LABEL.search(subject)
    if pid:
        return f"pid:{pid.group(1)}"
    if subject.isdigit():
        return f"pid:{subject}"
    return subject


#: Numbering order: the order every output lists findings in (problems worst first, then information,
#: then what could not be evaluated, then passes), so the numbers a reader sees never skip
_RANK_ORDER = {s: i for i, s in enumerate((CRITICAL, HIGH, MEDIUM, LOW, INFO, UNKNOWN, PASS))}


def rank(findings: list[Finding]) -> list[Finding]:
    """Sort worst first (severity; within one who acts, the hardware's and firmware's first, then the
    operating system's, then the application's; then impact) and number them from 1, in the order outputs
    list them: the summary's one line per finding and the details read in the same order."""
    ordered = sorted(findings, key=lambda f: (_RANK_ORDER.get(f.severity, len(_RANK_ORDER)), actor_order(f.acts),
                                              -f.impact.score, f.check, f.subject))
    return [replace(f, rank=i) for i, f in enumerate(ordered, 1)]


def summary(findings: list[Finding]) -> dict[str, int]:
    """Count per severity, every severity present as a key."""
    counts = {str(s): 0 for s in SEVERITIES}
    for f in findings:
        key = Severity.parse(f.severity).value
        counts[key] = counts.get(key, 0) + 1
    return counts


#: Finding's fields in order, the fix last (the JSON contract's key order)
_FINDING_FIELDS: Final = tuple(f.name for f in fields(Finding) if f.name != "fix")
#: Finding's own prose fields (translated when rendered; ``subject`` is a name, ``check`` an id)
_PROSE_FIELDS: Final = ("subject", "title", "detail", "expected", "observed")


def _scalars(obj: Evidence | Impact) -> dict[str, Any]:
    """A dataclass whose fields are all scalars, as a dict (what ``asdict`` gives, without its copying)."""
    return {f.name: getattr(obj, f.name) for f in fields(obj)}
