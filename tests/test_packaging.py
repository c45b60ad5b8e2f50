"""Every Python package in the tree is listed in pyproject.toml (discovery is off: fixtures have link loops)."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def test_all_packages_are_listed() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("doctor", "checks", "reports")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert found == listed
