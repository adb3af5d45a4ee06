"""What the explainer reads out of an error: the exceptions, warnings and log errors in it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal, TypeVar

_T = TypeVar("_T")

# exception: a Python traceback's final "Type: message" (or a live exception);
# warning: a `file:line: SomeWarning: message` line; log: an error line outside any traceback
# (a compiler error, a CUDA device-side assert, "Bus error", a C++ `terminate called` ...).
BlockKind = Literal["exception", "warning", "log"]


@dataclass(frozen=True)
class Frame:
    """One traceback frame. `path` exactly as printed (Windows paths kept)."""

    path: str
    line: int | None = None
    function: str | None = None
    source: str | None = None  # the source line the traceback shows, stripped

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "source": self.source,
        }


@dataclass(frozen=True)
class ErrorBlock:
    """One error in the input: an exception with its frames, a warning, or a log error line."""

    type: str  # "RuntimeError", "torch.OutOfMemoryError", "UserWarning", "" for log lines
    message: str  # may span several lines
    frames: tuple[Frame, ...] = ()
    kind: BlockKind = "exception"
    # Text location of the block in the input (1-based line of its last line), for ordering.
    line: int = 0
    rank: int | None = None  # torchrun `[rankN]:` prefix, when present
    # Set for the exception re-raised from a DataLoader worker / chained exceptions:
    # "cause" (raise from), "context" (during handling), "worker" (original worker traceback).
    relation: str | None = None

    @property
    def short_type(self) -> str:
        """The class name without its module: `torch.OutOfMemoryError` -> `OutOfMemoryError`."""
        return self.type.rsplit(".", 1)[-1]

    def to_json(self) -> dict:
        return {
            "type": self.type,
            "message": self.message,
            "kind": self.kind,
            "frames": [f.to_json() for f in self.frames],
            "rank": self.rank,
            "relation": self.relation,
        }


@dataclass
class ErrorReport:
    """Everything parsed from one input. `blocks` in input order; the last exception is final.

    Read-only once parsed: what `search` and `once` compute is kept for the next asker."""

    blocks: list[ErrorBlock] = field(default_factory=list)
    text: str = ""  # the input, cleaned (no ANSI, no rank prefixes, \r progress bars resolved)
    torch_version: str | None = None
    python_version: str | None = None
    _known: dict = field(default_factory=dict, repr=False, compare=False)

    def search(self, pattern: str | re.Pattern) -> re.Match | None:
        """`pattern` searched in the whole input, once: signatures run for every block of a
        log, and reading all of it for each would be quadratic."""
        key = ("search", pattern)
        if key not in self._known:
            text = self.text or ""
            # A pattern compiled on first use (torchdoctor._regex) is not one `re` takes.
            found = re.search(pattern, text) if isinstance(pattern, str) else pattern.search(text)
            self._known[key] = found
        return self._known[key]

    def once(self, compute: Callable[[ErrorReport], _T]) -> _T:
        """`compute(self)`, computed once (see `search`)."""
        if compute not in self._known:
            self._known[compute] = compute(self)
        return self._known[compute]

    @property
    def exceptions(self) -> tuple[ErrorBlock, ...]:
        """The blocks that are exceptions, in order; listed once (checks ask it for every block
        of a log, and listing them each time would be quadratic in the log's length)."""
        key = ("exceptions", len(self.blocks))
        found = self._known.get(key)
        if found is None:
            found = self._known[key] = tuple(b for b in self.blocks if b.kind == "exception")
        return found

    @property
    def final(self) -> ErrorBlock | None:
        """The exception the program died of (the last one printed), if any."""
        exceptions = self.exceptions
        return exceptions[-1] if exceptions else None

    def to_json(self) -> dict:
        final = self.final
        return {
            "type": final.type if final else None,
            "message": final.message if final else None,
            "blocks": [b.to_json() for b in self.blocks],
            "torch_version": self.torch_version,
            "python_version": self.python_version,
        }
