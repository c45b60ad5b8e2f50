"""The counted-work measure (tests/hostile/work.py) passes linear work and fails quadratic work."""

from __future__ import annotations

from tests.hostile.work import LINEAR, LINEAR_CPU, calls, cpu_growth, growth


def _pairs(n: int) -> int:
    """Compares every item with every other: the shape of the quadratic checks found before."""
    items = list(range(n))
    return sum(1 for a in items for b in items if abs(a - b) == 1)


def _once(n: int) -> int:
    seen: dict[int, int] = {}
    for i in range(n):
        seen[i] = abs(i - 1)
    return len(seen) + len(sorted(seen, key=abs))


def test_calls_are_counted_the_same_each_time() -> None:
    assert calls(lambda: _once(1000))[0] == calls(lambda: _once(1000))[0] > 1000


def test_linear_work_passes_and_quadratic_work_fails() -> None:
    linear, _ = growth(_once, 400)
    quadratic, _ = growth(_pairs, 100)
    assert 1.5 < linear < LINEAR < quadratic, (linear, quadratic)


def test_cpu_growth_tells_a_linear_pattern_from_a_quadratic_one() -> None:
    import re

    restarts = re.compile(r"a*c")  # tried from every position of a line of a's: quadratic

    def scan(n: int) -> None:
        re.sub(r"[^a]", "", "a" * n * 8)

    linear = cpu_growth(scan, 1000)
    quadratic = cpu_growth(lambda n: restarts.search("a" * n), 500)
    assert linear < LINEAR_CPU < quadratic, (linear, quadratic)
