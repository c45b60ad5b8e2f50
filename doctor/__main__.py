"""Allow ``python -m doctor``."""

from doctor.cli import main

raise SystemExit(main())
