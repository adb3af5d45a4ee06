"""Stopping a check whose result no one waits for any more: the editor's buffer changed while
it was being checked. The thread that checks is handed a flag (`stoppable`); the walk reads it at
each statement and, once it is set, gives up with `CheckStopped`. A flag rather than a parameter:
the check is reached through several layers (files, notebooks) that have no other use for it."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class CheckStopped(Exception):
    """The check was stopped before its end: there is no result."""


_local = threading.local()


@contextmanager
def stoppable(flag: threading.Event) -> Iterator[None]:
    """Checks run by this thread inside the block stop once `flag` is set."""
    _local.flag = flag
    try:
        yield
    finally:
        _local.flag = None


def stop_flag() -> threading.Event | None:
    """The flag of the checks of this thread, if they may be stopped."""
    return getattr(_local, "flag", None)
