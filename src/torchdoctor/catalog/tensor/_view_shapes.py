"""torch's message for a `view`/`reshape` to a shape the tensor's size does not fit, read once
for the entries that explain it (a size written into the shape, a batch size baked in)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from torchdoctor.catalog.sdk import lazy_compile

# torch >= 1.0 ("shape '[64, -1]' is invalid for input of size 3000"), and the TH message
# before it ("size '[64 x -1]' is invalid for input with 3000 elements"; torch 0.3's own typo
# "input of with"). The shape is kept to one line, without brackets; the words after it may be
# wrapped onto the next line where the message was pasted.
_INVALID_SHAPE = lazy_compile(
    r"shape '\[(?P<shape>[-\d, ]*)\]' is\s+invalid\s+for\s+input\s+of\s+size"
    r"(?:\s(?P<size>\d+))?"
    r"|size '\[(?P<old_shape>[-\d x]*)\]' is\s+invalid\s+for\s+input\s+(?:of\s+)?with\s+"
    r"(?P<old_size>\d+)\s+elements"
)


@dataclass(frozen=True)
class InvalidView:
    sizes: list[int]  # the shape asked for, -1 for a free dimension
    size: int | None  # the elements the tensor holds; None when the message stops before it


def invalid_view(message: str) -> InvalidView | None:
    """The shape and size of torch's message, in either phrasing; None for another message."""
    if "]' is invalid" not in message:
        return None
    found = _INVALID_SHAPE.search(message)
    if found is None:
        return None
    shape = found["shape"] if found["shape"] is not None else found["old_shape"]
    size = found["size"] or found["old_size"]
    return InvalidView([int(s) for s in re.findall(r"-?\d+", shape)], int(size) if size else None)
