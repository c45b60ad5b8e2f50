"""One module per `gnd` subcommand: ``HELP``, ``add_arguments(parser)``, ``run(args) -> int`` (see doctor/cli.py)."""
