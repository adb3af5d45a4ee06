"""dataparallel-attribute: what the message says of a model wrapped under a condition."""

from __future__ import annotations

from torchdoctor.lint.api import check

WRAPPED_IF = """\
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, args):
        self.model = model
        if {test}:
            self.model = nn.DataParallel(self.model)
        self.optimizer = torch.optim.SGD(self.model.module.parameters(), lr=0.1)
"""


def _messages(test: str, lang: str = "en") -> list[str]:
    source = WRAPPED_IF.format(test=test)
    return [f.message for f in check(source=source, filename="train.py", select="TD602", lang=lang)]


def test_a_wrap_under_a_test_of_the_gpus_names_one_gpu_and_the_cpu():
    (message,) = _messages("torch.cuda.device_count() > 1")
    assert "where it does not (one GPU, the CPU)" in message


def test_a_wrap_under_another_test_names_that_test():
    # RMI's `if args.cuda:` wraps on one GPU too: only where the test is false is the model bare.
    (message,) = _messages("args.cuda")
    assert "where it does not (`args.cuda` false)" in message
    (chinese,) = _messages("args.cuda", lang="zh")
    assert "（`args.cuda` 不成立）" in chinese
