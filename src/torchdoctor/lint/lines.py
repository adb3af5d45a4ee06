"""What a line is, once for the whole checker: Python's definition.

Python's tokenizer ends a line at "\\n", "\\r\\n" or "\\r" and nowhere else; `ast` positions count
lines that way. `str.splitlines` also breaks at \\v, \\f, \\x1c-\\x1e, \\x85, U+2028 and U+2029,
which Python reads as ordinary characters (in comments and strings, or \\f as indentation), so a
position mapped through it points at the wrong text, and a fix lands on the wrong line. Every
mapping between (line, column) and offsets, and every excerpt, splits lines here.
"""

from __future__ import annotations

import io
from bisect import bisect_right
from itertools import accumulate

_ENDINGS = ("\r\n", "\n", "\r")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """`text`'s lines as Python counts them, with or without their endings."""
    # StringIO with newline="" splits at exactly \n, \r\n and \r, untranslated, at C speed.
    lines = io.StringIO(text, newline="").readlines()
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


def line_starts(lines: list[str]) -> list[int]:
    """Offset where each line (given with its ending) starts, then the length of the text."""
    return [0, *accumulate(map(len, lines))]


def position(starts: list[int], offset: int) -> tuple[int, int]:
    """1-based (line, column in characters) of a character offset, given `line_starts`."""
    index = bisect_right(starts, offset) - 1
    return index + 1, offset - starts[index] + 1


def ending(line: str) -> str:
    """The line break that ends `line` (one of `split_lines(..., keepends=True)`), or ""."""
    for end in _ENDINGS:
        if line.endswith(end):
            return end
    return ""
