"""Layering rules of issue 10: one PCIe generation table, one link verdict (private imports: tests/test_architecture.py).

Text/AST scans of the source tree, kept simple: each rule names the file and line that breaks it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("doctor", "checks", "reports")
#: Renderers (and readers of saved results) that must read the link verdict, never compute it.
RENDERERS = ("reports", "doctor/tui", "doctor/fleet")
#: The only module allowed to hold the generation table.
GEN_TABLE_HOME = "doctor/facts/pcie_gen.py"
PCIE_SPEEDS = {2.5, 5.0, 8.0, 16.0, 32.0}
#: A link field: current/maximum/expected/capable speed or width, as an attribute, name or key.
LINK_FIELD = re.compile(r"^(cur|max|exp|cap|want)_?(speed|width)$")

def _modules(*roots: str) -> list[Path]:
    return sorted(p for r in roots for p in (ROOT / r).rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _gen_tables(tree: ast.AST) -> list[int]:
    """Lines of dict literals keyed by three or more PCIe link speeds (a generation/bandwidth table)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, float)}
            if len(keys & PCIE_SPEEDS) >= 3:
                out.append(node.lineno)
    return out


def _fields(node: ast.AST) -> set[str]:
    """Link fields an expression mentions: ``x.cur_speed``, ``cur_width``, ``d["max_width"]``, ``d.get("max_speed")``."""
    out: set[str] = set()
    for sub in ast.walk(node):
        name = sub.attr if isinstance(sub, ast.Attribute) else sub.id if isinstance(sub, ast.Name) else \
            sub.value if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else None
        if name and LINK_FIELD.match(name):
            out.add(name)
    return out


def _link_comparisons(tree: ast.AST) -> list[int]:
    """Lines ordering one link field against another (``cur_width < max_width``): judging a link."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
            sides = [_fields(node.left), *(_fields(c) for c in node.comparators)]
            if sum(1 for s in sides if s) >= 2:
                out.append(node.lineno)
    return out


def test_one_generation_table() -> None:
    found = [f"{_rel(p)}:{line}" for p in _modules(*PACKAGES)
             for line in _gen_tables(ast.parse(p.read_text()))]
    assert found == [f"{GEN_TABLE_HOME}:{line}" for line in _gen_tables(ast.parse((ROOT / GEN_TABLE_HOME).read_text()))]
    assert len(found) == 2, found  # LANE_GBPS and GENERATION, both in the one module


def test_renderers_never_judge_a_link() -> None:
    bad = [f"{_rel(p)}:{line}" for p in _modules(*RENDERERS) for line in _link_comparisons(ast.parse(p.read_text()))]
    assert not bad, f"compare link speeds/widths via doctor.derived.links, not here: {bad}"


def test_the_scans_catch_what_they_forbid() -> None:
    """The rules fire on the code they were written against (else the tests above prove nothing)."""
    old_tui = "GENERATIONS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4}\nslow = cs < want_speed\nnarrow = dev['cur_width'] < lower('max_width')"
    tree = ast.parse(old_tui)
    assert _gen_tables(tree) == [1]
    assert _link_comparisons(tree) == [3]
    old_svg = "speed_low = (self.cur_speed or 0) < (self.cap_speed or 0)\nok = dev.cur_width != want"
    assert _link_comparisons(ast.parse(old_svg)) == [1]  # a baseline's "differs from x8" is not a verdict


def test_inventory_does_not_import_the_fleet() -> None:
    text = (ROOT / "doctor/inventory.py").read_text()
    assert "doctor.fleet" not in text


def _check_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of every import of the ``checks`` package or one of its modules, lazy ones included."""
    out = []
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
        out += [(node.lineno, n) for n in names if n == "checks" or n.startswith("checks.")]
        if isinstance(node, ast.ImportFrom) and node.level:
            out.append((node.lineno, "." * node.level + (node.module or "")))
    return out


def test_no_check_imports_another_check() -> None:
    """Shared rules are derived facts (doctor/derived) or fix builders (doctor/fixes), never another check."""
    bad = [f"{_rel(p)}:{line} imports {mod}" for p in _modules("checks")
           for line, mod in _check_imports(ast.parse(p.read_text()))]
    assert not bad, bad
    assert not [p for p in (ROOT / "checks").glob("_*.py") if p.name != "__init__.py"], "helpers go to doctor/derived"
    assert _check_imports(ast.parse("from checks._roce import roce_ports\nimport checks.runtime_memlock\n"
                                    "from . import gpu_ecc")) == [(1, "checks._roce"), (2, "checks.runtime_memlock"),
                                                                   (3, ".")]
