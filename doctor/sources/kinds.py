"""What kind of source a root is, decided from its top-level names: the one rule every reader uses.

A sosreport has ``sos_commands/`` or ``sos_reports/``; a ``gnd collect`` snapshot has ``sys/``,
``proc/``, ``commands/`` or its manifest. A root with neither and a single folder (an unpacked
``sosreport-NAME/`` or a snapshot tarball's top folder) is looked at inside that folder, unless the
folder is itself a mirrored root folder (a lone ``etc/``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

SNAPSHOT, SOSREPORT, BUGREPORT = "snapshot", "sosreport", "bugreport"
MANIFEST = "gnd-manifest.json"
SNAPSHOT_MARKERS = frozenset({"sys", "proc", "commands", MANIFEST})
SOS_MARKERS = frozenset({"sos_commands", "sos_reports"})
#: Top-level names that make a folder a source (a snapshot or a sosreport).
SOURCE_MARKERS = SNAPSHOT_MARKERS | SOS_MARKERS
#: A lone top folder with one of these names is part of the mirrored tree, not a wrapper around it.
ROOT_FOLDERS = SOURCE_MARKERS | {"etc"}


def source_kind(names: Iterable[str]) -> str | None:
    """``sosreport``, ``snapshot`` or ``None`` for a root whose top-level entries are ``names``."""
    top = set(names)
    if top & SOS_MARKERS:
        return SOSREPORT
    if top & SNAPSHOT_MARKERS:
        return SNAPSHOT
    return None


def inner_folder(names: Iterable[str], is_dir: Callable[[str], bool]) -> str | None:
    """The one folder to look inside when the root is no source itself, else ``None``."""
    top = list(names)
    if len(top) != 1 or top[0] in ROOT_FOLDERS or not is_dir(top[0]):
        return None
    return top[0]
