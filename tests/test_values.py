"""Evidence from use (lint/values.py): what a callee's name and `.backward()` say of a value."""

from __future__ import annotations

import ast

import pytest

from torchdoctor.lint.values import computes_a_loss, name_words


def call(text: str) -> ast.Call:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call)
    return node


def test_name_words_split_snake_and_camel_case():
    assert name_words("compute_loss") == ["compute", "loss"]
    assert name_words("CrossEntropyLoss2d") == ["cross", "entropy", "loss", "2d"]
    assert name_words("set_forward_loss") == ["set", "forward", "loss"]


@pytest.mark.parametrize(
    "text",
    [
        "criterion(out, y)",
        "self.criterion(out, y)",
        "loss_fn(out, y)",
        "self.set_forward_loss(x)",
        "mixup_criterion(criterion, out, a, b, lam)",
        "nll_gaussian(out, target, var)",
        "crit(out, y, reduction='mean')",
    ],
)
def test_callees_named_as_a_loss(text):
    assert computes_a_loss(call(text))


@pytest.mark.parametrize(
    "text",
    [
        "model(x)",
        "compute_losses(out, y)",  # many
        "loss_fn(out, y, reduction='none')",  # one per element
        "loss_fn(out, y, reduce=False)",
        "loss_fn(out, y, **options)",  # could ask for one per element
        "nn.MSELoss(size_average=False)",  # builds a loss module
        "CrossEntropyLoss2d(weight)",
        "loss_weights(step)",
        "loss_per_sample(out, y)",
    ],
)
def test_callees_that_are_not_one_loss(text):
    assert not computes_a_loss(call(text))
