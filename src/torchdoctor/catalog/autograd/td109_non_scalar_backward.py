"""TD109 non-scalar-backward: `backward()` without a gradient on a tensor of several elements."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD109",
    name="non-scalar-backward",
    title={
        "en": "`backward()` on a loss that is not a scalar",
        "zh": "对非标量的损失调用 `backward()`",
    },
    messages={
        "": {
            "en": "`backward()` was called without a gradient argument on a tensor with more than "
            "one element: reduce it to a scalar first",
            "zh": "对包含多个元素的张量调用了不带梯度参数的 `backward()`：请先把它归约成标量",
        }
    },
    fix_hint={
        "en": "Reduce the loss to one number before `backward()`: `loss.mean().backward()` (or "
        "`.sum()`), or drop `reduction='none'` from the loss. Pass `gradient=` only when "
        "you really want a vector-Jacobian product.",
        "zh": "在 `backward()` 之前把损失归约成一个数：`loss.mean().backward()`（或 `.sum()`），"
        "或者去掉损失函数的 `reduction='none'`。只有确实要计算向量-雅可比积时才传入 `gradient=`。",
    },
    docs={
        "en": """
## What it catches
The autograd error raised when `backward()` is called without a `gradient` argument on a
tensor that has more than one element: `grad can be implicitly created only for scalar
outputs`. `torch.autograd.grad(outputs, inputs)` without `grad_outputs=` raises it too, as in
a gradient penalty written from a paper's formula.

## Why is this bad?
`loss.backward()` computes the gradient of one number with respect to the parameters; it
starts from an implicit gradient of `1.0`, which only makes sense for a scalar. A loss with one
value per sample (a loss built with `reduction='none'`, a per-sample loss written by hand,
the output of a model that returns one loss per GPU under `DataParallel`) has no such
starting point. Reduce it the way you mean it, usually with `.mean()` so the learning rate
does not depend on the batch size, or `.sum()`. Passing `torch.ones_like(loss)` as `gradient`
is the same as `.sum()`.

## Symptoms
`RuntimeError: grad can be implicitly created only for scalar outputs`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
        "zh": """
## What it catches
对包含多个元素的张量调用不带 `gradient` 参数的 `backward()` 时，autograd 抛出的错误：
`grad can be implicitly created only for scalar outputs`。不传 `grad_outputs=` 而调用
`torch.autograd.grad(outputs, inputs)` 也会报这个错，例如照着论文公式写的梯度惩罚。

## Why is this bad?
`loss.backward()` 计算的是“一个数”对参数的梯度，它从隐含的梯度 `1.0` 出发，这只对标量有意义。
每个样本一个值的损失（用 `reduction='none'` 构造的损失、手写的逐样本损失、`DataParallel`
下每块 GPU 返回一个损失的模型输出）没有这样的起点。请按你的本意归约它：通常用 `.mean()`，
这样学习率不受 batch 大小影响；也可以用 `.sum()`。把 `torch.ones_like(loss)` 作为 `gradient`
传入，效果等同于 `.sum()`。

## Symptoms
`RuntimeError: grad can be implicitly created only for scalar outputs`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
criterion = nn.MSELoss(reduction="none")
loss = criterion(model(torch.randn(8, 4)), torch.randn(8, 1))
loss.backward()
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
criterion = nn.MSELoss(reduction="none")
loss = criterion(model(torch.randn(8, 4)), torch.randn(8, 1))
loss.mean().backward()
""",
)

# "scaler": the message as issues retype it.
_MESSAGE = r"grad can be implicitly created only for scal[ae]r outputs"
_MESSAGE_REGEX = lazy_compile(_MESSAGE)


@PITFALL.error_check(types=("RuntimeError",), words=("grad can be implicitly created",))
def check_autograd_grad(block, report):
    """The same message from `torch.autograd.grad` (a gradient penalty, a Jacobian row)."""
    if _MESSAGE_REGEX.search(block.message) is None:
        return None
    if not any(frame.function == "grad" and "autograd" in frame.path for frame in block.frames):
        return None
    return Clue(
        0.95,
        {
            "en": "`torch.autograd.grad` was called on outputs with several elements without "
            "`grad_outputs=`: autograd can only assume a gradient of 1 for a scalar.",
            "zh": "对包含多个元素的输出调用 `torch.autograd.grad` 时没有传入 `grad_outputs=`："
            "autograd 只能为标量假定梯度为 1。",
        },
        {
            "en": "Pass `grad_outputs=torch.ones_like(outputs)` (what a gradient penalty needs: the "
            "gradient of `outputs.sum()`), or reduce the outputs to a scalar first.",
            "zh": "传入 `grad_outputs=torch.ones_like(outputs)`（梯度惩罚需要的正是 `outputs.sum()` 的梯度），"
            "或者先把输出归约成标量。",
        },
    )


