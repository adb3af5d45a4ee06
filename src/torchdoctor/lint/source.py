"""Reading and writing user files: encoding-aware, binary-safe, atomic."""
from __future__ import annotations

import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


class UnreadableFile(Exception):
    """A file that is not Python source text; the message says why, in one line."""


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
        if "invalid or missing" not in error.msg:
            raise UnreadableFile(f"bad encoding declaration: {error.msg}") from None
        encoding = "utf-8"  # no declaration and not UTF-8: say so below, with the byte
    try:
        # bytes.decode keeps '\r\n', so fixes write the file back with its own newlines.
        return SourceFile(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not valid {encoding} text (byte {error.start}: "
                             f"{data[error.start:error.start + 1]!r})") from None
    except LookupError:
        raise UnreadableFile(f"unknown encoding {encoding!r}") from None


def decode_native(data: bytes) -> SourceFile:
    """A C/C++/CUDA source: UTF-8, with any other byte kept as is (old sources carry Latin-1
    comments), so that writing a fix back changes only the fixed text."""
    if b"\0" in data:
        raise UnreadableFile("binary file (contains NUL bytes), not C++/CUDA source")
    return SourceFile(data.decode("utf-8", "surrogateescape"), "utf-8")


def write_atomically(path: Path, text: str, encoding: str) -> None:
    """Replace `path` with `text` so that a crash never leaves a half-written file."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode(encoding, "surrogateescape"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
