"""Fix builders: structured, validated parameters in, fix steps out.

Checks never write command text: they call a builder by name with parameters (``make``). The
builder validates every parameter against what its check can produce (known sysctl keys and value
ranges, known modules, interface names and PCI addresses of the right shape and, when the result's
inventory is given, present in it) and returns ``FixStep``s. A fix script rebuilds each fix from
its builder name and parameters (``rebuild``), so command text read from a JSON file is never run.
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
