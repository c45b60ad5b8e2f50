"""How the TUI obtains a result: open the source afresh and run the checks (called in a worker thread)."""

from __future__ import annotations

from collections.abc import Callable

from doctor.runner import Result

Loader = Callable[[], Result]


def make_loader(source: str | None, only: list[str] | None = None, deploy: tuple[str, ...] = ()) -> Loader:
    """A callable that re-opens ``source`` (re-reading the live host or the snapshot) and runs the checks."""

    def load() -> Result:
        from doctor.i18n import localise
        from doctor.pipeline import analyse

        return localise(analyse(source, only=only, deploy=deploy))  # the TUI shows one language

    return load
