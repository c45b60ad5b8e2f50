#!/usr/bin/env python3
"""Where the PDF's time goes: the renderer's start and one render of the sick fixture's report, in one process.

Does what the forked renderer does (``reports/pdf_worker.py``): imports WeasyPrint, warms the fonts, parses
the stylesheet, then renders the page that ``gnd report fixtures/hgx-h100-sick -o x.pdf`` sends it, and prints
the CPU seconds of each step (``time.process_time``; the import's ``ldconfig`` look-ups run in child processes
and are not counted). Run it from the repository root with the tree on ``PYTHONPATH``.

    python bench/pdf_render.py --lang zh-CN                  # CPU of each step
    python bench/pdf_render.py --profile render.prof         # cProfile of the render (pstats to read it)
    python bench/pdf_render.py --start-only                  # only the start: the baseline of the next line
    valgrind --tool=callgrind --callgrind-out-file=cg.out python bench/pdf_render.py   # instructions

Timings on a shared machine are noise; the instruction count (callgrind's "Collected", this script's run less
a ``--start-only`` run) is the same from run to run, so compare trees by it.
"""

from __future__ import annotations

import argparse
import gc
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lang", default="en")
    ap.add_argument("--source", default="fixtures/hgx-h100-sick")
    ap.add_argument("--profile", metavar="FILE", help="write a cProfile of the render to FILE")
    ap.add_argument("--start-only", action="store_true", help="stop after the renderer's start")
    ap.add_argument("-o", "--output", default="/dev/null", help="where to write the PDF")
    args = ap.parse_args()

    from doctor.i18n import set_language

    set_language(args.lang)
    from reports import pdf
    from reports.print_css import report_css

    steps = [("import WeasyPrint", pdf.import_weasyprint_single_threaded), ("warm the fonts", pdf.warm_fonts),
             ("parse the stylesheet", lambda: pdf.stylesheet(report_css()))]
    results = {}
    for name, step in steps:
        start = time.process_time()
        results[name] = step()
        print(f"{name:22} {time.process_time() - start:6.3f} s CPU")
    if args.start_only:
        return
    from doctor.pipeline import analyse_facts
    from reports.html import render_html_view
    from reports.view import build_view

    result, facts = analyse_facts(args.source)
    html = render_html_view(build_view(result), links=False, style=False)
    files = pdf.embedded_files(result, facts)
    gc.disable()  # as the renderer does
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    start = time.process_time()
    data = pdf.html_to_pdf(html, font_config=results["warm the fonts"], css=report_css(), files=files)
    print(f"{'render':22} {time.process_time() - start:6.3f} s CPU ({len(html)} characters of HTML, "
          f"{len(data) // 1024} KiB of PDF)")
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)
    with open(args.output, "wb") as out:
        out.write(data)


if __name__ == "__main__":
    main()
