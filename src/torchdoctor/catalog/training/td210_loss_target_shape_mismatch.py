"""TD210 loss-target-shape-mismatch: loss input and target shapes differ (or silently broadcast)."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Clue, Monitor, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD210",
    name="loss-target-shape-mismatch",
    title={
        "en": "Loss input and target have different shapes",
        "zh": "损失函数的输入与 target 形状不一致",
    },
    messages={
        "": {
            "en": "The loss got an input and a target of different shapes, typically `[N, 1]` "
            "predictions against `[N]` targets",
            "zh": "损失函数收到的输入与 target 形状不同，典型情况是 `[N, 1]` 的预测配 `[N]` 的 target",
        },
        "broadcast": {
            "en": "`{loss}` got input {input} and target {target}: they broadcast to {result}, so "
            "every prediction is compared with the targets of other samples and the loss is "
            "wrong, without an error; give both the same shape (`output.squeeze(1)` or "
            "`target.unsqueeze(1)`)",
            "zh": "`{loss}` 收到的输入为 {input}，target 为 {target}：两者广播成 {result}，每个预测都与其他样本的 "
            "target 相比较，损失是错的，却不会报错；请让两者形状一致（`output.squeeze(1)` 或 "
            "`target.unsqueeze(1)`）",
        },
        "refused": {
            "en": "`{loss}` got input {input} and target {target}: the binary cross-entropy losses "
            "require the same shape and raise `ValueError`; give both the same shape "
            "(`output.squeeze(1)` or `target.unsqueeze(1).float()`)",
            "zh": "`{loss}` 收到的输入为 {input}，target 为 {target}：二元交叉熵损失要求两者形状相同，"
            "否则抛出 `ValueError`；请让两者形状一致（`output.squeeze(1)` 或 "
            "`target.unsqueeze(1).float()`）",
        },
    },
    fix_hint={
        "en": "Give both the same shape before the loss: `criterion(output.squeeze(1), target)` "
        "or `criterion(output, target.unsqueeze(1).float())`. Do not rely on "
        "broadcasting: an `[N, 1]` input minus an `[N]` target is an `[N, N]` matrix.",
        "zh": "在调用损失函数之前让两者形状一致：`criterion(output.squeeze(1), target)` 或 "
        "`criterion(output, target.unsqueeze(1).float())`。不要依赖广播：`[N, 1]` 的输入减去 "
        "`[N]` 的 target 会得到 `[N, N]` 的矩阵。",
    },
    docs={
        "en": """
## What it catches
Losses that compare predictions and targets element by element (`BCELoss`,
`BCEWithLogitsLoss`, `MSELoss`, `L1Loss`, `SmoothL1Loss`, ...) called with tensors of different
shapes: the `ValueError: Target size (torch.Size([16])) must be the same as input size
(torch.Size([16, 1]))` of the BCE losses, and the `UserWarning: Using a target size ... that is
different to the input size ...` of the regression losses, which do not stop the run. Also
the shape errors of `cross_entropy` on segmentation or sequence outputs (`Expected target
size ...`, `input and target batch or spatial sizes don't match`).

## Why is this bad?
A model with one output unit returns `[N, 1]`, while labels from a dataset are usually `[N]`.
The BCE losses refuse the pair. The regression losses broadcast it instead: `[N, 1] - [N]` is
an `[N, N]` matrix that compares every prediction with every target, so the loss is the
distance to the batch mean. Training runs, the loss goes down a little and stalls, and the
only sign is a warning printed once at the start. For `cross_entropy` over images or
sequences the class dimension must be dimension 1 (`[N, C, H, W]` against `[N, H, W]`, `[N, C,
T]` against `[N, T]`), and the spatial sizes must match the mask's.

## Symptoms
- `ValueError: Target size (torch.Size([16])) must be the same as input size
  (torch.Size([16, 1]))` (`BCEWithLogitsLoss`)
- `ValueError: Using a target size (torch.Size([16])) that is different to the input size
  (torch.Size([16, 1])) is deprecated. Please ensure they have the same size.` (`BCELoss`; a
  `UserWarning` in old versions)
- `UserWarning: Using a target size (torch.Size([16])) that is different to the input size
  (torch.Size([16, 1])). This will likely lead to incorrect results due to broadcasting.
  Please ensure they have the same size.` (`MSELoss`, `L1Loss`, `SmoothL1Loss`)
