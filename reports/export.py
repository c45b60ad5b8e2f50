"""Export through the report renderers, when they are installed (``reports.html`` and friends).

Each renderer takes the JSON result dict and returns ``str`` (HTML, Markdown) or ``bytes`` (PDF).
A renderer that cannot be imported is reported as unavailable, never as a crash.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any

#: format -> (module, candidate function names, file extension)
RENDERERS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "html": ("reports.html", ("render_html",), "html"),
    "markdown": ("reports.markdown", ("render_markdown",), "md"),
    "pdf": ("reports.pdf", ("render_pdf",), "pdf"),
}


def renderer(fmt: str) -> Callable[..., Any] | None:
    """The render function for ``fmt``, or None when that renderer is not available."""
    module_name, names, _ = RENDERERS[fmt]
    try:
        module = importlib.import_module(module_name)
    except Exception:  # missing, or its heavy dependency is  # noqa: BLE001
        return None
    for name in names:
        fn = getattr(module, name, None)
        if callable(fn):
            return fn
    return None


def available() -> dict[str, bool]:
    return {fmt: renderer(fmt) is not None for fmt in RENDERERS}


def default_path(fmt: str, hostname: str | None, directory: str = ".") -> str:
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in (hostname or "node"))
    return os.path.join(directory, f"gnd-report-{safe}.{RENDERERS[fmt][2]}")


def export(data: Mapping[str, Any], fmt: str, path: str) -> str:
    """Render ``data`` as ``fmt`` into ``path``; returns the path. Raises RuntimeError with a reason."""
    fn = renderer(fmt)
    if fn is None:
        raise RuntimeError(f"{fmt} export not available (module {RENDERERS[fmt][0]} is not installed)")
    try:
        out = fn(dict(data))
    except Exception as exc:  # a renderer bug must not take the TUI down
        raise RuntimeError(f"{fmt} export failed: {type(exc).__name__}: {exc}") from exc
    try:
        if isinstance(out, bytes):
            with open(path, "wb") as fh:
                fh.write(out)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(str(out))
    except OSError as exc:
        raise RuntimeError(f"cannot write {path}: {exc.strerror}") from exc
    return path
