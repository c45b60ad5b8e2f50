"""One finding per cause: many findings that share check, severity, title and fix collapse into one.

2,000 processes started with ``--enforce-eager`` are one problem with one fix, not 2,000 findings:
the merged finding names the subjects (``2000 processes: vllm serve (pid 4242), ...``), keeps every
``related`` id, and carries a bounded sample of the evidence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace

from doctor.findings import Evidence, Finding
from doctor.i18n import N_, Nn_
from doctor.i18n import join as i18n_join
from doctor.lazyre import lazy

#: A cause with up to this many subjects keeps one finding per subject (one per GPU of an 8-GPU node);
#: more collapse into one finding.
MAX_SEPARATE = 8
#: Subjects named in a merged finding's subject text, and its longest length
SHOWN_SUBJECTS = 5
MAX_SUBJECT_CHARS = 200
#: Evidence lines kept in a merged finding (the first of each subject first)
MAX_EVIDENCE = 24
_PCI = lazy(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def _key(f: Finding) -> tuple[str, str, str, str]:
    """Same check, severity, title and kind of fix (one builder; per-subject parameters such as a pid may differ)."""
    if f.fix.builder:
        return f.check, str(f.severity), f.title, "builder:" + f.fix.builder
    fix = f.fix.to_dict()  # a fix without a builder: the same text (what the finding's to_dict() holds as "fix")
    return f.check, str(f.severity), f.title, json.dumps(fix, sort_keys=True, default=str)


def _kind(subjects: list[str]) -> str:
    """What the subjects are, from their ids (``pid:N``, PCI addresses) or bare pids."""
    if all(s.isdigit() or s.startswith("pid:") for s in subjects):
        return "processes"
    if all(_PCI.match(s) for s in subjects):
        return "devices"
    return "subjects"


def _count(subjects: list[str], kind: str | None = None) -> str:
    """``"2000 processes"`` (translatable)."""
    n, kind = len(subjects), kind or _kind(subjects)
    if kind == "processes":
        return Nn_("{n} process", "{n} processes", n)
    if kind == "devices":
        return Nn_("{n} device", "{n} devices", n)
    return Nn_("{n} subject", "{n} subjects", n)


def _label(subject: str, names: Mapping[int, str]) -> str:
    if subject.isdigit() and int(subject) in names:
        return N_("{name} (pid {pid})", name=names[int(subject)], pid=subject)
    return subject


def subject_text(subjects: list[str], names: Mapping[int, str] | None = None, ids: list[str] | None = None) -> str:
    """``"2000 processes: vllm serve (pid 4242), ... +1995 more"``, at most :data:`MAX_SUBJECT_CHARS` long."""
    shown = [_label(s, names or {}) for s in subjects[:SHOWN_SUBJECTS]]
    more = len(subjects) - len(shown)
    prefix = _count(subjects, _kind(ids or subjects))
    listed = i18n_join(", ", shown)
    if len(prefix) + 2 + len(listed) > MAX_SUBJECT_CHARS:  # the list is cut, the translatable count kept
        listed = str.__str__(listed)[: max(0, MAX_SUBJECT_CHARS - len(prefix) - 3)] + "…"
    text = N_("{count}: {subjects}", count=prefix, subjects=listed)
    return text + N_(" … +{n} more", n=more) if more > 0 else text


def _merge(group: list[Finding], names: Mapping[int, str]) -> Finding:
    first = group[0]
    subjects = list(dict.fromkeys(f.subject for f in group))
    related = tuple(dict.fromkeys(r for f in group for r in (*f.related, f.subject_id or f.subject)))
    firsts = [f.evidence[0] for f in group if f.evidence]
    rest = [e for f in group for e in f.evidence[1:]]
    evidence = list(dict.fromkeys([*firsts, *rest]))
    if len(evidence) > MAX_EVIDENCE:
        dropped = len(evidence) - MAX_EVIDENCE + 1
        evidence = [*evidence[: MAX_EVIDENCE - 1],
                    Evidence("gnd", f"… {dropped} more evidence lines over {str.__str__(_count(subjects))}")]
    detail = first.detail
    if any(f.detail != first.detail for f in group):
        detail += N_(" (details differ between the {count}; the first is shown)", count=_count(subjects))
    best = max(group, key=lambda f: f.impact.score)
    fix = first.fix
    if any(f.fix != first.fix for f in group):
        note = N_("The steps below are for {subject}; each of the {n} subjects needs the same change "
                  "(`--format json` lists them).", subject=first.subject, n=len(subjects))
        fix = replace(fix, notes=note + " " + fix.notes if fix.notes else note)
    ids = [f.subject_id or f.subject for f in group]
    return replace(first, subject=subject_text(subjects, names, ids), detail=detail, evidence=tuple(evidence),
                   related=related, impact=best.impact, fix=fix, confidence=max(f.confidence for f in group))


def group_findings(findings: Iterable[Finding], facts: object = None) -> list[Finding]:
    """Findings sharing check, severity, title and fix merged into one when more than
    :data:`MAX_SEPARATE` subjects share them (first-seen order; :func:`doctor.findings.rank` sorts later).

    ``facts`` (optional) names the processes behind pid subjects.
    """
    groups: dict[tuple[str, str, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(_key(f), []).append(f)
    out: list[Finding] = []
    names: dict[int, str] | None = None
    for group in groups.values():
        if len({f.subject for f in group}) <= MAX_SEPARATE:
            out.extend(group)
            continue
        if names is None:
            names = _names_of(facts)
        out.append(_merge(group, names))
    return out


def _names_of(facts: object) -> dict[int, str]:
    try:
        return process_names(getattr(facts, "processes", None) or ())
    except Exception:  # labels are a nicety; a source whose processes cannot be read has none
        return {}


def process_names(processes: Iterable[object]) -> dict[int, str]:
    """pid -> a short command (``vllm serve``) for labelling merged process subjects."""
    names: dict[int, str] = {}
    for p in processes:
        pid = getattr(p, "pid", None)
        argv = getattr(p, "argv", ()) or ()
        words = [str(a) for a in argv[:4] if not str(a).startswith("-")]
        name = " ".join([words[0].rsplit("/", 1)[-1], *words[1:2]]) if words else getattr(p, "name", None)
        if isinstance(pid, int) and name:
            names[pid] = str(name)[:60]
    return names
