"""The ends of a watched process that skip `atexit` and `finally`: SIGTERM, whose default action
kills the process at once, and `os._exit`. Each writes the report first, then ends the process
as it would have ended: killed by SIGTERM (the shell shows 143), or `os._exit` with its code.

A SIGTERM handler of the program's own, installed before the watch or after it, is left alone:
it decides how the program ends (a handler that exits, or lets the program finish, gets the
report written at exit as usual; one that calls the handler it replaced gets ours). Forked
children (DataLoader workers) get SIGTERM's default action back: they write no report.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable

_current: ExitHooks | None = None  # the hooks in place, for the fork handler below


class ExitHooks:
    """Calls `on_exit(exit_code)` before a SIGTERM or an `os._exit` ends the process."""

    def __init__(self, on_exit: Callable[[int], object]) -> None:
        self._on_exit = on_exit
        self._real_exit = os._exit
        self._exit = self._exit_after_report  # one bound method, to recognise it later
        self._on_sigterm = self._terminate_after_report
        self._owns_sigterm = False

    def install(self) -> None:
        global _current
        os._exit = self._exit
        if _in_main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._on_sigterm)
            self._owns_sigterm = True
        _current = self

    def remove(self) -> None:
        global _current
        if os._exit is self._exit:
            os._exit = self._real_exit
        if (
            self._owns_sigterm
            and _in_main_thread()
            and signal.getsignal(signal.SIGTERM) is self._on_sigterm
        ):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if _current is self:
            _current = None

    def _exit_after_report(self, code: int) -> None:
        try:
            self._on_exit(code)
        finally:
            self._real_exit(code)

    def _terminate_after_report(self, signum: int, frame) -> None:
        try:
            self._on_exit(128 + signum)
        finally:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _default_sigterm_in_child() -> None:
    hooks = _current
    if hooks is not None and signal.getsignal(signal.SIGTERM) is hooks._on_sigterm:
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except ValueError:  # forked from a thread python does not take as the main one
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_sigterm_in_child)
