"""TD414 view-shape-mismatch: `view` / `reshape` to sizes written into the code."""

from __future__ import annotations

from math import prod

from torchdoctor.catalog.sdk import Clue, ErrorBlock, ErrorReport, Pitfall
from torchdoctor.catalog.tensor._view_shapes import invalid_view

PITFALL = Pitfall(
    code="TD414",
    name="view-shape-mismatch",
    title={
        "en": "`view` / `reshape` to a size written into the code",
        "zh": "`view` / `reshape` 使用了写死在代码里的尺寸",
    },
    messages={
        "": {
            "en": "the target shape of `view` / `reshape` does not hold the tensor's elements: "
            "take the sizes from the tensor (`x.view(x.size(0), -1)`, `x.flatten(1)`)",
            "zh": "`view` / `reshape` 的目标形状容纳不下张量的元素：请从张量本身取尺寸"
            "（`x.view(x.size(0), -1)`、`x.flatten(1)`）",
        }
    },
    fix_hint={
        "en": "Take the sizes from the tensor: `x.view(x.size(0), -1)` or `x.flatten(1)` "
        "instead of a written batch size or feature count, and size the next `nn.Linear` from "
        "the real feature count (or use `nn.LazyLinear`).",
        "zh": "从张量本身取尺寸：用 `x.view(x.size(0), -1)` 或 `x.flatten(1)` 代替写死的 batch "
        "大小或特征数，并按实际特征数设置后面的 `nn.Linear`（或使用 `nn.LazyLinear`）。",
    },
    docs={
        "en": """
## What it catches
The error `view` and `reshape` give when the target shape does not hold exactly the tensor's
elements, most often because a size in it was written into the code: the batch size
(`x.view(64, -1)`, wrong for the last, smaller batch of an epoch), or a feature count
(`x.view(-1, 16 * 5 * 5)`, wrong as soon as the input image size or a conv layer changes).

## Why is this bad?
A written size holds only for the input the code was first tried with. The last batch of an
epoch is smaller unless `drop_last=True`; a model trained on 32x32 images flattens a different
number of features on 64x64 ones. With `-1` the wrong size can even go unnoticed: `view(-1,
400)` of a tensor of 64 x 800 elements gives 128 rows, mixing samples, without any error.

## Symptoms
`RuntimeError: shape '[64, -1]' is invalid for input of size 3000`; before torch 1.0:
`RuntimeError: invalid argument 2: size '[-1 x 400]' is invalid for input with 1600 elements`.

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.view.html
""",
        "zh": """
## What it catches
`view` 和 `reshape` 的目标形状不能恰好容纳张量的所有元素时报出的错误，最常见的原因是形状里有写死在代码中的
尺寸：batch 大小（`x.view(64, -1)`，对 epoch 最后一个较小的 batch 就不对了），或者特征数
（`x.view(-1, 16 * 5 * 5)`，输入图像尺寸或某个卷积层一变就不对了）。

## Why is this bad?
写死的尺寸只适用于代码最初试过的那种输入。除非 `drop_last=True`，epoch 的最后一个 batch 会更小；在
32x32 图像上训练的模型，换成 64x64 图像后展平得到的特征数也不同。带 `-1` 时，错误的尺寸甚至可能不被
发现：对 64 x 800 个元素的张量做 `view(-1, 400)` 会得到 128 行，把样本混在一起，却不报任何错。

## Symptoms
`RuntimeError: shape '[64, -1]' is invalid for input of size 3000`；torch 1.0 之前：
`RuntimeError: invalid argument 2: size '[-1 x 400]' is invalid for input with 1600 elements`。

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.view.html
""",
    },
    example="""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 5)
        self.fc = nn.Linear(16 * 28 * 28, 10)

    def forward(self, x):
        x = self.conv(x)
        return self.fc(x.view(64, -1))
""",
    use_instead="""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 5)
        self.fc = nn.Linear(16 * 28 * 28, 10)

    def forward(self, x):
        x = self.conv(x)
        return self.fc(x.flatten(1))
""",
)

_FREE_DIMENSION = {
    "en": "`view` / `reshape` to [{shape}] needs a multiple of {known} elements (the sizes "
    "written into the shape), but the tensor has {size}: a feature count or batch size written "
    "into the code no longer matches the input (a different image size, a changed layer, a "
    "last batch that is smaller).",
    "zh": "`view` / `reshape` 到 [{shape}] 需要元素个数是 {known}（形状中写出的尺寸之积）的倍数，"
    "而张量有 {size} 个元素：写死在代码里的特征数或 batch 大小与输入不再相符（图像尺寸不同、"
    "某层改过，或者最后一个 batch 更小）。",
}
_FIXED = {
    "en": "`view` / `reshape` to [{shape}] asks for {known} elements, but the tensor has "
    "{size}: a size in the shape does not match the input, often a batch size written into "
    "the code (the last batch of an epoch is smaller) or a feature count the input no longer "
    "gives.",
    "zh": "`view` / `reshape` 到 [{shape}] 需要 {known} 个元素，而张量有 {size} 个：形状中的某个尺寸"
    "与输入不符，常见的是写死在代码里的 batch 大小（epoch 的最后一个 batch 更小），或者输入已经"
    "给不出的特征数。",
}


# A message printed without its exception class counts a little less, as a message pasted
# alone does (explain's own weight for one).
_WITHOUT_CLASS = 0.95


@PITFALL.error_check(types=("RuntimeError",), words=("]' is invalid",))
def invalid_shape(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    return _misfit(block.message, 1.0)


@PITFALL.error_check(types=(), words=("]' is invalid",))
def invalid_shape_in_log(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """The same message printed without its exception class: a training loop that catches the
    error and prints it, batch after batch, and goes on."""
    if block.short_type or report.exceptions:
        return None  # an exception shown is read by `invalid_shape`, with its class
    found = invalid_view(block.message)
    if found is not None and found.size is not None and -1 not in found.sizes:
        row = prod(found.sizes[1:])
        if row and found.size % row == 0 and found.size // row < found.sizes[0]:
            return None  # a smaller batch of these rows: hard-coded-batch-size's, with a class
    return _misfit(block.message, _WITHOUT_CLASS)


def _misfit(message: str, weight: float) -> Clue | None:
    found = invalid_view(message)
    if found is None:
        return None
    sizes, size = found.sizes, found.size
    known = prod(s for s in sizes if s != -1)
    if size is None:  # the message cut off before the size
        fields = {"shape": ", ".join(map(str, sizes)), "known": str(known), "size": "?"}
        return Clue(0.75 * weight, _FREE_DIMENSION if -1 in sizes else _FIXED, None, fields)
    if -1 in sizes and known and size % known == 0:
        return None  # the sizes fit: not a written size, something this entry cannot tell
    fields = {
        "shape": ", ".join(map(str, sizes)),
        "known": str(known),
        "size": str(size),
    }
    return Clue(0.85 * weight, _FREE_DIMENSION if -1 in sizes else _FIXED, None, fields)
