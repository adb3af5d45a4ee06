"""TD207 cross-entropy-target-dtype: class-index targets of a classification loss are not int64."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, dtypes, lazy_compile, Monitor, Pitfall

PITFALL = Pitfall(
    code="TD207",
    name="cross-entropy-target-dtype",
    title={
        "en": "Target of a cross-entropy loss of the wrong dtype (class indices not int64)",
        "zh": "交叉熵损失的 target dtype 不对（类别索引不是 int64）",
    },
    messages={
        "": {
            "en": "The target of `CrossEntropyLoss`/`NLLLoss` holds class indices and must be an "
            "int64 (`torch.long`) tensor",
            "zh": "`CrossEntropyLoss`/`NLLLoss` 的 target 是类别索引，必须是 int64（`torch.long`）张量",
        },
        "runtime": {
            "en": "`{loss}` got class-index targets of dtype {dtype} (shape {target}, input "
            "{input}): the loss indexes the input with them and accepts only int64 "
            "(`torch.long`); convert with `target.long()`",
            "zh": "`{loss}` 收到的类别索引 target 的 dtype 是 {dtype}（形状 {target}，输入 {input}）："
            "损失函数要用它去索引输入，只接受 int64（`torch.long`）；请用 `target.long()` 转换",
        },
    },
    fix_hint={
        "en": "Convert the labels to int64 where they are made or right before the loss: "
        "`loss = criterion(logits, labels.long())`. Float labels usually come from numpy "
        "(`torch.from_numpy` of a float array, `torch.Tensor(labels)`); int32 labels from "
        "`np.int32`/pandas columns or `torch.IntTensor`.",
        "zh": "在生成标签的地方或紧挨着损失函数之前把它转成 int64：`loss = criterion(logits, "
        "labels.long())`。float 标签通常来自 numpy（对 float 数组做 `torch.from_numpy`，"
        "或用 `torch.Tensor(labels)`）；int32 标签来自 `np.int32`、pandas 的列或 `torch.IntTensor`。",
    },
    docs={
        "en": """
## What it catches
The dtype errors of `nn.CrossEntropyLoss`, `nn.NLLLoss`, `F.cross_entropy` and `F.nll_loss`
when the target holds class indices of a dtype other than int64: `expected scalar type Long but
found Float` (or `Int`), `expected target dtype to be Long or Byte, but got Float`,
`"nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented for 'Int'` and the older
`Expected object of scalar type Long but got scalar type Float for argument #2 'target'`.

## Why is this bad?
With class-index targets, `cross_entropy` uses each target value to pick one column of the
logits, and its kernels are written for int64 indices only. Labels are often built by code
that does not care about dtypes: `torch.Tensor(labels)` and `torch.from_numpy` of a float array
give float32/float64, pandas and `np.int32` give int32, and `torch.tensor` of a list of Python
floats gives float32. Since PyTorch 1.10 a float target with the same shape as the input is
read as class probabilities (soft labels); the reverse mistake, one-hot labels stored as
int64, fails with `Expected floating point type for target with class probabilities, got
Long`.

## Symptoms
- PyTorch 2.13: `RuntimeError: expected target dtype to be Long or Byte, but got Float`
- earlier 2.x and late 1.x: `RuntimeError: expected scalar type Long but found Float` (or
  `found Int`),
  on CUDA `RuntimeError: "nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented for
  'Int'`
- early 1.x: `RuntimeError: Expected object of scalar type Long but got scalar type Float for
  argument #2 'target' in call to _thnn_nll_loss_forward`
- 0.4: `RuntimeError: Expected object of type torch.LongTensor but found type
  torch.FloatTensor for argument #2 'target'`
- one-hot int64 target: `RuntimeError: Expected floating point type for target with class
  probabilities, got Long`
- the reverse, integer labels given to `BCELoss`/`BCEWithLogitsLoss`, which take float targets:
  `RuntimeError: Found dtype Long but expected Float`, `RuntimeError: result type Float can't
  be cast to the desired output type Long`, raised in `binary_cross_entropy*`

