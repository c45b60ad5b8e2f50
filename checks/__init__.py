"""Built-in checks. Each module declares checks with :func:`doctor.registry.check`.

Modules whose names start with ``_`` hold shared helpers and are not scanned for checks.
"""