- PyTorch 0.4: `RuntimeError: input and target shapes do not match: input [1 x 10], target
  [10] at .../THNN/generic/MSECriterion.c:12`
- `cross_entropy`: `RuntimeError: Expected target size [32, 9490], got [32, 51]`,
  `RuntimeError: input and target batch or spatial sizes don't match: target [4 x 512 x 512],
  input [4 x 21 x 128 x 128]`

## References
- https://pytorch.org/docs/stable/notes/broadcasting.html
""",
        "zh": """
## What it catches
逐元素比较预测与 target 的损失（`BCELoss`、`BCEWithLogitsLoss`、`MSELoss`、`L1Loss`、
`SmoothL1Loss` 等）收到形状不同的张量：BCE 类损失的 `ValueError: Target size
(torch.Size([16])) must be the same as input size (torch.Size([16, 1]))`，以及回归类损失的
`UserWarning: Using a target size ... that is different to the input size ...`，后者不会中断运行。
也包括 `cross_entropy` 在分割或序列输出上的形状错误（`Expected target size ...`、
`input and target batch or spatial sizes don't match`）。

## Why is this bad?
只有一个输出单元的模型返回 `[N, 1]`，而数据集给出的标签通常是 `[N]`。BCE 类损失会拒绝这样的组合；
回归类损失则会广播：`[N, 1] - [N]` 是一个 `[N, N]` 矩阵，把每个预测与每个 target 都比较一遍，
损失于是变成了到 batch 均值的距离。训练照常进行，损失略有下降便停滞不前，唯一的迹象是开始时打印过一次的警告。
对图像或序列上的 `cross_entropy`，类别维必须是第 1 维（`[N, C, H, W]` 对 `[N, H, W]`，
`[N, C, T]` 对 `[N, T]`），空间尺寸也必须与标注掩码一致。

## Symptoms
- `ValueError: Target size (torch.Size([16])) must be the same as input size
  (torch.Size([16, 1]))`（`BCEWithLogitsLoss`）
- `ValueError: Using a target size (torch.Size([16])) that is different to the input size
  (torch.Size([16, 1])) is deprecated. Please ensure they have the same size.`（`BCELoss`；
  旧版本中是 `UserWarning`）
- `UserWarning: Using a target size (torch.Size([16])) that is different to the input size
  (torch.Size([16, 1])). This will likely lead to incorrect results due to broadcasting.
  Please ensure they have the same size.`（`MSELoss`、`L1Loss`、`SmoothL1Loss`）
- PyTorch 0.4：`RuntimeError: input and target shapes do not match: input [1 x 10], target
  [10] at .../THNN/generic/MSECriterion.c:12`
- `cross_entropy`：`RuntimeError: Expected target size [32, 9490], got [32, 51]`、
  `RuntimeError: input and target batch or spatial sizes don't match: target [4 x 512 x 512],
  input [4 x 21 x 128 x 128]`

