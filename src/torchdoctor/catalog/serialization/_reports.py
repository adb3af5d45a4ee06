"""What an error report shows, read for the serialization entries that weigh it."""

from __future__ import annotations


def user_code_shown(report) -> bool:
    """A frame of the user's own code is in the report (not only torch's or a library's)."""
    from torchdoctor.catalog.sdk import is_user_path  # explain-time only: `check` skips it

    return any(is_user_path(frame.path) for block in report.blocks for frame in block.frames)
