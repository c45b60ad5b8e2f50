"""Work counted, not timed: how a test fails on a quadratic algorithm whatever the machine's speed or load.

The guide keeps timings in bench/ (as ratios against the previous commit) and out of tests: a time
bound fails on a slow or busy machine and passes a quadratic algorithm on a fast one. A test that
must fail on cost that grows faster than the input counts the function calls (Python and built-in,
through :mod:`cProfile`, whose counts do not depend on speed) of the same work at three sizes
``n``, ``2n`` and ``4n``: the growth from ``2n`` to ``4n`` is about twice the growth from ``n`` to
``2n`` when the work is linear (a little more for n log n) and four times when it is quadratic.
Work that does not grow with ``n`` (start-up, the fixture node, the first ``MAX`` findings shown)
drops out of both growths.

Work done inside one built-in call (a regular expression scanning a hostile line) makes no calls to
count: :func:`cpu_growth` compares its CPU time at ``n`` and ``4n`` instead, the least of three runs
each (two runs), a ratio of two times on the same machine (linear: 4, quadratic: 16), never a time bound.
"""

from __future__ import annotations

import cProfile
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: the largest accepted ratio of the growths (linear: 2, n log n: about 2.2, quadratic: 4)
LINEAR = 3.0


def calls(work: Callable[[], T]) -> tuple[int, T]:
    """The number of function calls ``work()`` makes (a deterministic count of its work) and its value."""
    profile = cProfile.Profile()
    profile.enable()
    try:
        value = work()
    finally:
        profile.disable()
    return sum(entry.callcount for entry in profile.getstats()), value


def growth(work: Callable[[int], T], n: int) -> tuple[float, T]:
    """How the calls of ``work(size)`` grow from ``2n`` to ``4n`` against ``n`` to ``2n`` (see the module),
    after one run at ``n`` that pays what happens once (imports, compiled patterns, warm caches); and
    the value of ``work(4n)``, for the test's own assertions."""
    work(n)
    small, _ = calls(lambda: work(n))
    middle, _ = calls(lambda: work(2 * n))
    large, value = calls(lambda: work(4 * n))
    assert middle > small, "the work does not grow with its size: nothing was measured"
    return (large - middle) / (middle - small), value


#: the largest accepted ratio of CPU times at ``4n`` and ``n`` (linear: 4, quadratic: 16)
LINEAR_CPU = 8.0


def cpu_growth(work: Callable[[int], object], n: int) -> float:
    """How the CPU time of ``work(size)`` grows from ``n`` to ``4n`` (see the module), after one run at ``n``;
    ``n`` doubled first until its run takes 5 ms (less is too close to the clock's step to compare)."""

    def least(size: int) -> float:
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            work(size)
            best = min(best, time.process_time() - start)
        return best

    work(n)
    small = least(n)
    while small < 0.005:
        n *= 2
        small = least(n)
    return least(4 * n) / small