## References
- https://pytorch.org/docs/stable/notes/broadcasting.html
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(8, 1)
inputs, targets = torch.randn(16, 8), torch.randn(16)
loss = nn.MSELoss()(model(inputs), targets)
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(8, 1)
inputs, targets = torch.randn(16, 8), torch.randn(16)
loss = nn.MSELoss()(model(inputs).squeeze(1), targets)
""",
)

_SIZE = r"torch\.Size\(\[[^\]]*\]\)"
_CAUSE_ELEMENTWISE = {
    "en": "The loss compares input {input} with target {target} element by element, and the "
    "shapes differ: usually an `[N, 1]` model output against `[N]` labels.",
    "zh": "损失函数逐元素比较输入 {input} 与 target {target}，而两者形状不同：通常是 `[N, 1]` 的模型输出"
    "配上了 `[N]` 的标签。",
}

PITFALL.error(
    rf"Target size \((?P<target>{_SIZE})\) must be the same as input size \((?P<input>{_SIZE})\)",
    types=("ValueError",),
    confidence=0.95,
    cause=_CAUSE_ELEMENTWISE,
)
_BROADCAST_CAUSE = {
    "en": "The loss got input {input} and target {target}: with different shapes, "
    "`MSELoss`/`L1Loss` broadcast them, comparing every prediction with every target, "
    "and the loss no longer measures what you meant (`BCELoss` refuses the pair).",
    "zh": "损失函数收到的输入为 {input}，target 为 {target}：形状不同时，`MSELoss`/`L1Loss` "
    "会广播两者，把每个预测与每个 target 都比较一遍，损失就不再是你想要的含义"
    "（`BCELoss` 则直接拒绝）。",
}
_TARGET_SIZE = lazy_compile(
    rf"Using a target size \((?P<target>{_SIZE})\) that is different to the input size "
    rf"\((?P<input>{_SIZE})\)(?P<broadcast>\. This will likely lead to incorrect results due "
    r"to broadcasting)?"
)
_DIMENSIONS = lazy_compile(r"\d+")


# `BCELoss` raises a ValueError (a UserWarning in old versions); `MSELoss`/`L1Loss` warn.
@PITFALL.error_check(types=("ValueError", "UserWarning"), words=("using a target size",))
def target_size_differs(block, report) -> Clue | None:
    found = _TARGET_SIZE.search(block.message)
    if found is None or _all_pairs(found["input"], found["target"]):
        return None
    fields = {"input": found["input"], "target": found["target"]}
    if found["broadcast"] and block.short_type != "ValueError" and _broadcast(*fields.values()):
        return Clue(0.95, _BROADCAST_CAUSE, None, fields)
    return Clue(0.95, _CAUSE_ELEMENTWISE, None, fields)


def _broadcast(first: str, second: str) -> bool:
    """Whether shapes broadcast together; those that do not make the loss raise next, with no
    pairing of predictions and targets to speak of (`[1, 3, 1224, 2040]` and `[1, 3, 1356, 2040]`)."""
    sizes = zip(reversed(_DIMENSIONS.findall(first)), reversed(_DIMENSIONS.findall(second)))
    return all(one == other or "1" in (one, other) for one, other in sizes)


def _all_pairs(prediction: str, target: str) -> bool:
    """Shapes such as [B, 1, N] and [B, N, 1]: each side has a 1 where the other has a size, so
    broadcasting forms every pair of their elements, on purpose (quantile-regression losses,
    pairwise distances); the warning is expected there, not a mistake to explain."""
    first = [int(size) for size in _DIMENSIONS.findall(prediction)]
    second = [int(size) for size in _DIMENSIONS.findall(target)]
    if len(first) != len(second) or len(first) < 3 or first[0] != second[0]:
        return False
    widened = narrowed = False
    for one, other in zip(first, second):
        if one == other:
            continue
        if one != 1 and other != 1:
            return False
        widened, narrowed = widened or one == 1, narrowed or other == 1
    return widened and narrowed


# The warning quoted without its class (an issue body), or its lines wrapped where the paste
# broke them, even inside a size (`torch.Size([1, 3, 1356, 204` / `0]))`): BCELoss's warning of
# PyTorch 0.4-1.x (`is deprecated`) and the regression losses' broadcasting one.
_WRAPPED_TARGET_SIZE = lazy_compile(
    rf"Using a target size \((?P<target>{_SIZE})\)\s+that\s+is\s+different\s+to\s+the\s+input"
    rf"\s+size\s+\((?P<input>{_SIZE})\)(?P<deprecated>\s+is\s+deprecated)?"
)


@PITFALL.error_check(types=(), words=("using a target size",))
def target_size_wrapped(block, report) -> Clue | None:
    found = _WRAPPED_TARGET_SIZE.search(block.message)
    if found is None:
        return None
    # A terminal's wrap adds a line break and takes nothing away.
    target, input_ = (found[name].replace("\n", "") for name in ("target", "input"))
    if _all_pairs(input_, target):
        return None
    broadcast = not found["deprecated"] and _broadcast(input_, target)
    cause = _BROADCAST_CAUSE if broadcast else _CAUSE_ELEMENTWISE
    return Clue(0.9, cause, None, {"input": input_, "target": target})


PITFALL.error(
    r"input and target shapes do not match: input \[(?P<input>[^\]]*)\], "
    r"target \[(?P<target>[^\]]*)\]",
    confidence=0.9,
    cause=_CAUSE_ELEMENTWISE,
)
PITFALL.error(
    r"Expected target size \[(?P<expected>[^\]]*)\], got \[(?P<got>[^\]]*)\]",
    confidence=0.8,
    cause={
        "en": "`cross_entropy` expected a target of shape [{expected}] from the logits' shape "
        "and got [{got}]: with more than two dimensions the classes must be dimension 1 "
        "(`logits.permute(0, 2, 1)` for `[N, T, C]` outputs), or the logits and targets "
        "come from sequences of different lengths.",
        "zh": "`cross_entropy` 根据 logits 的形状期望 target 为 [{expected}]，实际收到 [{got}]："
        "多于两维时类别必须在第 1 维（`[N, T, C]` 的输出要先 `logits.permute(0, 2, 1)`），"
        "或者 logits 与 target 来自长度不同的序列。",
    },
)
PITFALL.error(
    r"input and target batch or spatial sizes don't match: target \[(?P<target>[^\]]*)\], "
    r"input \[(?P<input>[^\]]*)\]",
    confidence=0.85,
    cause={
        "en": "The segmentation loss got logits [{input}] and a mask [{target}] whose batch or "
        "spatial sizes differ: the output was downsampled (upsample it with "
        "`F.interpolate` to the mask's size) or the mask was resized differently.",
        "zh": "分割损失收到的 logits 为 [{input}]，掩码为 [{target}]，两者的 batch 或空间尺寸不同："
        "输出被下采样了（用 `F.interpolate` 上采样到掩码的尺寸），或者掩码的缩放方式不同。",
    },
)

# `nll_loss`/`cross_entropy` with class indices: the target has one dimension more than it
# may (one-hot rows, an `[N, 1]` column of labels, a mask with a channel dimension).
_CAUSE_EXTRA_TARGET_DIM = {
    "en": "`CrossEntropyLoss`/`NLLLoss` takes class indices with one dimension less than the "
    "logits (`[N]` for `[N, C]` logits, `[N, H, W]` for `[N, C, H, W]`), and the target has "
    "one more: an `[N, 1]` column of labels, one-hot rows, or a mask with a channel dimension.",
    "zh": "`CrossEntropyLoss`/`NLLLoss` 接受比 logits 少一维的类别索引（`[N, C]` 的 logits 对应 "
    "`[N]`，`[N, C, H, W]` 对应 `[N, H, W]`），而 target 多了一维：`[N, 1]` 的标签列、one-hot "
    "行，或带通道维的掩码。",
}
_FIX_EXTRA_TARGET_DIM = {
    "en": "Drop the extra dimension: `target.squeeze(1)` for an `[N, 1]` column or a "
    "`[N, 1, H, W]` mask, `target.argmax(dim=1)` for one-hot rows; keep the target `long`.",
    "zh": "去掉多出的一维：`[N, 1]` 的标签列或 `[N, 1, H, W]` 的掩码用 `target.squeeze(1)`，one-hot "
    "行用 `target.argmax(dim=1)`；target 保持为 `long`。",
}
# The first phrasing in every version ("0D or 1D target tensor expected, multi-target not
# supported", "1D target ...", THNN's "multi-target not supported at .../ClassNLLCriterion.c"),
# or its second half alone, as an issue retells it: only NLL's check says it.
PITFALL.error(
    r"multi-target not supported"
    r"|only batches of spatial targets supported \(3D tensors\) but got targets of "
    r"(?:dimension|size)",
    confidence=0.9,
    cause=_CAUSE_EXTRA_TARGET_DIM,
    fix=_FIX_EXTRA_TARGET_DIM,
)


# ---- at run time -------------------------------------------------------------------------------

_REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
_BINARY = ("binary_cross_entropy", "binary_cross_entropy_with_logits")


@PITFALL.monitor
class ShapesBroadcast(Monitor):
    """Element-wise losses fed an input and a target of different shapes. Free: shapes only.

    The regression losses only warn and broadcast: reported when both tensors are expanded
    (`[N, 1]` against `[N]` gives `[N, N]`, every prediction against every target). A target
    that broadcasts up to the input's shape (a scalar, one value per feature) compares each
    prediction with its own target and is left alone, as are shapes that do not broadcast
    (the loss raises). The binary cross-entropy losses raise on any difference: reported
    before they do."""

    def on_loss(self, name: str, input, target, kwargs: dict) -> None:
        import torch

        if name not in _REGRESSION and name not in _BINARY:
            return
        if not (isinstance(input, torch.Tensor) and isinstance(target, torch.Tensor)):
            return
        if input.shape == target.shape:
            return
        shapes = {"loss": name, "input": list(input.shape), "target": list(target.shape)}
        if name in _BINARY:
            self.report(self.session.where(), "refused", **shapes)
            return
        try:
            result = torch.broadcast_shapes(input.shape, target.shape)
        except RuntimeError:
            return  # the loss raises its own error
        if result != input.shape and result != target.shape:
            self.report(self.session.where(), "broadcast", result=list(result), **shapes)
