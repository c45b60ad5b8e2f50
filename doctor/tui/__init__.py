"""The interactive terminal interface (``gnd tui``), built on Textual.

Only :mod:`doctor.commands.tui` is imported when ``gnd`` starts; it imports Textual inside ``run()``.
"""
