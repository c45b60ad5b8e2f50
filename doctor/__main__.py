"""Allow ``python -m doctor``."""

from doctor.cli import console_main

console_main()
