"""Bad input never crashes: garbage, binary, truncated or missing files give unknown findings, not errors."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from doctor.facts import Facts
from doctor.runner import run_checks
from tests.helpers import HEALTHY, SICK, source

GARBAGE = [b"", b"\x00\xff\xfe\x00garbage\x00", b"-1\n", b"Unknown\n", b"99999999999999999999\n", b"\n\n\n",
           b"0x\n", "ünïcødé ✓\n".encode(), b"4: \n", b"0-\n", b"a,b-c\n", b"fe80::\n", b"16.0 GT/s PCIe x\n"]


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("base", [HEALTHY, SICK], ids=["healthy", "sick"])
def test_random_garbage_never_breaks_a_check(base: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = _files(base)
    changes: dict[str, bytes | None] = {}
    for path in rng.sample(files, 250):
        changes[path] = None if rng.random() < 0.2 else rng.choice(GARBAGE)
    result = run_checks(Facts(source(changes, base)))
    broken = [f for f in result.findings if f.title.startswith("check ") and " failed: " in f.title]
    assert not broken, [(f.check, f.detail) for f in broken]


@pytest.mark.parametrize("base", [HEALTHY, SICK], ids=["healthy", "sick"])
def test_every_file_truncated_to_half(base: Path) -> None:
    changes = {}
    for path in _files(base):
        data = (base / path).read_bytes()
        changes[path] = data[: len(data) // 2]
    result = run_checks(Facts(source(changes, base)))
    assert not [f for f in result.findings if " failed: " in f.title]


def test_empty_source_reports_unknown_not_pass() -> None:
    result = run_checks(Facts(source({}, base=None)))
    assert not [f for f in result.findings if " failed: " in f.title]
    assert any(f.severity == "unknown" for f in result.findings)
    assert not any(f.severity in ("critical", "high", "medium") for f in result.findings)
