"""A convolution's channel-count error, read for the entries that explain it (channels-last
input, or another channel count)."""

from __future__ import annotations

import re

# torch 0.4-1.4 wrote "weight[64, 3, 3, 3], so expected input[...]", later "weight of size
# [64, 3, 3, 3], expected input[...]".
CHANNELS = re.compile(
    r"weight(?: of size)? ?\[?(?P<weight>\d+(?:,? \d+)*)\]?,(?: so)? "
    r"expected input\[(?P<input>\d+(?:, \d+)*)\] "
    r"to have (?P<expected>\d+) channels, but got (?P<got>\d+) channels instead"
)


def channel_mismatch(message: str) -> tuple[dict[str, str], list[int]] | None:
    """`expected input[8, 1, 32, 32] to have 3 channels, but got 1`: the message's fields, and
    the sizes of the input; None for another message."""
    found = CHANNELS.search(message)
    if found is None:
        return None
    fields = found.groupdict()
    return fields, [int(s) for s in fields["input"].split(", ")]
