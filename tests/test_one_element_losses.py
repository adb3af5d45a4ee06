"""warp-ctc's `CTCLoss` hands back a tensor of one element, shape (1,): `.data[0]` reads it
correctly. In a file using it, neither a `.backward()` nor a callee named as a loss says a loss
is 0-dim (wavenet-speech's training scripts); a loss of torch.nn still does."""

from __future__ import annotations

from torchdoctor.lint.api import check

SOURCE = """\
import torch.nn as nn
from warpctc_pytorch import CTCLoss

ctc_loss_fn = CTCLoss()
xe_loss_fn = nn.CrossEntropyLoss()


def step(probs, labels, prob_lengths, lengths, logits, targets):
    ctc_loss = ctc_loss_fn(probs, labels, prob_lengths, lengths)
    avg_ctc_loss = ctc_loss / probs.size(0)
    avg_ctc_loss.backward()
    xe_loss = xe_loss_fn(logits, targets)
    return ctc_loss.data[0], avg_ctc_loss.data[0], xe_loss.data[0]
"""


def lines(source: str) -> list[int]:
    return [f.line for f in check(select="TD101", source=source, filename="train.py")]


def test_a_file_using_warp_ctc_reports_only_the_losses_of_torch():
    assert lines(SOURCE) == [13]  # `xe_loss.data[0]`, a CrossEntropyLoss: 0-dim


def test_without_warp_ctc_a_loss_back_propagated_is_0_dim():
    source = SOURCE.replace("from warpctc_pytorch import CTCLoss", "from losses import CTCLoss")
    assert lines(source) == [13, 13, 13]
