"""``gnd report``: HTML, PDF, Markdown or JSON report of SOURCE or of a saved JSON result."""

from __future__ import annotations

import argparse
import os
import sys
import time

from doctor.errors import DoctorError
from doctor.i18n import _

HELP = "write an HTML, PDF, Markdown or JSON report (format from the -o suffix)"
DESCRIPTION = """\
Run the checks on SOURCE (or load a saved result with --from-json) and write a report a vendor can
attach to a ticket: self-contained HTML (inline CSS and topology SVG, no external requests), PDF
(A4, via WeasyPrint), Markdown for pasting, or the JSON result.

examples:
  gnd report -o node7.html
  gnd report snapshot.tar.gz -o node7.pdf --redact
  gnd check --format json -o result.json && gnd report --from-json result.json -o node7.pdf
  gnd report --from-json result.json -o ticket.md
  gnd report --lang zh-CN -o node7-zh.pdf

exit status: 0 once the report is written (with --fail-on LEVEL: 1 when a finding is at or above
LEVEL); 2 the doctor could not run or write it."""

def add_arguments(p: argparse.ArgumentParser) -> None:
    from doctor.commands.common import add_format_argument, add_input_arguments

    add_input_arguments(p, fail_on=None)
    p.add_argument("-o", "--output", metavar="FILE", help="report file (default gnd-report-HOST.FORMAT)")
    add_format_argument(p, "report", help="output format (default: from the -o suffix, else html)")
    p.add_argument("--redact", action="store_true",
                   help="replace hostnames, addresses, MACs, serials and UUIDs with placeholders")
    p.add_argument("--redact-map", metavar="FILE",
                   help="where --redact writes its private map (default OUTPUT.redact-map.json)")


def output_format(output: str | None, fmt: str | None) -> str:
    """The format asked for, else the one the suffix names, else html."""
    from reports.formats import from_suffix

    return fmt or (from_suffix("report", output) if output else "html")


def run(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    worker = None
    if fmt == "pdf":  # loads WeasyPrint in a forked process while the checks run here
        from reports.pdf_worker import start

        worker = start()
    try:
        return _run(args, fmt, worker)
    finally:
        if worker is not None:
            worker.close()


def _run(args: argparse.Namespace, fmt: str, worker: object) -> int:
    from doctor.commands.common import inputs_of, load_with_facts, redacted
    from doctor.output import EXIT_OK, check_outputs, exit_code, write_output
    from reports.formats import FORMATS, default_path

    result, facts = load_with_facts(args)  # facts: the PDF's fix script is the one `gnd fix-script` writes
    output = args.output or default_path(fmt, result.source.get("hostname"))
    map_path = None
    if args.redact:
        from doctor.redact import default_map_path

        map_path = args.redact_map or default_map_path(output)
        if os.path.abspath(map_path) == os.path.abspath(output):
            raise DoctorError("--redact-map must not be the report file itself")
    check_outputs([output, map_path], inputs_of(args))
    if map_path:  # the fix script of a redacted result names no real device: for review, as from its JSON
        result, facts = redacted(result, map_path), None
    start = time.monotonic()
    if fmt == "pdf":
        from doctor.i18n import language

        if language() == "zh-CN":
            from reports.pdf import CJK_HINT, cjk_font_found

            if not cjk_font_found():
                print(f"gnd: warning: {CJK_HINT}", file=sys.stderr)
    body = FORMATS[fmt].render(result, pdf_worker=worker, facts=facts)
    if isinstance(body, str):
        body = body.encode()
    write_output(output, body)
    print(_("wrote {path} ({format}, {kib} KiB in {seconds} s)").format(
        path=output, format=fmt, kib=f"{len(body) / 1024:.0f}", seconds=f"{time.monotonic() - start:.1f}"),
        file=sys.stderr)
    return exit_code(result, args.fail_on) if args.fail_on else EXIT_OK
