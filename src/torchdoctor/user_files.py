"""Reading files the user owns without ever blocking or reading without end.

A tree can hold anything under a `.py` name: a FIFO (opening it for reading waits for a writer
forever), a link to `/dev/zero` (reading it never ends), a socket, a huge generated file. Every
file the doctor reads on its own initiative (files found by `check`, sources named in a
traceback, excerpts) goes through `read_regular_file`: it opens without blocking, refuses what
is not a regular file, and reads at most `limit` bytes.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

# Larger than any hand-written or generated Python source seen in real projects (transformers'
# biggest file is 0.5 MB); notebooks carry their outputs, images included.
MAX_SOURCE_BYTES = 16 * 1024 * 1024
MAX_NOTEBOOK_BYTES = 128 * 1024 * 1024

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class RefusedFile(OSError):
    """A file the doctor will not read; `str()` is a one-line reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def limit_for(path: str | os.PathLike) -> int:
    return MAX_NOTEBOOK_BYTES if os.fspath(path).endswith(".ipynb") else MAX_SOURCE_BYTES


def read_regular_file(path: str | os.PathLike, limit: int | None = None) -> bytes:
    """The bytes of a regular file, at most `limit` of them (default: by the file's suffix).

    Raises RefusedFile for anything else (FIFO, device, socket, directory, too large) and
    OSError when the file cannot be opened; never blocks on open or read."""
    limit = limit_for(path) if limit is None else limit
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise RefusedFile(f"{kind}, not a regular file: not read")
        if info.st_size > limit:
            raise RefusedFile(
                f"too large to check ({_size(info.st_size)}, the limit is {_size(limit)})"
            )
        chunks, total = [], 0
        while total <= limit:  # the size can change under us: read to the end, never past limit
            # Ask for what fstat said is left (os.read allocates what is asked for: 1 MiB per
            # small file is measurable over a warm re-check of thousands of files).
            wanted = max(info.st_size + 1 - total, 1 << 16)
            chunk = os.read(fd, min(1 << 20, limit + 1 - total, wanted))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise RefusedFile(f"too large to check (over {_size(limit)})")
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_regular_file(path: str | os.PathLike) -> BinaryIO:
    """A regular file of any size, opened for binary reading without blocking (checkpoints).

    Raises RefusedFile for anything else (FIFO, device, socket, directory) and OSError when the
    file cannot be opened."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise RefusedFile(f"{kind}, not a regular file: not read")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _size(count: int) -> str:
    return f"{count / (1024 * 1024):.0f} MiB" if count >= 1024 * 1024 else f"{count} bytes"
