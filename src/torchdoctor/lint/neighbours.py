"""What lies next to a checked file, for rules whose findings depend on it (TD703)."""

from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=4096)
def directory_listing(directory: str) -> frozenset[str] | None:
    """The names in a directory, read once per process; None when it cannot be listed."""
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return None
