"""bool-mask-arithmetic in a file that also uses pandas, whose Series have `.ne()`, `.lt()`...
too: a comparison method counts only on what is known to be a tensor there."""

from __future__ import annotations

from torchdoctor.lint.checker import check_source

ATTENTION = """
import pandas as pd
import torch


class Attention:
    def lengths_mask(self, lengths):
        return torch.arange(0, 8).repeat(lengths.numel(), 1).lt(lengths.unsqueeze(1))

    def forward(self, align, lengths):
        mask = self.lengths_mask(lengths)
        return align.masked_fill(1 - mask, 0)


def table_flags(frame):
    missing = frame["score"].ne(0)
    return 1 - missing
"""


def test_a_torch_made_mask_is_found_beside_pandas() -> None:
    found = check_source(ATTENTION, "attention.py", frozenset({"TD423"})).findings
    assert [f.line for f in found] == [12]  # not `1 - missing`, a pandas Series maybe
