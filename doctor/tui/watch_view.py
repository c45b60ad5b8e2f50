"""``gnd watch --tui``: the samples of a watch, live (links and counters refresh at each sample).

The sampling runs in a worker thread (:func:`doctor.watch.run_watch`); each sample is handed to the
screen, which redraws two tables: every link with its current, top and lowest reading and its
transitions, and every error counter with its growth and rate. ``q`` stops the watch early; the
record of what was sampled is returned either way and the checks are run on it as without ``--tui``.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from doctor.facts.watch import WatchRecord
from doctor.i18n import _
from doctor.watch import Recorder, Sample, run_watch


def _speed(value: float | None) -> str:
    return "?" if value is None else f"{value:g} GT/s"


class WatchApp(App[WatchRecord | None]):
    """Links and counters of a running watch."""

    CSS = "#status { height: 1; padding: 0 1; } DataTable { height: 1fr; }"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "stop", _("Stop and report"))]

    def __init__(self, location: str | None, duration: float, interval: float) -> None:
        super().__init__()
        self.location, self.duration, self.interval = location, duration, interval
        self.stop_event = threading.Event()
        self.record: WatchRecord | None = None

    def compose(self) -> ComposeResult:
        yield Static(_("starting the watch..."), id="status")
        yield DataTable(id="links", zebra_stripes=True)
        yield DataTable(id="counters", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#links", DataTable).add_columns(
            _("link"), _("role"), _("now"), _("top"), _("lowest"), _("transitions"), _("busy samples"))
        self.query_one("#counters", DataTable).add_columns(_("subject"), _("counter"), _("value"), _("growth"))
        self.sample_in_background()

    @work(thread=True, exclusive=True)
    def sample_in_background(self) -> None:
        record = run_watch(self.location, self.duration, self.interval, stopped=self.stop_event.is_set,
                           on_sample=lambda s, r: self.call_from_thread(self.show, s, r),
                           sleep=self._sleep)
        self.call_from_thread(self.exit, record)

    def _sleep(self, seconds: float) -> None:
        self.stop_event.wait(seconds)  # the stop key ends the wait at once

    def show(self, sample: Sample, recorder: Recorder) -> None:
        links = self.query_one("#links", DataTable)
        links.clear()
        for address, link in recorder.links.items():
            now = sample.links.get(address, (None, None))
            speeds = [k[0] for k in link.time_at if k[0] is not None]
            widths = [k[1] for k in link.time_at if k[1] is not None]
            links.add_row(address, link.role, f"{_speed(now[0])} x{now[1] or '?'}",
                          f"{_speed(max(speeds, default=None))} x{max(widths, default='?')}",
                          f"{_speed(min(speeds, default=None))} x{min(widths, default='?')}",
                          str(link.transitions), str(link.busy_samples))
        counters = self.query_one("#counters", DataTable)
        counters.clear()
        for (subject, name), c in recorder.counters.items():
            counters.add_row(subject, name, str(c.last), f"+{c.growth}" if c.growth else "0")
        status = _("sample {n} at t={t} s of {d} s; q stops and reports").format(
            n=recorder.samples, t=f"{sample.t:.0f}", d=f"{self.duration:g}")
        self.query_one("#status", Static).update(status)

    def action_stop(self) -> None:
        self.stop_event.set()


def watch_live(location: str | None, duration: float, interval: float, **app_options: Any) -> WatchRecord:
    """Run the live view until the watch ends or ``q``; the record of what was sampled."""
    app = WatchApp(location, duration, interval)
    record = app.run(**app_options)
    if record is None:  # the app was closed before the worker finished (ctrl+c)
        app.stop_event.set()
        return run_watch(location, 0.0, interval)
    return record
