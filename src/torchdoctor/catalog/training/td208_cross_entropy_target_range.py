"""TD208 cross-entropy-target-range: a class label outside [0, num_classes) in the loss."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, Monitor, Pitfall

PITFALL = Pitfall(
    code="TD208",
    name="cross-entropy-target-range",
    title={
        "en": "Class label outside `[0, num_classes)` in `cross_entropy`/`nll_loss`",
        "zh": "`cross_entropy`/`nll_loss` 的类别标签超出 `[0, num_classes)`",
    },
    messages={
        "": {
            "en": "A target of `CrossEntropyLoss`/`NLLLoss` is not a valid class index: every "
            "label must be in `[0, num_classes)` or equal to `ignore_index`",
            "zh": "`CrossEntropyLoss`/`NLLLoss` 的某个 target 不是合法的类别索引：每个标签都必须在 "
            "`[0, num_classes)` 内，或等于 `ignore_index`",
        },
        "runtime": {
            "en": "`{loss}` got class labels from {low} to {high} for an input with {classes} "
            "classes: every label must be in `[0, {classes})` or equal to "
            "`ignore_index` ({ignore_index}). On the CPU the loss raises `IndexError: Target "
            "... is out of bounds`; on a GPU it trips a device-side assert that breaks every "
            "later CUDA call",
            "zh": "`{loss}` 收到的类别标签从 {low} 到 {high}，而输入只有 {classes} 个类别：每个标签都必须在 "
            "`[0, {classes})` 内，或等于 `ignore_index`（{ignore_index}）。在 CPU 上损失函数会抛出 "
            "`IndexError: Target ... is out of bounds`；在 GPU 上会触发 device-side assert，"
            "之后的每个 CUDA 调用都会失败",
        },
    },
    fix_hint={
        "en": "Check the labels against the model's output size: `print(labels.min(), "
        "labels.max(), logits.shape[1])`. Shift 1-based labels with `labels - 1`, give the "
        "last layer as many outputs as there are classes (background included), and pass "
        "`ignore_index=-1` (or your padding value) for padded or unlabelled positions. "
        "On a GPU, run once on the CPU or with `CUDA_LAUNCH_BLOCKING=1` to see the "
        "exact error.",
        "zh": "对照模型输出的类别数检查标签：`print(labels.min(), labels.max(), logits.shape[1])`。"
        "从 1 开始编号的标签用 `labels - 1` 平移；最后一层的输出个数要等于类别数（包括背景类）；"
        "填充或未标注的位置请传入 `ignore_index=-1`（或你的填充值）。在 GPU 上出错时，"
        "先在 CPU 上或用 `CUDA_LAUNCH_BLOCKING=1` 运行一次，看到准确的报错。",
    },
    docs={
        "en": """
