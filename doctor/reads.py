"""What a check reads from the host's free-form settings: the values kept when everything else is masked.

A check declares its reads on :func:`doctor.registry.check` (``reads=Reads(...)``); derived facts that
read values declare theirs next to the code (``READS`` in their module). :func:`doctor.allowlist.allowed`
unions them: a command-line option value, an environment value, a kernel parameter value or a config
key's value survives collection and output only when one of these declarations names it
(docs/architecture.md, "What leaves the host").
"""

from __future__ import annotations

from collections.abc import Iterable

from doctor.record import record


@record
class Reads:
    """Names whose values are read.

    ``flags``: command-line options (``--enforce-eager``; ``--compilation-config`` also covers its dotted
    children ``--compilation-config.mode``; a name ending in ``*`` covers every option it begins);
    ``env``: environment variables; ``params``: kernel command-line parameters; ``keys``: keys of YAML/JSON
    config and deployment files (``enforce_eager``). Spelling of options is compared with ``_`` as ``-``,
    case-insensitively.
    """

    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()

    def __add__(self, other: Reads) -> Reads:
        return Reads(self.flags + other.flags, self.env + other.env, self.params + other.params,
                     self.keys + other.keys)


def reads(flags: Iterable[str] = (), env: Iterable[str] = (), params: Iterable[str] = (),
          keys: Iterable[str] = ()) -> Reads:
    """A :class:`Reads` from any iterables (a check's rule table, a dict of names)."""
    return Reads(tuple(flags), tuple(env), tuple(params), tuple(keys))
