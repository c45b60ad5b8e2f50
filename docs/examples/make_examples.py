#!/usr/bin/env python3
"""Regenerate the example reports in docs/examples/ from the committed fixtures.

    .venv/bin/python docs/examples/make_examples.py

Writes hgx-h100-{healthy,sick}.{html,pdf,md}, the Chinese edition hgx-h100-sick.zh-CN.{html,pdf,md},
and prints render times. The fixtures are
synthetic, so the examples are not redacted (``gnd report --redact`` shows the redacted form).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def main() -> int:
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)  # so the report names the source by its repository path
    from doctor.facts import Facts
    from doctor.runner import run_checks
    from doctor.sources import open_source
    from reports.html import render_html
    from reports.markdown import render_markdown
    from reports.pdf import render_pdf

    for name in ("hgx-h100-healthy", "hgx-h100-sick"):
        data = run_checks(Facts(open_source(f"fixtures/{name}"))).to_dict()
        t0 = time.monotonic()
        (OUT / f"{name}.html").write_text(render_html(data), encoding="utf-8")
        t1 = time.monotonic()
        (OUT / f"{name}.md").write_text(render_markdown(data), encoding="utf-8")
        t2 = time.monotonic()
        (OUT / f"{name}.pdf").write_bytes(render_pdf(data))
        t3 = time.monotonic()
        print(f"{name}: html {t1 - t0:.2f} s, md {t2 - t1:.2f} s, pdf {t3 - t2:.2f} s")
        if name == "hgx-h100-sick":
            from doctor.i18n import use

            with use("zh-CN"):
                (OUT / f"{name}.zh-CN.html").write_text(render_html(data), encoding="utf-8")
                (OUT / f"{name}.zh-CN.md").write_text(render_markdown(data), encoding="utf-8")
                (OUT / f"{name}.zh-CN.pdf").write_bytes(render_pdf(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
