"""The doctor's own standard output, treated as Unix tools treat theirs.

When the reader goes away (`torchdoctor rules | head -1`), the process ends quietly, killed by
SIGPIPE as `cat` or `grep` would be: the shell prints nothing and shows 141, and a pipeline under
`set -o pipefail` fails, as it would with those tools. (ruff exits 0 instead; `check` does not,
because its 0 means "no findings", which an unread report cannot claim.) Where there is no
SIGPIPE (Windows), it exits 1, as Python's documentation suggests. A closed stdout (`>&-`) or
a full disk (`> /dev/full`) is one line and exit 2, as for `grep`.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from contextlib import contextmanager


class ReaderGone(Exception):
    """The reader of stdout closed its end of the pipe."""


class OutputError(Exception):
    """stdout cannot be written: closed, a full disk, an I/O error."""


class _GuardedStdout:
    """sys.stdout while a command writes: its failures become ReaderGone or OutputError, told
    apart from the command's other errors (a file that cannot be read is not the output's)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:  # python sets sys.stdout to None when fd 1 is closed
            raise OutputError("stdout is closed")
        return self._call(self._stream.write, text)

    def flush(self) -> None:
        if self._stream is not None:
            self._call(self._stream.flush)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)

    @staticmethod
    def _call(method, *args):
        try:
            return method(*args)
        except BrokenPipeError:
            raise ReaderGone from None
        except OSError as error:
            if sys.platform == "win32" and error.errno == errno.EINVAL:  # Windows' closed pipe
                raise ReaderGone from None
            raise OutputError(error.strerror or str(error)) from None
        except ValueError as error:  # "I/O operation on closed file"
            raise OutputError(str(error)) from None


@contextmanager
def guarded_stdout():
    """Write the command's output through a guard, and flush it before leaving: a failure is
    seen here, not at interpreter exit where it would be a traceback."""
    raw = sys.stdout
    guard = _GuardedStdout(raw)
    sys.stdout = guard
    try:
        try:
            yield
        except SystemExit:  # argparse's --help and usage errors end here
            guard.flush()
            raise
        guard.flush()
    except (ReaderGone, OutputError):
        _drop_pending(raw)
        raise
    finally:
        if sys.stdout is guard:
            sys.stdout = raw


def end_quietly() -> int:
    """End as a Unix tool whose reader went away; the exit code where SIGPIPE does not exist."""
    if hasattr(signal, "SIGPIPE") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # python ignores it; restore the default
        os.kill(os.getpid(), signal.SIGPIPE)
    return 1


def _drop_pending(stream) -> None:
    """Point stdout at the null device: the bytes still buffered in it are dropped at exit
    instead of failing a second time (Python's recipe in the signal module's documentation)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)
    except (AttributeError, OSError, ValueError):  # no stream, or one without a descriptor
        pass
