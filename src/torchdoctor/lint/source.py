"""Decoding user files and writing fixes back into them: encoding-aware, binary-safe, in place."""

from __future__ import annotations

import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path


# Never block on a FIFO swapped in since the read, never make a terminal ours.
_WRITE_FLAGS = (
    os.O_RDWR
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


# Codecs that exist only to backport newer syntax to older interpreters (installed with the
# project, registered at start-up by a .pth file): their input is UTF-8 text, and on the Python
# that runs the doctor the syntax they rewrite is native, so the file is read as UTF-8.
_SYNTAX_BACKPORT_CODECS = frozenset({"future_fstrings", "future_annotations"})


class UnreadableFile(Exception):
    """A file that is not Python source text; the message says why, in one line."""


class UnwritableFile(Exception):
    """A fix that was not written; the message says why, in one line."""


@dataclass
class SourceFile:
    text: str
    encoding: str


def decode(data: bytes) -> SourceFile:
    if b"\0" in data:
        raise UnreadableFile("binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if _names_a_backport_codec(error.msg):
            encoding = "utf-8"  # `# -*- coding: future_fstrings -*-` (FCGF): UTF-8 underneath
        elif "invalid or missing" in error.msg:
            encoding = "utf-8"  # no declaration and not UTF-8: say so below, with the byte
        else:
            raise UnreadableFile(f"bad encoding declaration: {error.msg}") from None
    try:
        # bytes.decode keeps '\r\n', so fixes write the file back with its own newlines.
        return SourceFile(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        raise UnreadableFile(
            f"not valid {encoding} text (byte {error.start}: "
            f"{data[error.start : error.start + 1]!r})"
        ) from None
    except LookupError as error:  # an unknown name, or a codec that is not text (rot13, hex)
        raise UnreadableFile(f"cannot decode as {encoding!r}: {error}") from None
    except Exception as error:  # a cookie can name any codec; what it raises is up to the codec
        raise UnreadableFile(
            f"cannot decode as {encoding!r}: {type(error).__name__}: {error}"
        ) from None


def _names_a_backport_codec(message: str) -> bool:
    """`message` is tokenize's "unknown encoding: future_fstrings" (or its twin)."""
    _, found, name = message.partition("unknown encoding: ")
    return bool(found) and name.strip().lower().replace("-", "_") in _SYNTAX_BACKPORT_CODECS


def decode_native(data: bytes) -> SourceFile:
    """A C/C++/CUDA source: UTF-8, with any other byte kept as is (old sources carry Latin-1
    comments), so that writing a fix back changes only the fixed text."""
    if b"\0" in data:
        raise UnreadableFile("binary file (contains NUL bytes), not C++/CUDA source")
    return SourceFile(data.decode("utf-8", "surrogateescape"), "utf-8")


def encode(text: str, encoding: str) -> bytes:
    """`text` in the encoding it was read in (bytes that were not UTF-8 kept as they were)."""
    try:
        return text.encode(encoding, "surrogateescape")
    except Exception as error:  # as in decode: the codec is whatever the file's cookie named
        raise UnwritableFile(f"cannot encode the fixed source as {encoding!r}: {error}") from None


def write_in_place(path: Path, original: bytes, new: bytes) -> None:
    """Overwrite the file `original` was read from with `new`, keeping the file itself: its
    inode (so hard links), owner and permissions. Refused (UnwritableFile) when the file is no
    longer what was read. An in-place write cannot be atomic: the new content is written in one
    go, then the file is truncated and synced, so only a crash inside that one write can leave
    a mixed file."""
    fd = os.open(path, _WRITE_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnwritableFile("no longer a regular file")
        if _read_to_end(fd, len(original) + 1) != original:
            raise UnwritableFile("changed on disk since it was read")
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(new)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, len(new))
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_to_end(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit:
        chunk = os.read(fd, min(1 << 20, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