_CAUSE = {
    "en": "`backward()` was called without `gradient=` on a tensor with several elements: "
    "a loss with `reduction='none'`, a per-sample loss, or one loss per GPU under "
    "`DataParallel`, not reduced to a scalar.",
    "zh": "对包含多个元素的张量调用了不带 `gradient=` 的 `backward()`：使用了 "
    "`reduction='none'` 的损失、逐样本的损失，或 `DataParallel` 下每块 GPU 一个的损失，"
    "没有归约成标量。",
}
PITFALL.error(_MESSAGE, confidence=0.95, cause=_CAUSE)

# The exception line cut short where an issue's paste ends: `grad can be implicitly create`.
# A start of the message this long is said by no other error.
_FULL_MESSAGE = "grad can be implicitly created only for scalar outputs"
_SHORTEST_START = 20


@PITFALL.error_check(types=("RuntimeError",), words=("grad can be implicit",))
def cut_message(block, report) -> Clue | None:
    message = block.message.strip()
    if len(message) < _SHORTEST_START or not _FULL_MESSAGE.startswith(message):
        return None
    if message == _FULL_MESSAGE:
        return None  # the whole message: the signature above
    return Clue(0.9, _CAUSE)


# A traceback cut before its exception line (an issue pastes only its top) whose last frame is
# autograd making the implicit gradient of a `.backward()` called without one: the only error
# `_make_grads` raises then is this one (a complex loss aside). DataParallel's warning that it
# gathered scalars into a vector says where the vector came from.
_LAST_FRAME = lazy_compile(
    r'File "(?P<path>[^"\n]{1,400})", line \d+, in (?P<function>\w+)\n(?P<source>[^\n]*)'
    r"(?:\n[ \t]*[~^]+)?\s*\Z"
)
_NO_GRADIENT = lazy_compile(r"(?m)\.backward\(\)[ \t]*$")
_GATHERED_SCALARS = lazy_compile(
    r"all input tensors were scalars; will instead unsqueeze and return a vector"
)
_CUT_CAUSE = {
    "en": "The traceback stops in autograd's `_make_grads`, under a `.backward()` called without "
    "a gradient: the loss has several elements (its exception line is not shown, so this is "
    "read from the traceback alone).",
    "zh": "回溯停在 autograd 的 `_make_grads` 中，其上是一个没有传入梯度的 `.backward()`：损失含有多个元素"
    "（没有贴出异常那一行，所以这只是根据回溯本身得出的判断）。",
}
_GATHERED_CAUSE = {
    "en": "Under `DataParallel` each GPU's scalar loss was gathered into a vector (the warning "
    '"all input tensors were scalars; will instead unsqueeze and return a vector"), and '
    "`.backward()` was called on that vector without a gradient: reduce it first "
    "(`loss.mean().backward()`).",
    "zh": '在 `DataParallel` 下，每块 GPU 的标量损失被收集成了一个向量（警告 "all input tensors were '
    'scalars; will instead unsqueeze and return a vector"），又对这个向量调用了不带梯度的 '
    "`.backward()`：先把它归约（`loss.mean().backward()`）。",
}


@PITFALL.error_check(types=(), words=("_make_grads",))
def cut_in_make_grads(block, report):
    """Only when no exception line was pasted: with one, the message says it."""
    if report.exceptions:
        return None
    return report.once(_cut_in_make_grads)


def _cut_in_make_grads(report) -> Clue | None:
    last = report.search(_LAST_FRAME)
    if last is None or "autograd" not in last["path"]:
        return None
    if last["function"] != "_make_grads" and "_make_grads(" not in last["source"]:
        return None
    if report.search(_NO_GRADIENT) is None:
        return None
    if report.search(_GATHERED_SCALARS) is not None:
        return Clue(0.85, _GATHERED_CAUSE)
    return Clue(0.75, _CUT_CAUSE)
