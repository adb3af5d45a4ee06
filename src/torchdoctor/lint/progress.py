"""`files done / total` on one line of a terminal, for checks long enough to need it."""

from __future__ import annotations

import time
from typing import Callable, TextIO

# A check that ends sooner shows nothing.
DELAY_SECONDS = 2.0
# The line is redrawn at most this often: writing to a terminal costs, the eye needs no more.
REDRAW_SECONDS = 0.1


class Progress:
    """A line on `stream` (a terminal), first drawn once the check has run DELAY_SECONDS,
    rewritten in place after a carriage return, and erased at the end (no escape sequences:
    any terminal can show it)."""

    def __init__(
        self, stream: TextIO, total: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._total = total
        self._clock = clock
        self._started = clock()
        self._done = 0
        self._drawn_at: float | None = None
        self._width = 0

    def __enter__(self) -> Callable[[int], None]:
        return self.advance

    def __exit__(self, *exc_info) -> None:
        self.close()

    def advance(self, count: int) -> None:
        """`count` more files are done (0: none, but the line may be due)."""
        self._done += count
        now = self._clock()
        if now - self._started < DELAY_SECONDS:
            return
        if self._drawn_at is not None and now - self._drawn_at < REDRAW_SECONDS:
            return
        self._drawn_at = now
        line = f"torchdoctor: {self._done}/{self._total} files checked"
        self._width = max(self._width, len(line))
        self._write(f"\r{line}")

    def close(self) -> None:
        """Erase the line, if it was drawn, so that what follows starts on a clean line."""
        if self._width:
            self._write("\r" + " " * self._width + "\r")
            self._width = 0

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):  # a closed terminal: the check goes on without it
            pass
