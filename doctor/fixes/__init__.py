"""Fix builders: structured, validated parameters in, fix steps out.

Checks never write command text: they call a builder by name with parameters (``make``). The
builder validates every parameter's shape (known sysctl keys and value ranges, known modules,
interface names and PCI addresses) and returns ``FixStep``s; each parameter also declares the host
fact it must come from (``Param(Fact.X)``: an interface of the host, what a rollback restores as the
host has it now) or that it is the check's own recommendation on the host's facts
(``Param(own=True)``), checked against :class:`Context`. A fix script rebuilds each fix from its
builder name and parameters (``rebuild``), so command text read from a JSON file is never run.
"""

from __future__ import annotations

from doctor.facts import Sysctls
from doctor.findings import Fix
from doctor.fixes.base import BUILDERS, Context, FixRejected, load_builders, make, rebuild

__all__ = ["BUILDERS", "Context", "FixRejected", "load_builders", "make", "rebuild", "sysctl_fix"]


def sysctl_fix(wanted: dict[str, str], current: Sysctls, conf_name: str, notes: str = "") -> Fix:
    """For checks: set ``wanted`` now and at boot (``conf_name`` in /etc/sysctl.d), undo to ``current``."""
    previous = {k: v for k in wanted if (v := current.get(k)) is not None}
    return make("sysctl", notes, set=dict(wanted), previous=previous, conf=conf_name)
