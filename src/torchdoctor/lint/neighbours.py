"""What lies next to a checked file, for rules whose findings depend on it (TD703)."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from torchdoctor._regex import lazy_compile
from torchdoctor.user_files import read_regular_file


@lru_cache(maxsize=4096)
def directory_listing(directory: str) -> frozenset[str] | None:
    """The names in a directory, read once per process; None when it cannot be listed."""
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return None


# `class Name`, `def name`, `NAME = ...` or `name: T = ...` at the start of a line.
_TOP_LEVEL_NAME = lazy_compile(
    rb"^(?:class|def)[ \t]+(\w+)|^(\w+)[ \t]*(?::[^=\n]*)?=(?!=)", re.MULTILINE
)
_NEIGHBOUR_BYTES = 1 << 20


@lru_cache(maxsize=1024)
def top_level_names(path: str) -> frozenset[str] | None:
    """The names a neighbouring Python file defines at its top level, read once per process
    (never blocking: a FIFO or device named like a module is refused); None when it cannot be
    read."""
    try:
        text = read_regular_file(path, _NEIGHBOUR_BYTES)
    except OSError:
        return None
    return frozenset((a or b).decode("ascii", "replace") for a, b in _TOP_LEVEL_NAME.findall(text))