## Known problems
`expected scalar type Long but found Float` is also raised by other operations fed an int64
tensor (a matrix product of integer inputs with float weights): without a loss function in the
traceback the explainer ranks this entry lower.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
        "zh": """
## What it catches
`nn.CrossEntropyLoss`、`nn.NLLLoss`、`F.cross_entropy`、`F.nll_loss` 的 target 是类别索引、
但 dtype 不是 int64 时的报错：`expected scalar type Long but found Float`（或 `Int`）、
`expected target dtype to be Long or Byte, but got Float`、
`"nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented for 'Int'`，以及较早版本的
`Expected object of scalar type Long but got scalar type Float for argument #2 'target'`。

## Why is this bad?
当 target 是类别索引时，`cross_entropy` 用每个 target 值去取 logits 中的某一列，它的内核只支持
int64 索引。标签往往由不关心 dtype 的代码生成：`torch.Tensor(labels)` 和对 float 数组做
`torch.from_numpy` 得到的是 float32/float64，pandas 和 `np.int32` 给出的是 int32，对 Python
浮点数列表调用 `torch.tensor` 得到的是 float32。从 PyTorch 1.10 起，与输入形状相同的 float target
会被当作类别概率（软标签）；反过来，把 one-hot 标签存成 int64，则会报
`Expected floating point type for target with class probabilities, got Long`。

## Symptoms
- PyTorch 2.13：`RuntimeError: expected target dtype to be Long or Byte, but got Float`
- 较早的 2.x 和较晚的 1.x：`RuntimeError: expected scalar type Long but found Float`（或 `found Int`），
  CUDA 上为 `RuntimeError: "nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented for
  'Int'`
- 早期的 1.x：`RuntimeError: Expected object of scalar type Long but got scalar type Float for
  argument #2 'target' in call to _thnn_nll_loss_forward`
- 0.4：`RuntimeError: Expected object of type torch.LongTensor but found type
  torch.FloatTensor for argument #2 'target'`
- one-hot 的 int64 标签：`RuntimeError: Expected floating point type for target with class
  probabilities, got Long`
- 反过来，把整数标签传给只接受浮点 target 的 `BCELoss`/`BCEWithLogitsLoss`：
  `RuntimeError: Found dtype Long but expected Float`、`RuntimeError: result type Float can't
  be cast to the desired output type Long`，在 `binary_cross_entropy*` 中抛出

## Known problems
其他运算收到 int64 张量时（例如整数输入与浮点权重做矩阵乘法）也会报 `expected scalar type Long
but found Float`：调用栈中没有损失函数时，解释器会降低这一条的排名。

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
    },
    example="""
import numpy as np
import torch
import torch.nn as nn

criterion = nn.CrossEntropyLoss()
logits = torch.randn(4, 3, requires_grad=True)
labels = torch.from_numpy(np.array([0.0, 2.0, 1.0, 0.0]))
loss = criterion(logits, labels)
""",
    use_instead="""
import numpy as np
import torch
import torch.nn as nn

