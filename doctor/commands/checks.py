"""``gnd checks``: list the available checks."""

from __future__ import annotations

import argparse
import json
import sys

from doctor.output import EXIT_OK

HELP = "list the available checks"
DESCRIPTION = "List the available checks."
FORMATTER = argparse.HelpFormatter


def add_arguments(p: argparse.ArgumentParser) -> None:
    from doctor.commands.common import add_lang_argument

    p.add_argument("--format", choices=("text", "json"), default="text")
    add_lang_argument(p)


def run(args: argparse.Namespace) -> int:
    from doctor.registry import load_checks

    checks, errors = load_checks()
    if args.format == "json":
        print(json.dumps([{"id": c.id, "title": c.title, "category": c.category, "plugin": c.plugin,
                           "acts": c.acts.value if c.acts is not None else None,
                           "description": c.description} for c in checks], indent=2))
    else:
        from doctor.i18n import _, actor_name, ljust
        from doctor.i18n import width as columns

        width = max((len(c.id) for c in checks), default=10)
        names = {c.id: actor_name(c.acts) for c in checks}
        column = max((columns(n) for n in names.values()), default=1)
        for c in checks:
            print(f"{c.id:<{width}}  {c.category:<8}  {ljust(names[c.id], column)}  {_(c.title)}")
        for e in errors:
            print(f"plugin {e.plugin} failed to load: {e.error}", file=sys.stderr)
    return EXIT_OK
