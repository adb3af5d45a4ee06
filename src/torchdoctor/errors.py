"""The doctor's own exceptions."""


class UsageError(Exception):
    """Bad command line or configuration: exit code 2 with a one-line message."""


class IncompleteCheck(Exception):
    """`torchdoctor.check()` could not check some paths or files: the message names them, and
    `findings` holds what the others gave."""

    def __init__(self, message: str, findings: list) -> None:
        super().__init__(message)
        self.findings = findings
