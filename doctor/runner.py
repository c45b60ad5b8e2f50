"""Run checks over facts and assemble the result (the JSON contract's object)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from doctor import __version__
from doctor.deadline import Deadline, DeadlineReached, interrupting
from doctor.errors import DoctorError
from doctor.facts import Facts
from doctor.findings import (
    CRITICAL,
    HIGH,
    LOW,
    MEDIUM,
    PASS,
    UNKNOWN,
    Actor,
    Evidence,
    Finding,
    rank,
    severity_order,
    summary,
)
from doctor.grouping import group_findings
from doctor.i18n import N_, Msg
from doctor.inputs import problems
from doctor.inventory import build_inventory
from doctor.registry import Check, LoadError, load_checks

SCHEMA_VERSION = "2.2"


def _utc_now() -> str:
    """``datetime.now(timezone.utc).isoformat(timespec="seconds")``, without importing datetime."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())


@dataclass
class Result:
    """One run: where the data came from, each check's status, ranked findings and the inventory."""

    source: dict[str, Any]
    checks: list[dict[str, Any]]
    findings: list[Finding]
    inventory: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0
    generated_at: str = ""
    tool_version: str = __version__  # a saved result keeps the version that wrote it
    redacted: bool = False  # identities replaced by ``--redact``

    def passed_checks(self) -> list[dict[str, Any]]:
        """The checks that passed: they looked and every finding they made is ``pass`` (status ``pass``).
        A check that also found a problem (``pcie.link_downgrade``: 15 paths fine, GPU 3 at x8) did not
        pass, whatever pass findings it made for the subjects that were fine. A result without a checks
        list (hand-made JSON) counts the checks whose findings are all ``pass``."""
        if self.checks:
            return [c for c in self.checks if isinstance(c, dict) and c.get("status") == PASS]
        worst: dict[str, str] = {}
        for f in self.findings:
            if f.check not in worst or severity_order(f.severity) < severity_order(worst[f.check]):
                worst[f.check] = f.severity
        return [{"id": c, "title": "", "status": PASS} for c, s in worst.items() if s == PASS]

    def summary(self) -> dict[str, int]:
        """Findings per severity, every severity a key, and under ``pass`` the number of checks that
        passed (:meth:`passed_checks`): the one count of passed checks that every output shows."""
        counts = summary(self.findings)
        counts[PASS] = len(self.passed_checks())
        return counts

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "gpu-node-doctor", "version": self.tool_version},
            "generated_at": self.generated_at,
            "duration_s": round(self.duration_s, 4),
            "source": self.source,
            "summary": self.summary(),
            "checks": self.checks,
            "findings": [f.to_dict() for f in self.findings],
            "inventory": self.inventory,
        }
        if self.redacted:
            data["redacted"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        tool = data.get("tool")
        return cls(source=dict(data.get("source") or {}), checks=list(data.get("checks") or []),
                   findings=[Finding.from_dict(f) for f in data.get("findings") or [] if isinstance(f, dict)],
                   inventory=dict(data.get("inventory") or {}), duration_s=float(data.get("duration_s") or 0),
                   generated_at=str(data.get("generated_at") or ""), redacted=bool(data.get("redacted")),
                   tool_version=str(tool.get("version") or "?") if isinstance(tool, dict) else "?")


def _status(findings: list[Finding]) -> str:
    if not findings:
        return "not_applicable"
    worst = min(findings, key=lambda f: severity_order(f.severity)).severity
    return worst


def _load_error_finding(error: LoadError) -> Finding:
    return Finding(severity=UNKNOWN, subject=error.plugin, title=N_("check plugin {plugin} failed to load", plugin=repr(error.plugin)),
                   detail=error.error, evidence=(Evidence("entry point gpu_node_doctor.checks", error.error),),
                   check="doctor.plugin", category="doctor", acts=Actor.OS)


def _judged_inputs(chk: Check, facts: Facts, produced: list[Finding]) -> tuple[list[Finding], str | None]:
    """``produced`` as the inputs allow, and why the check did not apply (when it did not).

    A check that does not apply (its ``applies`` gives a reason) and found nothing stays "not
    applicable", with the reason. Otherwise an input it needs that is missing or incomplete turns
    its ``pass`` findings into one ``unknown`` naming the input (a check that already said
    ``unknown``, or found a problem, keeps its own words); its other findings stay, they were seen.
    """
    reason = chk.applies(facts) if chk.applies is not None else None
    if reason and not produced:
        return produced, reason
    missing = problems(facts, chk.needs) if chk.needs else []
    if not missing:
        return produced, None
    kept = [f for f in produced if f.severity != PASS]
    if any(f.severity in (UNKNOWN, CRITICAL, HIGH, MEDIUM, LOW) for f in kept):
        return kept, None  # the check said what it could not see, or found a problem despite it
    names = ", ".join(name for name, _ in missing)
    kept.append(Finding(UNKNOWN, "node", N_("{title}: cannot be judged, input incomplete ({names})",
                                            title=Msg(chk.title), names=names),
                        detail=N_("The verdict of this check rests on input the source did not hold whole; "
                                  "without it, finding nothing would not mean nothing is wrong."),
                        evidence=tuple(Evidence(name, problem) for name, problem in missing),
                        check=chk.id, category=chk.category, acts=chk.acts))
    return kept, None


def _deadline_finding(chk: Check, deadline: Deadline, started: bool) -> Finding:
    """``chk`` did not run (``started`` False) or did not finish before ``deadline``: unknown, naming it."""
    limit = N_("the --deadline of {seconds} s", seconds=f"{deadline.seconds:g}")
    title = (N_("{title}: did not finish before {limit}", title=Msg(chk.title), limit=limit) if started
             else N_("{title}: not run, {limit} was reached", title=Msg(chk.title), limit=limit))
    return Finding(UNKNOWN, "node", title,
                   detail=N_("The run's time limit passed; this check's verdict is not known."),
                   evidence=(Evidence("--deadline", f"{deadline.seconds:g} s"),), check=chk.id, category=chk.category, acts=chk.acts)


def _judged_commands(chk: Check, produced: list[Finding], asked: set[str], cut: dict[str, Any]) -> list[Finding]:
    """``produced`` with its passes turned into one unknown when the check read a command the deadline cut."""
    lost = [cut[key] for key in sorted(asked) if key in cut]
    if not lost or any(f.severity != PASS for f in produced):
        return produced
    names = ", ".join(o.where for o in lost)
    return [Finding(UNKNOWN, "node", N_("{title}: cannot be judged, {names} did not finish",
                                        title=Msg(chk.title), names=names),
                    detail=N_("The run's time limit stopped a command this check reads."),
                    evidence=tuple(Evidence(o.where, o.reason or "") for o in lost),
                    check=chk.id, category=chk.category, acts=chk.acts)]


def _cut_command_findings(cut: dict[str, Any]) -> list[Finding]:
    """One unknown per command the deadline stopped or kept from starting."""
    return [Finding(UNKNOWN, "node", N_("{where}: did not finish before the deadline", where=o.where),
                    detail=N_("The run's time limit stopped this command or kept it from starting; the facts "
                              "it gives are missing from this result."),
                    evidence=(Evidence(o.where, o.reason or ""),), check="doctor.deadline", category="doctor", acts=Actor.OS)
            for _, o in sorted(cut.items())]


def select(checks: list[Check], only: list[str] | None) -> list[Check]:
    """Checks whose id equals or starts with one of ``only`` (``pcie`` selects ``pcie.*``)."""
    if not only:
        return checks
    return [c for c in checks if any(c.id == o or c.id.startswith(o.rstrip(".") + ".") for o in only)]


def run_checks(facts: Facts, only: list[str] | None = None, checks: list[Check] | None = None,
               deadline: Deadline | None = None) -> Result:
    """Run every (selected) check; a check that raises yields an ``unknown`` finding and the run goes on.

    A check that ``requires`` an optional input (the baseline) runs, after the others, exactly when
    the facts carry that input. With ``deadline``, a check still running when it passes is interrupted
    and the checks after it are not run, each reported ``unknown`` naming it, as is every command the
    deadline cut; a check that read a cut command cannot pass.
    """
    start = time.monotonic()
    errors: list[LoadError] = []
    if checks is None:
        checks, errors = load_checks()
    statuses: list[dict[str, Any]] = []
    findings: list[Finding] = [_load_error_finding(e) for e in errors]
    selected = select([c for c in checks if not c.requires], only)
    unknown = [o for o in only if not select(checks, [o])] if only is not None else []
    if unknown or (only is not None and not only):
        raise DoctorError(f"no check matches --only {','.join(unknown) or repr('')} (see `gnd checks`)")
    selected += [c for c in checks if c.requires and getattr(facts, c.requires, None) is not None]
    src = facts.source
    src.deadline = deadline
    for chk in selected:
        t0 = time.monotonic()
        asked: set[str] = set()
        src.asked = asked if deadline is not None else None
        try:
            if deadline is not None and deadline.passed:
                produced = [_deadline_finding(chk, deadline, started=False)]
            else:
                with interrupting(deadline):
                    produced = [f if f.check and f.category and f.acts else
                                replace(f, check=f.check or chk.id, category=f.category or chk.category,
                                        acts=f.acts or chk.acts)
                                for f in chk(facts)]
        except DeadlineReached:
            assert deadline is not None
            produced = [_deadline_finding(chk, deadline, started=True)]
        except Exception as exc:  # a broken check must not end the run
            produced = [Finding(severity=UNKNOWN, subject="node", title=N_("check {id} failed: {error}", id=chk.id,
                                                                        error=type(exc).__name__),
                                detail=str(exc), check=chk.id, category=chk.category, acts=chk.acts,
                                evidence=(Evidence(f"check {chk.id}", f"{type(exc).__name__}: {exc}"),))]
        finally:
            src.asked = None
        produced, reason = _judged_inputs(chk, facts, produced)
        if src.cut:
            produced = _judged_commands(chk, produced, asked, src.cut)
        findings.extend(produced)
        statuses.append({"id": chk.id, "title": chk.title, "category": chk.category, "plugin": chk.plugin,
                         **({"acts": chk.acts.value} if chk.acts is not None else {}),
                         **({"reason": reason} if reason else {}),
                         "status": _status(produced),
                         "findings": sum(1 for f in produced if f.severity != PASS),
                         "duration_ms": round((time.monotonic() - t0) * 1000, 2)})
    findings.extend(_cut_command_findings(src.cut))
    now = _utc_now()
    collected = now if src.kind == "live" else src.collected_at()
    source = {"kind": src.kind, "path": src.location, "hostname": facts.host.hostname, "collected_at": collected,
              "machine_id": facts.host.machine_id}
    return Result(source=source, checks=statuses, findings=rank(group_findings(findings, facts)),
                  inventory=build_inventory(facts),
                  duration_s=time.monotonic() - start,
                  generated_at=_utc_now())
