"""What the TUI shows, as plain data: filters, the diff between two runs, and the text ``c`` copies.

Nothing here imports Textual or Rich, so it is tested directly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from doctor.diff import BETTER, UNCHANGED, WORSE, pair_findings
from doctor.findings import INFO, PASS, SEVERITIES, Finding
from doctor.i18n import N_, _
from doctor.record import record

#: Severity filter choices, in the order ``s`` cycles through them: (label, severities shown).
SEVERITY_FILTERS: tuple[tuple[str, frozenset[str]], ...] = (
    (N_("all but pass"), frozenset(s for s in SEVERITIES if s != PASS)),
    *((s, frozenset({s})) for s in SEVERITIES),
)
#: Category filter choices, in the order ``f`` cycles through them: (label, categories shown; empty = all).
CATEGORY_FILTERS: tuple[tuple[str, frozenset[str]], ...] = (
    (N_("all"), frozenset()),
    ("PCIe", frozenset({"pcie", "iommu"})),
    ("NUMA", frozenset({"numa"})),
    (N_("network"), frozenset({"network"})),
    ("RDMA", frozenset({"rdma"})),
    (N_("runtime"), frozenset({"runtime"})),
    ("GPU", frozenset({"gpu"})),
    (N_("other"), frozenset({"baseline", "doctor"})),
)
#: Severities not listed as problems of a device.
NOT_PROBLEMS = frozenset({PASS, INFO})


def clean(text: object) -> str:
    """Host data made safe to draw by the one sanitiser (:func:`doctor.textsafe.clean`, line breaks
    kept): control and invisible characters (escape sequences, bidi controls, fillers) become U+FFFD."""
    from doctor.textsafe import clean as one_sanitiser

    return one_sanitiser(text, multiline=True)


def category_label(category: str) -> str:
    """The filter label a finding's category belongs to (``iommu`` -> ``PCIe``)."""
    for label, cats in CATEGORY_FILTERS[1:]:
        if category in cats:
            return label
    return clean(category) if category else N_("other")


def filter_findings(findings: Iterable[Finding], severity: int = 0, category: int = 0) -> list[Finding]:
    """Findings passing the ``severity``-th and ``category``-th filter, rank order kept."""
    sevs = SEVERITY_FILTERS[severity % len(SEVERITY_FILTERS)][1]
    cats = CATEGORY_FILTERS[category % len(CATEGORY_FILTERS)][1]
    return [f for f in findings if f.severity in sevs and (not cats or f.category in cats)]


@record
class RunDiff:
    """Findings of the previous run against the current one, by the rule of :mod:`doctor.diff`."""

    fixed: tuple[Finding, ...]
    new: tuple[Finding, ...]
    changed: tuple[tuple[Finding, Finding], ...]  # (before, after) whose severity moved
    unchanged: tuple[Finding, ...]

    @property
    def summary(self) -> str:
        parts = [_("{n} fixed").format(n=len(self.fixed)), _("{n} new").format(n=len(self.new))]
        if self.changed:
            parts.append(_("{n} changed").format(n=len(self.changed)))
        parts.append(_("{n} unchanged").format(n=len(self.unchanged)))
        return _(", ").join(parts)


def diff_runs(before: Sequence[Finding], after: Sequence[Finding]) -> RunDiff:
    """What a re-run changed: findings gone, appeared, moved in severity, or still there (pass ignored)."""
    pairs = pair_findings(before, after)
    return RunDiff(
        fixed=tuple(fb for _, fb, fa, _ in pairs if fb and not fa),
        new=tuple(fa for _, fb, fa, _ in pairs if fa and not fb),
        changed=tuple((fb, fa) for _, fb, fa, change in pairs if fb and fa and change in (WORSE, BETTER)),
        unchanged=tuple(fa for _, fb, fa, change in pairs if fa and fb and change == UNCHANGED),
    )


def fix_script(f: Finding) -> str:
    """The fix commands ``c`` copies: runtime commands, then the persistent ones under a comment."""
    lines: list[str] = [f"# gnd: {f.check} {f.subject}".replace("\n", " ")]
    lines.extend(f.fix.runtime)
    if f.fix.persistent:
        lines.append("# " + _("make it survive a reboot:"))
        lines.extend(f.fix.persistent)
    return clean("\n".join(lines)) + "\n" if (f.fix.runtime or f.fix.persistent) else ""


def _mentions(text: str, names: Sequence[str]) -> bool:
    return any(re.search(rf"(?<![\w:.]){re.escape(n)}(?![\w])", text) for n in names if n)


def relevance(f: Finding, names: Sequence[str]) -> int:
    """2 when ``f``'s subject names one of ``names`` (a PCI address, netdev or RDMA device), 1 when its
    title, related items or evidence do, 0 when it is not about them."""
    if _mentions(f.subject, names):
        return 2
    return int(_mentions(" ".join([f.title, *f.related, *(e.source for e in f.evidence)]), names))


def about_device(findings: Iterable[Finding], names: Sequence[str]) -> list[Finding]:
    """Problems about a device, those naming it as their subject first, then in rank order."""
    scored = [(relevance(f, names), f) for f in findings if f.severity not in NOT_PROBLEMS]
    return [f for r, f in sorted(scored, key=lambda x: (-x[0], x[1].rank)) if r]
