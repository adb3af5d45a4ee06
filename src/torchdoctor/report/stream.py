"""Writing the doctor's own lines next to the user's output, without ever failing."""

from __future__ import annotations

import os
import sys


def write_stderr(text: str) -> None:
    """Write to the current stderr; a closed or narrow stream is not our error to raise (it
    would turn into a second traceback, or break the user's run).

    Where stderr is a file descriptor, the text goes straight to it, after what the program
    wrote before: text left in Python's buffer by a failed write would be flushed again at
    exit, fail again, and turn the program's exit code into 120."""
    stream = sys.stderr
    if stream is None:  # pythonw, or a program that set it so
        return
    descriptor = _descriptor(stream)
    try:
        stream.flush()
        if descriptor is None:
            stream.write(text)
            stream.flush()
            return
        data = text.encode(getattr(stream, "encoding", None) or "utf-8", "backslashreplace")
        while data:
            data = data[os.write(descriptor, data) :]
    except Exception:
        pass


def _descriptor(stream) -> int | None:
    """The file descriptor behind `stream`, where writing to it directly keeps the output the
    same (not on Windows, whose text streams translate line ends)."""
    if os.name == "nt":
        return None
    try:
        return stream.fileno()
    except Exception:  # a notebook's stream, a StringIO, a closed file
        return None
