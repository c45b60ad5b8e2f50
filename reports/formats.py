"""The output formats, each declared once: name, suffixes, media type, heavy import, renderers.

A renderer is ``module:function`` taking the view (a :class:`~doctor.runner.Result`, a
:class:`~doctor.diff.Diff` or a :class:`~doctor.fleet.fleet.FleetReport`) and options, returning
``str`` or ``bytes``; it is imported only when used, so ``gnd check`` loads no Jinja2, WeasyPrint or
Textual. ``OFFERED`` says which formats each command offers, in the order its ``--help`` lists them.
This module imports only the standard library and ``doctor`` (every ``gnd`` that parses arguments loads it).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from doctor.errors import DoctorError
from doctor.record import record


@record
class Format:
    """One output format and its renderer per kind of view (the view's class name)."""

    name: str
    suffixes: tuple[str, ...]
    media_type: str
    heavy: bool  # imports Jinja2 or WeasyPrint
    renderers: tuple[tuple[str, str], ...]  # (view class name, "module:function")
    #: "module:function" making the files the output embeds from the view as the command has it, before
    #: translation and sanitising; the renderer gets it, bound to the view, as its ``attachments`` option
    #: (and calls it when it needs them)
    embeds: str = ""

    def renderer(self, kind: str) -> Any:
        """The render function for views of class ``kind``; ImportError when its module is not installed."""
        return _function(dict(self.renderers)[kind])

    def render(self, view: object, **options: Any) -> str | bytes:
        """``view`` in this format (``options``: ``verbose``, ``colour``, ``pdf_worker``, ``facts`` where they
        apply); every format but JSON in the current language (the prose checks wrote translated here, once).
        A format that embeds files (the PDF: the fix script and the JSON result) makes them from ``view``
        first, so that they are what ``gnd fix-script`` and ``gnd check --format json`` write for it.

        Every string of the view goes through the one sanitiser (:func:`doctor.textsafe.sanitised`),
        after translation, so no renderer can show a field that did not; HTML and Markdown escaping
        come after it."""
        from doctor.textsafe import sanitised

        render = self.renderer(type(view).__name__)
        if self.embeds and "attachments" not in options:
            from functools import partial

            options = {**options, "attachments": partial(_function(self.embeds), view, **options)}
        if self.name != "json":
            from doctor.i18n import localise

            view = localise(view)
        return render(sanitised(view), **options)


_JSON = "reports.formats:render_json"
FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("text", (".txt",), "text/plain", False,
           (("Result", "reports.text:render_text"), ("Diff", "reports.diff:render_text"),
            ("FleetReport", "reports.fleet:render_text"))),
    Format("json", (".json",), "application/json", False,
           (("Result", _JSON), ("Diff", _JSON), ("FleetReport", _JSON))),
    Format("prometheus", (".prom",), "text/plain; version=0.0.4", False,
           (("Result", "reports.prometheus:render_prometheus"),)),
    Format("html", (".html", ".htm"), "text/html", True,
           (("Result", "reports.html:render_html"), ("Diff", "reports.diff:render_html"),
            ("FleetReport", "reports.fleet:render_html"))),
    Format("pdf", (".pdf",), "application/pdf", True, (("Result", "reports.pdf:render_pdf"),),
           embeds="reports.pdf:embedded_files"),
    Format("md", (".md", ".markdown"), "text/markdown", False,
           (("Result", "reports.markdown:render_markdown"),)),
)}
#: the formats each command offers, in its order (the first is the default where the command has one)
OFFERED: dict[str, tuple[str, ...]] = {
    "check": ("text", "json", "prometheus"),
    "report": ("html", "pdf", "md", "json"),
    "diff": ("text", "json", "html"),
    "fleet": ("text", "json", "html"),
    "tui": ("html", "md", "pdf"),
    "watch": ("text", "json", "prometheus", "html", "md", "pdf"),
}


def _function(name: str) -> Any:
    """The function ``module:function`` names (its module imported now)."""
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def render_json(view: Any, **_options: Any) -> str:
    """The JSON contract of any view (``to_dict()``), indented, ending with a newline."""
    import json

    return json.dumps(view.to_dict(), indent=2) + "\n"


def from_suffix(command: str, path: str) -> str:
    """The format of ``command`` that ``path``'s suffix names; one-line DoctorError when none does."""
    suffix = os.path.splitext(path)[1].lower()
    for name in OFFERED[command]:
        if suffix in FORMATS[name].suffixes:
            return name
    names = [FORMATS[n].suffixes[0] for n in OFFERED[command]]
    raise DoctorError(f"cannot tell the format of {path!r} from its suffix; use {', '.join(names[:-1])} or "
                      f"{names[-1]}, or --format")


def default_path(fmt: str, hostname: str | None, directory: str = ".", fallback: str = "host") -> str:
    """``gnd-report-HOST.SUFFIX`` in ``directory`` (the host name made safe for a file name)."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(hostname or fallback))
    return os.path.join(directory, f"gnd-report-{safe}{FORMATS[fmt].suffixes[0]}")


def available(command: str) -> dict[str, bool]:
    """Which formats of ``command`` can render a result here (a heavy renderer may not be installed)."""
    return {name: _importable(FORMATS[name]) for name in OFFERED[command]}


def _importable(fmt: Format) -> bool:
    try:
        return callable(fmt.renderer("Result"))
    except Exception:  # missing, or its heavy dependency is  # noqa: BLE001
        return False


def export(result: object, fmt: str, path: str) -> str:
    """Render ``result`` as ``fmt`` into ``path`` (the TUI's export); RuntimeError with a reason."""
    try:
        FORMATS[fmt].renderer("Result")
    except Exception:  # noqa: BLE001
        raise RuntimeError(f"{fmt} export not available (its renderer is not installed)") from None
    try:
        body = FORMATS[fmt].render(result)
    except Exception as exc:  # a renderer bug must not take the TUI down
        raise RuntimeError(f"{fmt} export failed: {type(exc).__name__}: {exc}") from exc
    from doctor.output import check_outputs, write_output

    source = getattr(result, "source", None)
    read = source.get("path") if isinstance(source, dict) else None
    try:
        check_outputs([path], [read] if isinstance(read, str) else [])  # never over, nor inside, what was read
        write_output(path, body)
    except DoctorError as exc:
        raise RuntimeError(str(exc)) from None
    return path
