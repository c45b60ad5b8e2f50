"""Self-contained HTML report: one file, inline CSS and SVG, no external requests.

Jinja2 (imported here, inside the function) renders ``templates/report.html.j2`` with
autoescaping on; the only unescaped inserts are the static stylesheet and the topology SVG,
which escapes its own text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from doctor.findings import SEVERITIES
from doctor.i18n import activity_name, actor_name, language, severity_name, tr, translations
from reports.print_css import page_margin_css
from reports.topology_svg import render_topology
from reports.view import (
    COMMAND_COLUMNS,
    EVIDENCE_COLUMNS,
    SUMMARY_SUBJECT,
    SUMMARY_TITLE,
    View,
    build_view,
    fix_parts,
    mono_lines,
    short,
)

if TYPE_CHECKING:
    from doctor.runner import Result

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: Evidence lines shown per finding (the JSON keeps all of them)
MAX_EVIDENCE = 12
TEMPLATE = "report.html.j2"


def _bytecode_cache() -> Any:
    """Jinja's bytecode cache in ``$XDG_CACHE_HOME/gnd/jinja`` (``~/.cache/gnd/jinja``); ``None`` (compile each
    time) when that folder cannot be made private to this user.

    Compiling the template takes Jinja 50-90 ms, a third of building the report; the cache keys each entry by
    the template's name and text, and Jinja ignores an entry from another Jinja or Python.
    """
    import contextlib
    import os

    from jinja2 import FileSystemBytecodeCache

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "gnd", "jinja")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder, follow_symlinks=False)
        if not os.path.isdir(folder) or os.path.islink(folder) or info.st_uid != os.getuid() \
                or info.st_mode & 0o022 or not os.access(folder, os.W_OK):
            return None
    except (OSError, AttributeError):  # AttributeError: no os.getuid (Windows)
        return None

    class QuietCache(FileSystemBytecodeCache):
        """Jinja's cache, where a file that cannot be read or written only means compiling the template."""

        def load_bytecode(self, bucket: Any) -> None:
            try:
                super().load_bytecode(bucket)
            except Exception:  # noqa: BLE001 - damaged or unreadable: compile instead
                bucket.reset()

        def dump_bytecode(self, bucket: Any) -> None:
            with contextlib.suppress(Exception):  # a full or read-only disk: the next report compiles again
                super().dump_bytecode(bucket)

    return QuietCache(folder)


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, trim_blocks=True, lstrip_blocks=True,
                      extensions=["jinja2.ext.i18n"], bytecode_cache=_bytecode_cache())
    env.install_gettext_translations(translations(), newstyle=True)  # type: ignore[attr-defined]
    return env


def render_html_view(view: View, links: bool = True, style: bool = True) -> str:
    """The report for an already built view; ``links=False``: references as plain text (see :func:`render_html`).

    ``style=False`` leaves the ``<style>`` element out: the PDF applies the same stylesheet
    (:func:`reports.print_css.report_css`), parsed before the report is ready.
    """
    from markupsafe import Markup

    env = _environment()
    svg = render_topology(view.inventory, view.findings + view.unknowns, print_labels=not links)
    return str(env.get_template(TEMPLATE).render(
        v=view, svg=Markup(svg), severities=[s for s in SEVERITIES if s != "pass"], short=short,
        summary_subject=SUMMARY_SUBJECT, summary_title=SUMMARY_TITLE, actor_name=actor_name,
        max_evidence=MAX_EVIDENCE, lang=language(), severity_name=severity_name, fix_parts=fix_parts,
        activity_name=lambda a: tr(activity_name(str(a))) if a else "",
        mono_lines=mono_lines, command_columns=COMMAND_COLUMNS, evidence_columns=EVIDENCE_COLUMNS,
        page_css=Markup(page_margin_css()), links=links, style=style))


def render_html(result: Result, links: bool = True, **_options: Any) -> str:
    """The HTML report for a result.

    ``links=False`` (the PDF) writes each finding's reference URLs as text, not ``<a>`` links: a PDF lays
    out each link as a box of its own and annotates it, 5 % of its rendering time, and PDF viewers make
    a printed URL clickable themselves. It also puts each finding's anchor (``id="finding-N"``, the
    summary's link target) on the severity label of its heading instead of the whole article:
    WeasyPrint shares computed styles between alike elements, except an element with an id and all
    it holds (9 % of the PDF's work), and writes the topology's labels as HTML over the drawing (see
    :func:`reports.topology_svg.render_topology`). Nothing else differs.
    """
    return render_html_view(build_view(result), links)