criterion = nn.CrossEntropyLoss()
logits = torch.randn(4, 3, requires_grad=True)
labels = torch.from_numpy(np.array([0.0, 2.0, 1.0, 0.0]))
loss = criterion(logits, labels.long())
""",
)

_CAUSE = {
    "en": "The target passed to `cross_entropy`/`nll_loss` holds class indices as {dtype}; "
    "the loss indexes the logits with it and accepts only int64 (`torch.long`).",
    "zh": "传给 `cross_entropy`/`nll_loss` 的 target 是 {dtype} 类型的类别索引；损失函数要用它去索引 "
    "logits，只接受 int64（`torch.long`）。",
}
_CAUSE_UNSURE = {
    "en": "An operation expected an int64 (Long) tensor and got {dtype}. Most often this is the "
    "target of `CrossEntropyLoss`/`NLLLoss` holding class indices as {dtype}; if no "
    "loss is involved, an integer tensor is mixed with float ones.",
    "zh": "某个运算需要 int64（Long）张量，却收到了 {dtype}。最常见的情况是 "
    "`CrossEntropyLoss`/`NLLLoss` 的 target 以 {dtype} 保存类别索引；如果不涉及损失函数，"
    "则是整数张量与浮点张量混用了。",
}
_CAUSE_ONE_HOT = {
    "en": "The target has the same shape as the logits, so `cross_entropy` reads it as class "
    "probabilities, which must be floating point: these are one-hot (or multi-hot) "
    "labels stored as int64.",
    "zh": "target 与 logits 形状相同，`cross_entropy` 因此把它当作类别概率，而概率必须是浮点数："
    "这是以 int64 保存的 one-hot（或 multi-hot）标签。",
}
_FIX_ONE_HOT = {
    "en": "Pass class indices instead, `criterion(logits, labels.argmax(dim=1))`, or keep the "
    "soft labels and make them float: `labels.float()`.",
    "zh": "改为传入类别索引 `criterion(logits, labels.argmax(dim=1))`，或者保留软标签并把它转成浮点："
    "`labels.float()`。",
}

# Messages that name the target of a classification loss; `'target'` also retyped with curly
# quotes or backticks (`‘target``), as issues quote it.
_NAMED = [
    re.compile(p)
    for p in (
        r"expected target dtype to be Long or Byte, but got (?P<dtype>\w+)",
        r"Expected object of scalar type Long but got scalar type (?P<dtype>\w+) "
        r"for argument #\d+ ['‘’`]target\b",
        r"Expected object of type (?:Variable\[)?torch\.(?:cuda\.)?LongTensor\]? but found type "
        r"(?:Variable\[)?torch\.(?:cuda\.)?(?P<dtype>\w+?)Tensor\]? for argument #\d+ ['‘’`]target\b",
        # Quotes as printed, and as curly quotes when pasted through a blog or a word processor.
        r"[\"“”](?:nll_loss|cross_entropy)\w*[\"“”] not implemented for ['‘’](?P<dtype>\w+)['‘’]",
    )
]
_LONG_EXPECTED = re.compile(r"expected scalar type Long but found (?P<dtype>\w+)")
_ONE_HOT = "Expected floating point type for target with class probabilities, got Long"
_LOSS_FUNCTIONS = ("cross_entropy", "nll_loss", "CrossEntropyLoss", "NLLLoss")


@PITFALL.error_check(
    types=("RuntimeError",),
    words=(
        "target dtype to be long or byte",
        "object of scalar type long but",
        "expected object of type",
        "not implemented for",
        "target with class probabilities",
        "expected scalar type long but found",
    ),
)
def check_target_dtype(block, report):
    for pattern in _NAMED:
        found = pattern.search(block.message)
        if found is not None:
            return Clue(0.95, _CAUSE, None, {"dtype": found.group("dtype")})
    if _ONE_HOT in block.message:
        return Clue(0.9, _CAUSE_ONE_HOT, _FIX_ONE_HOT)
    found = _LONG_EXPECTED.search(block.message)
    if found is None:
        return _long_expected_in_the_loss(block)
    fields = {"dtype": found.group("dtype")}
    if _near_a_loss(block, report):
        return Clue(0.95, _CAUSE, None, fields)
    if dtypes.inside_a_layer(block, report):
        # Raised inside a layer of the model (`self.fc(labels)`), not in a loss: an integer
        # tensor fed to a float layer, dtype-mismatch's answer; a target only if that reads wrong.
        return Clue(0.4, _CAUSE_UNSURE, None, fields)
    return Clue(0.7, _CAUSE_UNSURE, None, fields)


# torch 1.x's message cut before it names the argument ("Expected object of scalar type Long
# but", a truncated paste) or naming none, raised in the loss's own frames: of the tensors
# `nll_loss` takes, only the target is Long (input and weight are floating point).
_LONG_OBJECT = lazy_compile(
    r"Expected object of scalar type Long but"
    r"(?! got scalar type \w+ for argument #\d+ ['‘’`](?!target))"
)
_CAUSE_CUT = {
    "en": "The target passed to `cross_entropy`/`nll_loss` is not int64: the loss raised, in "
    "its own frames, that it expected a Long tensor, and the target is the only one of its "
    "tensors that must be Long (the class indices it indexes the log-probabilities with).",
    "zh": "传给 `cross_entropy`/`nll_loss` 的 target 不是 int64：损失函数在它自己的调用帧里报错说需要 "
    "Long 张量，而它的张量中只有 target 必须是 Long（用来索引对数概率的类别索引）。",
}


def _long_expected_in_the_loss(block) -> Clue | None:
    found = _LONG_OBJECT.search(block.message)
    if found is None:
        return None
    if not block.frames:
        # Told without frames (an issue's title, cut before the argument's name): read as its
        # newer wording `expected scalar type Long but found Float` is, most often a target.
        dtype = _CUT_DTYPE.match(block.message, found.end())
        fields = {"dtype": dtype.group("dtype") if dtype else "another dtype"}
        return Clue(0.7, _CAUSE_UNSURE, None, fields)
    if not _frames_name(block.frames[-2:], _LOSS_FUNCTIONS):
        return None
    return Clue(0.85, _CAUSE_CUT)


_CUT_DTYPE = lazy_compile(r" got scalar type (?P<dtype>\w+)")


# The binary losses want the reverse: a floating target, 0./1. per element. An integer target
# fails in the loss's kernel with a message that names no target, so only the frames tell.
_INTEGER_TARGET = re.compile(
    r"Found dtype (?P<dtype>Long|Int) but expected Float"
    r"|result type Float can't be cast to the desired output type (?P<out>Long|Int)\b"
    r"|expected scalar type Float but found (?P<found>Long|Int)\b"
)
_BINARY_LOSSES = ("binary_cross_entropy", "BCELoss", "BCEWithLogitsLoss")
_BINARY_CAUSE = {
    "en": "The target of `binary_cross_entropy`/`BCEWithLogitsLoss` holds {dtype} labels, and "
    "these losses take a floating target (the probability of each element, like the input).",
    "zh": "`binary_cross_entropy`/`BCEWithLogitsLoss` 的 target 是 {dtype} 类型的标签，而这类损失"
    "需要浮点的 target（每个元素的概率，与输入一样）。",
}
_BINARY_FIX = {
    "en": "Make the labels float: `loss = criterion(output, labels.float())`, or build them as "
    "floats (`torch.full((n,), 1.0)`, `real_label = 1.0`).",
    "zh": "把标签转成浮点：`loss = criterion(output, labels.float())`，或者一开始就以浮点构造"
    "（`torch.full((n,), 1.0)`、`real_label = 1.0`）。",
}


@PITFALL.error_check(
    types=("RuntimeError",),
    words=(
        "but expected float",
        "to the desired output type",
        "expected scalar type float but found",
    ),
)
def check_binary_target_dtype(block, report):
    found = _INTEGER_TARGET.search(block.message)
    if found is None:
        return None
    # The error's innermost frames are the binary loss's own: not any op that mixed dtypes.
    if not _frames_name(block.frames[-2:], _BINARY_LOSSES):
        return None
    dtype = found.group("dtype") or found.group("out") or found.group("found")
    return Clue(0.95, _BINARY_CAUSE, _BINARY_FIX, {"dtype": dtype})


def _near_a_loss(block, report) -> bool:
    """The traceback passes through a classification loss, or the message speaks of one."""
    if "target" in block.message or "nll" in block.message:
        return True
    return _frames_name(block.frames, _LOSS_FUNCTIONS)


def _frames_name(frames, names) -> bool:
    """Some of `frames` runs or calls one of `names` (in its function's name or source line)."""
    return any(
        name in f"{frame.function or ''} {frame.source or ''}" for frame in frames for name in names
    )


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class TargetNotInt64(Monitor):
    """Class-index targets (the input's shape without its class dimension) that are not int64,
    seen before the loss raises. Free: dtypes and shapes only, no tensor is read.

    Left alone: float targets of the input's own shape (class probabilities, soft labels,
    legal since 1.10); targets of any other shape (the loss raises a shape error, not this
    one); and uint8 targets of an `(N, C)` or `(C,)` input, which the NLL kernel accepts
    ("Long or Byte"); with spatial dimensions (`(N, C, H, W)`) uint8 fails."""

    def on_loss(self, name: str, input, target, kwargs: dict) -> None:
        import torch

        if name not in ("cross_entropy", "nll_loss"):
            return
        if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
            return
        if target.dtype is torch.int64 or input.dim() == 0:
            return
        class_dim = 0 if input.dim() == 1 else 1
        if target.shape != input.shape[:class_dim] + input.shape[class_dim + 1 :]:
            return
        if target.dtype is torch.uint8 and input.dim() <= 2:
            return
        self.report(
            self.session.where(),
            "runtime",
            loss=name,
            dtype=str(target.dtype).removeprefix("torch."),
            target=list(target.shape),
            input=list(input.shape),
        )
