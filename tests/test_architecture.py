"""The layering rules of docs/architecture.md, checked on the source: what may import what."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("doctor", "checks", "reports")


def _imports(path: Path) -> Iterator[tuple[str, str, int]]:
    """(module, imported name or "", line) for every import in ``path``, lazy ones included."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                yield node.module, alias.name, node.lineno


def _modules() -> Iterator[Path]:
    for top in PACKAGES:
        yield from sorted((ROOT / top).rglob("*.py"))


def test_doctor_imports_reports_only_in_the_commands() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in (ROOT / "doctor").rglob("*.py")
           if "commands" not in p.relative_to(ROOT).parts
           for mod, _, line in _imports(p) if mod == "reports" or mod.startswith("reports.")]
    assert bad == []


def test_no_private_name_crosses_a_module_boundary() -> None:
    bad = []
    for path in _modules():
        top = path.relative_to(ROOT).parts[0]
        for mod, name, line in _imports(path):
            if mod.split(".")[0] not in PACKAGES:
                continue
            private_module = any(part.startswith("_") and part != "__future__" for part in mod.split("."))
            gettext_alias = mod == "doctor.i18n" and name == "_"  # the gettext convention, public by intent
            if (name.startswith("_") and name != "__version__" and not gettext_alias) or (private_module and mod.split(".")[0] != top):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {mod}.{name}".rstrip("."))
    assert bad == []


def test_checks_never_import_sources_or_renderers() -> None:
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in (ROOT / "checks").rglob("*.py")
           for mod, _, line in _imports(p)
           if mod.startswith(("reports", "doctor.sources", "doctor.commands", "doctor.cli"))]
    assert bad == []
