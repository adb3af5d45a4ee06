"""missing-zero-grad and a model of the project that clears its own gradients: a loop calling
it is left alone when some module of the project calls `self.zero_grad()` (issue 13:
lstm-crf-pytorch's model does it in `forward`, the training script never does)."""

from __future__ import annotations

from torchdoctor.lint.checker import check_source
from torchdoctor.lint.project import read_facts

MODEL = """
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        self.zero_grad()
        return self.fc(x).sum()
"""
TRAIN = """
import torch
from tagger import Tagger

model = Tagger()
optim = torch.optim.Adam(model.parameters())
for x in [torch.randn(3, 4)]:
    loss = model(x)
    loss.backward()
    optim.step()
"""


def _lines(*others: str) -> list[int]:
    project = read_facts([text.encode() for text in (TRAIN, *others)], modules=["tagger"])
    found = check_source(TRAIN, "train.py", frozenset({"TD201"}), project=project)
    return [f.line for f in found.findings]


def test_not_when_the_project_model_clears_its_own_gradients() -> None:
    assert _lines(MODEL) == []


def test_reported_when_no_module_of_the_project_clears_them() -> None:
    # On the loop's header (line 7), which never clears them.
    assert _lines(MODEL.replace("        self.zero_grad()\n", "")) == [7]
