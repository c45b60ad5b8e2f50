"""Self-contained HTML report: one file, inline CSS and SVG, no external requests.

Jinja2 (imported here, inside the function) renders ``templates/report.html.j2`` with
autoescaping on; the only unescaped inserts are the static stylesheet and the topology SVG,
which escapes its own text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from doctor.findings import SEVERITIES
from doctor.i18n import language, severity_name, translations
from reports.print_css import page_margin_css
from reports.topology_svg import render_topology
from reports.view import View, build_view, sentence

if TYPE_CHECKING:
    from doctor.runner import Result

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: Evidence lines shown per finding (the JSON keeps all of them)
MAX_EVIDENCE = 12


#: the report template, and Jinja's Python for it (see :func:`compiled_template_source`)
TEMPLATE = "report.html.j2"
COMPILED = TEMPLATES / "report.html.j2.compiled"
#: the Jinja environment's options (the compiled template is valid for these only)
_OPTIONS: dict[str, Any] = {"autoescape": True, "trim_blocks": True, "lstrip_blocks": True,
                            "extensions": ["jinja2.ext.i18n"]}


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), **_OPTIONS)
    env.install_gettext_translations(translations(), newstyle=True)  # type: ignore[attr-defined]
    return env


def _template_key(source: str) -> str:
    import hashlib

    import jinja2

    digest = hashlib.sha256(repr((source, jinja2.__version__, sorted(_OPTIONS.items()))).encode()).hexdigest()
    return f"# gnd template key: jinja2 {jinja2.__version__} {digest}"


def compiled_template_source() -> str:
    """What ``templates/report.html.j2.compiled`` holds: a key line (the template's text, Jinja's version and the
    environment's options, hashed), then the Python Jinja compiles the template to.

    Compiling the template takes Jinja 50-90 ms, a third of building the report, on the path of every
    ``gnd report``; Python compiles the stored code in 6 ms. Regenerate with ``python -m reports.html`` after
    changing the template (a test fails until then; a stale copy is never used, see :func:`_report_template`).
    """
    source = (TEMPLATES / TEMPLATE).read_text(encoding="utf-8")
    return _template_key(source) + "\n" + str(_environment().compile(source, TEMPLATE, raw=True))


def _report_template(env: Any) -> Any:
    """The report template: from the stored compiled code when its key is the template's, else compiled by Jinja."""
    source = (TEMPLATES / TEMPLATE).read_text(encoding="utf-8")
    try:
        key, _newline, code = COMPILED.read_text(encoding="utf-8").partition("\n")
    except (OSError, UnicodeDecodeError):
        key = code = ""
    if code and key == _template_key(source):
        try:
            compiled = compile(code, str(TEMPLATES / TEMPLATE), "exec")  # as Jinja compiles what it generates
        except (SyntaxError, ValueError):
            compiled = None
        if compiled is not None:
            return env.template_class.from_code(env, compiled, env.make_globals(None))
    return env.get_template(TEMPLATE)


def render_html_view(view: View, links: bool = True, style: bool = True) -> str:
    """The report for an already built view; ``links=False``: references as plain text (see :func:`render_html`).

    ``style=False`` leaves the ``<style>`` element out: the PDF applies the same stylesheet
    (:func:`reports.print_css.report_css`), parsed before the report is ready.
    """
    from markupsafe import Markup

    env = _environment()
    svg = render_topology(view.inventory, view.findings + view.unknowns)
    return str(_report_template(env).render(
        v=view, svg=Markup(svg), severities=[s for s in SEVERITIES if s != "pass"], sentence=sentence,
        max_evidence=MAX_EVIDENCE, lang=language(), severity_name=severity_name,
        page_css=Markup(page_margin_css()), links=links, style=style))


def render_html(result: Result, links: bool = True, **_options: Any) -> str:
    """The HTML report for a result.

    ``links=False`` (the PDF) writes each finding's reference URLs as text, not ``<a>`` links: a PDF lays
    out each link as a box of its own and annotates it, 5 % of its rendering time, and PDF viewers make
    a printed URL clickable themselves. It also puts each finding's anchor (``id="finding-N"``, the
    summary's link target) on the severity label of its heading instead of the whole article:
    WeasyPrint shares computed styles between alike elements, except an element with an id and all
    it holds (9 % of the PDF's work). Nothing else differs.
    """
    return render_html_view(build_view(result), links)


if __name__ == "__main__":  # python -m reports.html: store the compiled template
    import sys

    if sys.argv[1:]:
        sys.exit("usage: python -m reports.html  (rewrites templates/report.html.j2.compiled; takes no arguments)")
    COMPILED.write_text(compiled_template_source(), encoding="utf-8")
    print(f"wrote {COMPILED}")
