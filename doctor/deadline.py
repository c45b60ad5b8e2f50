"""``gnd check --deadline SECONDS``: one time limit for the whole run, commands and checks together.

A live command is given at most what is left of the deadline (its own timeout when that is shorter),
and is not started once the deadline has passed; a check that is still running when it passes is
interrupted (:class:`DeadlineReached`, raised by a timer signal in the main thread) and the checks not yet
run are not started. Each of those is reported ``unknown`` naming it (:mod:`doctor.runner`); what finished
is reported as usual, so the exit status speaks for what was seen.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator

from doctor.record import record

#: how long after the deadline the timer interrupts a check: a command stopped at the deadline itself
#: leaves the check that asked for it this long to conclude (unknown, naming the command)
GRACE_S = 0.25


class DeadlineReached(BaseException):
    """Raised inside a check when the deadline passes. A BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` in a parser swallows it."""


@record
class Deadline:
    """``seconds`` from ``start`` (``time.monotonic()``)."""

    seconds: float
    start: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(seconds, time.monotonic())

    def remaining(self) -> float:
        """Seconds left, never below 0."""
        return max(0.0, self.start + self.seconds - time.monotonic())

    @property
    def passed(self) -> bool:
        return self.remaining() <= 0.0

    def describe(self) -> str:
        """``the --deadline of 45 s``, for the unknown findings' titles."""
        return f"the --deadline of {self.seconds:g} s"


@contextlib.contextmanager
def interrupting(deadline: Deadline | None) -> Iterator[None]:
    """Raise :class:`DeadlineReached` in the code run inside :data:`GRACE_S` after ``deadline`` (main thread, POSIX;
    elsewhere the commands' shortened timeouts and the check-by-check test are the bound)."""
    import threading

    usable = (deadline is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    assert deadline is not None

    def fire(signum: int, frame: object) -> None:
        raise DeadlineReached()

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, deadline.remaining() + GRACE_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def parse_seconds(text: str) -> float:
    """The ``--deadline`` value: seconds, more than 0 (argparse type)."""
    import argparse

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, not {text!r}")
    return value
