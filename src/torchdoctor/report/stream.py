"""Writing the doctor's own lines next to the user's output, without ever failing."""
from __future__ import annotations

import sys


def write_stderr(text: str) -> None:
    """Write and flush to the current stderr; a closed or narrow stream is not our error to
    raise (it would turn into a second traceback, or break the user's run)."""
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except Exception:
        pass