## What it catches
The errors of `nn.CrossEntropyLoss`, `nn.NLLLoss`, `F.cross_entropy` and `F.nll_loss` when a
target is not a valid class index: on the CPU `IndexError: Target 10 is out of bounds.`; on
CUDA the kernel assertion `` Assertion `t >= 0 && t < n_classes` failed. `` printed as log
lines, followed by a `device-side assert triggered` error that may surface much later, in an
unrelated line (`loss.item()`, a metric, `print(...)`); and the old `ClassNLLCriterion`
assertion `` Assertion `cur_target >= 0 && cur_target < n_classes' failed ``.

## Why is this bad?
For a model with `C` outputs, class-index targets must lie in `0 .. C-1` (or equal
`ignore_index`, -100 by default). The loss uses each target to index the logits, so a label
outside that range reads out of bounds: the CPU checks and raises, a GPU kernel trips an
assertion that poisons the CUDA context, and every later CUDA call fails with the same generic
message. Usual causes:

- labels numbered from 1 (`1..C`), as many datasets and CSV files do;
- `num_classes` set one too low, for example forgetting the background class in segmentation,
  or a dataset with more classes than the pretrained head;
- padding or "unknown" labels such as -1 or 255 without `ignore_index=-1`/`ignore_index=255`;
- labels that were remapped for the training set but not for the validation set.

## Symptoms
- CPU, PyTorch 1.5 and later: `IndexError: Target 10 is out of bounds.`
- CUDA: `` .../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d:
  block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed. `` (also from
  `NLLLoss2d.cu`, `ClassNLLCriterion.cu`, `SpatialClassNLLCriterion.cu`), then
  `RuntimeError: CUDA error: device-side assert triggered` or, before 1.5, `RuntimeError: cuda
  runtime error (59) : device-side assert triggered at .../ClassNLLCriterion.cu:110`
- CPU, before 1.5: `` RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes'
  failed.  at .../THNN/generic/ClassNLLCriterion.c:93 ``

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
        "zh": """
## What it catches
`nn.CrossEntropyLoss`、`nn.NLLLoss`、`F.cross_entropy`、`F.nll_loss` 的某个 target 不是合法类别索引时的报错：
CPU 上是 `IndexError: Target 10 is out of bounds.`；CUDA 上是以日志行形式打印的内核断言
`` Assertion `t >= 0 && t < n_classes` failed. ``，随后出现 `device-side assert triggered`，
它可能很久之后才在一行毫不相关的代码（`loss.item()`、某个指标、`print(...)`）处冒出来；
以及旧版本 `ClassNLLCriterion` 的断言 `` Assertion `cur_target >= 0 && cur_target < n_classes' failed ``。

## Why is this bad?
对于有 `C` 个输出的模型，类别索引形式的 target 必须在 `0 .. C-1` 之内（或等于 `ignore_index`，默认 -100）。
损失函数用每个 target 去索引 logits，超出范围的标签会越界读取：CPU 会检查并抛出异常；GPU 内核则触发断言，
破坏整个 CUDA 上下文，之后的每个 CUDA 调用都以同样笼统的信息失败。常见原因：

- 标签从 1 开始编号（`1..C`），很多数据集和 CSV 文件都是这样；
- `num_classes` 少设了一个，例如语义分割忘了背景类，或者数据集的类别比预训练分类头的多；
- 填充或“未知”标签（如 -1、255）没有设置 `ignore_index=-1`/`ignore_index=255`；
- 训练集的标签重新映射过，验证集却没有。

## Symptoms
- CPU，PyTorch 1.5 及以后：`IndexError: Target 10 is out of bounds.`
- CUDA：`` .../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d:
  block: [0,0,0], thread: [0,0,0] Assertion `t >= 0 && t < n_classes` failed. ``（也可能来自
  `NLLLoss2d.cu`、`ClassNLLCriterion.cu`、`SpatialClassNLLCriterion.cu`），随后是
  `RuntimeError: CUDA error: device-side assert triggered`，1.5 之前为 `RuntimeError: cuda
  runtime error (59) : device-side assert triggered at .../ClassNLLCriterion.cu:110`
