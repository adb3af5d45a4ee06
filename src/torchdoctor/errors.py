"""The doctor's own exceptions."""


class UsageError(Exception):
    """Bad command line or configuration: exit code 2 with a one-line message."""
