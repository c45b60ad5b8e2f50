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
    config and deployment files (``enforce_eager``); ``rewrites``: options whose deployment-file lines
    a fix of the check rewrites (such a line is kept whole, the token patterns still masking it). Spelling of options is compared with ``_`` as ``-``,
    case-insensitively.
    """

    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    rewrites: tuple[str, ...] = ()


def reads(flags: Iterable[str] = (), env: Iterable[str] = (), params: Iterable[str] = (),
          keys: Iterable[str] = (), rewrites: Iterable[str] = ()) -> Reads:
    """A :class:`Reads` from any iterables (a check's rule table, a dict of names)."""
    return Reads(tuple(flags), tuple(env), tuple(params), tuple(keys), tuple(rewrites))