- CPU，1.5 之前：`` RuntimeError: Assertion `cur_target >= 0 && cur_target < n_classes'
  failed.  at .../THNN/generic/ClassNLLCriterion.c:93 ``

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
""",
    },
    example="""
import torch
import torch.nn as nn

num_classes = 10
model = nn.Linear(32, num_classes)
labels = torch.tensor([1, 5, 10, 3])
loss = nn.CrossEntropyLoss()(model(torch.randn(4, 32)), labels)
""",
    use_instead="""
import torch
import torch.nn as nn

num_classes = 10
model = nn.Linear(32, num_classes)
labels = torch.tensor([1, 5, 10, 3]) - 1
loss = nn.CrossEntropyLoss()(model(torch.randn(4, 32)), labels)
""",
)

_CAUSE_ASSERT = {
    "en": "A class label passed to `cross_entropy`/`nll_loss` on the GPU is outside "
    "`[0, num_classes)`: the kernel's target-range assertion failed. The Python line "
    "where the error surfaced may be far from the loss call. Usual causes: labels "
    "numbered from 1, `num_classes` one too low, or -1/255 padding without "
    "`ignore_index`.",
    "zh": "GPU 上传给 `cross_entropy`/`nll_loss` 的某个类别标签超出了 `[0, num_classes)`：内核的 "
    "target 范围断言失败。Python 报错所在的行可能离损失函数的调用很远。常见原因：标签从 1 开始编号、"
    "`num_classes` 少了一个，或者 -1/255 之类的填充值没有设置 `ignore_index`。",
}

_CAUSE_LABEL = {
    "en": "A class label of {target} was passed to `cross_entropy`/`nll_loss`, outside "
    "`[0, num_classes)` of the logits: labels numbered from 1, or `num_classes` (the "
    "size of the last layer) smaller than the number of classes in the data.",
    "zh": "传给 `cross_entropy`/`nll_loss` 的类别标签 {target} 超出了 logits 的 `[0, num_classes)`："
    "标签从 1 开始编号，或者 `num_classes`（最后一层的输出个数）小于数据中的类别数。",
}
_CAUSE_NEGATIVE = {
    "en": "A class label of {target} was passed to `cross_entropy`/`nll_loss`: a padding or "
    '"unknown" marker that the loss does not know to skip (its `ignore_index` is '
    "-100 by default).",
    "zh": "传给 `cross_entropy`/`nll_loss` 的类别标签是 {target}：这是一个填充或“未知”标记，"
    "而损失函数并不知道要跳过它（`ignore_index` 默认是 -100）。",
}
_FIX_NEGATIVE = {
    "en": "Pass `ignore_index={target}` to the loss "
    "(`nn.CrossEntropyLoss(ignore_index={target})`), or pad the labels with -100.",
    "zh": "给损失函数传入 `ignore_index={target}`（`nn.CrossEntropyLoss(ignore_index={target})`），"
    "或者用 -100 填充标签。",
}
_CAUSE_VOID = {
    "en": "A class label of 255 was passed to `cross_entropy`/`nll_loss`: 255 marks "
    '"void" or boundary pixels in segmentation masks (VOC, Cityscapes), and the loss '
    "only skips `ignore_index`, -100 by default.",
    "zh": "传给 `cross_entropy`/`nll_loss` 的类别标签是 255：在分割掩码（VOC、Cityscapes）中 255 "
    "表示“无效”或边界像素，而损失函数只会跳过 `ignore_index`，默认是 -100。",
}
_FIX_VOID = {
    "en": "Pass `ignore_index=255` to the loss: `nn.CrossEntropyLoss(ignore_index=255)`.",
    "zh": "给损失函数传入 `ignore_index=255`：`nn.CrossEntropyLoss(ignore_index=255)`。",
}
_OUT_OF_BOUNDS = re.compile(r"Target (?P<target>-?\d+) is out of bounds")


@PITFALL.error_check(types=("IndexError", "RuntimeError"), words=("is out of bounds",))
def check_target_out_of_bounds(block, report):
    found = _OUT_OF_BOUNDS.search(block.message)
    if found is None:
        return None
    target = int(found.group("target"))
    fields = {"target": found.group("target")}
    if target < 0:
        return Clue(0.95, _CAUSE_NEGATIVE, _FIX_NEGATIVE, fields)
    if target == 255:
        return Clue(0.95, _CAUSE_VOID, _FIX_VOID, fields)
    return Clue(0.95, _CAUSE_LABEL, None, fields)


# The CUDA kernel assertion, a log line (with or without its backquotes), and the CPU THNN
# assertion of PyTorch < 1.5 raised as a RuntimeError.
PITFALL.error(
    r"Assertion [`']?(?:t|cur_target) >= 0 && (?:t|cur_target) < n_classes[`']? failed",
    types=(),
    confidence=0.95,
    cause=_CAUSE_ASSERT,
)

