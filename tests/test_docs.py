"""Docs that resolve: every check in the catalog is listed in the README and explained in docs/checks.md."""

from __future__ import annotations

import re
from pathlib import Path

from doctor.registry import load_checks

ROOT = Path(__file__).resolve().parent.parent


def test_every_check_is_in_the_readme_catalog_and_docs() -> None:
    checks, errors = load_checks()
    assert not errors
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rules = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^## `([a-z0-9_.]+)`", rules, flags=re.M))
    missing_readme = [c.id for c in checks if f"`{c.id}`" not in readme]
    missing_rules = [c.id for c in checks if c.id not in headings]
    assert missing_readme == [] and missing_rules == []


def test_code_cites_rules_that_exist() -> None:
    """``docs/checks.md#anchor`` references in the code name an anchor that the page defines."""
    rules = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', rules))
    cited = set()
    for path in [*ROOT.glob("doctor/**/*.py"), *ROOT.glob("checks/*.py")]:
        cited |= set(re.findall(r"docs/checks\.md#([a-z0-9-]+)", path.read_text(encoding="utf-8")))
    assert cited and cited - anchors == set()


def test_the_catalogue_blocks_match_the_check_registry() -> None:
    """README's table and docs/checks.md's contents are generated (python -m fixtures.tools.checks_docs)."""
    from fixtures.tools.checks_docs import anchor, builtin, expected

    for rel, text in expected().items():
        assert (ROOT / rel).read_text(encoding="utf-8") == text, f"{rel} drifted: run python -m fixtures.tools.checks_docs"
    anchors = set(re.findall(r'<a id="([a-z0-9-]+)"></a>', (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")))
    assert [c.id for c in builtin() if anchor(c.id) not in anchors] == []


def test_docs_name_no_module_that_does_not_exist() -> None:
    """Paths like ``checks/_sysctl_fix.py`` or ``doctor/derived/gpu.py`` in the docs are files of the tree."""
    named = set()
    for doc in [ROOT / "README.md", *ROOT.glob("docs/*.md")]:
        if doc.name == "performance.md":  # the history of earlier rounds names the code they removed
            continue
        named |= {(doc.name, p) for p in re.findall(r"`((?:checks|doctor|reports)/[\w/]+\.py)`", doc.read_text(encoding="utf-8"))}
    assert sorted((doc, p) for doc, p in named if not (ROOT / p).exists()) == []
