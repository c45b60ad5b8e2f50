"""Test helpers: facts over a recorded base tree with a few files overlaid (the hotsos way)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from doctor.facts import Facts
from doctor.findings import Finding
from doctor.registry import load_checks
from doctor.runner import Result, run_checks
from doctor.sources import SnapshotSource, Source
from doctor.sources.tree import Link, OsTree, OverlayTree, Tree

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
HEALTHY = FIXTURES / "hgx-h100-healthy"
SICK = FIXTURES / "hgx-h100-sick"

__all__ = ["Link", "FIXTURES", "HEALTHY", "SICK", "healthy", "sick", "source", "facts", "run", "findings_of", "empty_tree"]


class _Empty(Tree):
    def kind(self, path: str) -> str | None:
        return "dir" if path == "" else None

    def readlink(self, path: str) -> str | None:
        return None

    def listdir(self, path: str) -> list[str] | None:
        return [] if path == "" else None

    def read(self, path: str, cap: int = 0) -> bytes | None:
        return None


def healthy() -> Path:
    """The committed healthy HGX fixture (tests/test_fixture_generator.py keeps it equal to the generator)."""
    return HEALTHY


def sick() -> Path:
    """The committed sick HGX fixture."""
    return SICK


def empty_tree() -> Tree:
    return _Empty()


def source(changes: Mapping[str, bytes | str | Link | None] | None = None, base: Path | None = HEALTHY) -> Source:
    """A snapshot source: ``base`` (a fixture tree, or None for an empty tree) with ``changes`` overlaid,
    analysed as the root of the host under test (``host_root``: what a fix script is bound to, as on the
    live host), unlike a snapshot given to ``gnd`` (``open_source``), which is a copy."""
    tree: Tree = OsTree(str(base)) if base is not None else empty_tree()
    if changes:
        tree = OverlayTree(tree, changes)
    src = SnapshotSource(tree, str(base) if base else "<overlay>")
    src.host_root = True
    return src


def facts(changes: Mapping[str, bytes | str | Link | None] | None = None, base: Path | None = HEALTHY) -> Facts:
    return Facts(source(changes, base))


def run(f: Facts, only: list[str] | None = None) -> Result:
    checks, _ = load_checks()
    return run_checks(f, only=only, checks=checks)


def findings_of(f: Facts, check_id: str) -> list[Finding]:
    """Findings of one check, in rank order."""
    return [x for x in run(f, only=[check_id]).findings if x.check == check_id]


def tar_outcome(path: Path) -> object:
    """What a snapshot tarball reads as: every entry (kind, bytes, link target, too large) and folder listing, or
    ``refused: <the one-line error>``."""
    from doctor.errors import DoctorError
    from doctor.sources.tree import TarTree

    try:
        t = TarTree(str(path))
    except DoctorError as exc:
        return "refused: " + str(exc)
    entries = t.entries()
    return ({k: (kind, t.read(k), target, too_large) for k, (kind, target, too_large) in entries.items()},
            {k: t.listdir(k) for k, (kind, _, _) in entries.items() if kind == "dir"})
