"""Self-contained HTML report: one file, inline CSS and SVG, no external requests.

Jinja2 (imported here, inside the function) renders ``templates/report.html.j2`` with
autoescaping on; the only unescaped inserts are the static stylesheet and the topology SVG,
which escapes its own text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doctor.findings import SEVERITIES
from reports.topology_svg import render_topology
from reports.view import View, build_view, sentence

TEMPLATES = Path(__file__).resolve().parent / "templates"
#: Evidence lines shown per finding (the JSON keeps all of them)
MAX_EVIDENCE = 12


def render_html_view(view: View) -> str:
    """The report for an already built view."""
    from jinja2 import Environment, FileSystemLoader
    from markupsafe import Markup

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True, trim_blocks=True,
                      lstrip_blocks=True)
    svg = render_topology(view.inventory, view.findings + view.unknowns)
    return env.get_template("report.html.j2").render(
        v=view, svg=Markup(svg), severities=[s for s in SEVERITIES if s != "pass"], sentence=sentence,
        max_evidence=MAX_EVIDENCE)


def render_html(data: dict[str, Any]) -> str:
    """The HTML report for a result dict (``Result.to_dict()`` or a saved JSON result)."""
    return render_html_view(build_view(data))