_DEVICE_ASSERT = re.compile(r"device-side assert(?:ion)? triggered")
# CUDA sources and kernels of the NLL loss, as they appear in THCudaCheck messages.
_NLL_SOURCE = re.compile(
    r"ClassNLLCriterion|NLLLoss2d|nll_loss\w{0,40}_kernel"
)  # bounded: linear in a long word
_LOSS_FUNCTIONS = ("cross_entropy", "nll_loss")


@PITFALL.error_check(
    types=("RuntimeError", "AcceleratorError", "CUDAError"), words=("device-side assert",)
)
def check_device_assert(block, report):
    """A generic device-side assert raised inside the NLL loss (its source file or frames)."""
    if not _DEVICE_ASSERT.search(block.message):
        return None
    if _NLL_SOURCE.search(block.message):
        return Clue(0.9, _CAUSE_ASSERT)
    if any(frame.function in _LOSS_FUNCTIONS for frame in block.frames):
        return Clue(0.85, _CAUSE_ASSERT)
    return None


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class TargetOutOfRange(Monitor):
    """Class-index targets of `cross_entropy`/`nll_loss` outside `[0, C)`, seen before the loss
    kernel runs: on a GPU the kernel's assertion would poison the CUDA context.

    Cost: on a GPU, one `aminmax` of the target per call and one copy of its two values to the
    host (a synchronisation). On the CPU nothing while the loss succeeds: its kernel checks
    every label itself and raises `IndexError: Target ... is out of bounds`, and only then is
    the range read, to say which labels and why (verified on torch 2.13 for both losses,
    spatial targets, class weights, label smoothing and `ignore_index`). Only when the range
    holds `ignore_index` (padding with -100) are the ignored positions masked out and the
    range taken again. Float targets (class probabilities) and targets whose shape is not the
    class-index shape are left alone: the loss reads no index from them."""

    def on_loss(self, name: str, input, target, kwargs: dict) -> None:
        if not getattr(target, "is_cpu", True):  # a GPU's assert would come too late
            self._check(name, input, target, kwargs)

    def on_loss_error(self, name: str, input, target, kwargs: dict) -> None:
        if getattr(target, "is_cpu", False):
            self._check(name, input, target, kwargs)

    def _check(self, name: str, input, target, kwargs: dict) -> None:
        if name not in _LOSS_FUNCTIONS:
            return
        classes = _class_count(input, target)
        if classes is None or target.is_floating_point() or target.is_complex():
            return
        import torch

        if target.dtype is torch.bool or target.numel() == 0:
            return
        ignore_index = kwargs.get("ignore_index", -100)
        low, high = _range(target)
        if low <= ignore_index <= high:
            # Padding marked with ignore_index: the range of the other labels decides.
            low, high = _range(target.masked_fill(target == ignore_index, 0))
        if 0 <= low and high < classes:
            return
        self.report(
            self.session.where(),
            "runtime",
            loss=name,
            low=low,
            high=high,
            classes=classes,
            ignore_index=ignore_index,
        )


def _range(target) -> tuple[int, int]:
    """(min, max) of the labels: on a GPU with one copy to the host (one synchronisation),
    on the CPU with two cheap reads (no extra kernel to stack them)."""
    import torch

    low, high = torch.aminmax(target)
    if target.device.type == "cpu":
        return low.item(), high.item()
    return tuple(torch.stack((low, high)).tolist())


def _class_count(input, target) -> int | None:
    """C, the class dimension of `input`, when `target` has the class-index shape."""
    import torch

    if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
        return None
    if input.is_meta or target.is_meta or input.dim() == 0:
        return None
    class_dim = 0 if input.dim() == 1 else 1
    expected = input.shape[:class_dim] + input.shape[class_dim + 1 :]
    return input.shape[class_dim] if target.shape == expected else None
