"""Built-in checks. Each module declares checks with :func:`doctor.registry.check`.

A check module imports no other check module: what several checks share is a derived fact
(:mod:`doctor.derived`) or a fix builder (:mod:`doctor.fixes`).
"""
