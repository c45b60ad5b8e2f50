"""Errors that end a run with one clear line (exit status 2), never a traceback."""


class DoctorError(Exception):
    """A problem the user must fix (bad source, bad option); printed as one line."""
