"""TD211 nan-loss: the loss (or a gradient) became NaN or infinite during training."""
from __future__ import annotations

import re

from torchdoctor.catalog._model import Clue, Pitfall

PITFALL = Pitfall(
    code="TD211",
    name="nan-loss",
    title={"en": "Loss or gradients became NaN/Inf during training",
           "zh": "训练中损失或梯度变成了 NaN/Inf"},
    messages={"": {
        "en": "A non-finite value (NaN or Inf) appeared in the loss or the gradients, and "
              "everything computed from it is NaN too",
        "zh": "损失或梯度中出现了非有限值（NaN 或 Inf），之后由它算出的一切也都是 NaN",
    }},
    fix_hint={
        "en": "Find the first non-finite value: run with `torchdoctor run script.py` or under "
              "`torch.autograd.set_detect_anomaly(True)`, which names the operation. Then guard "
              "it: `torch.log(x.clamp_min(1e-8))`, `x / (y + 1e-8)`, `F.log_softmax`/"
              "`BCEWithLogitsLoss` instead of `log(softmax)`/`BCELoss(sigmoid)`; lower the "
              "learning rate, clip gradients with `torch.nn.utils.clip_grad_norm_`, and under "
              "fp16 use `torch.autocast` with a `GradScaler` or bf16.",
        "zh": "先找到第一个非有限值：用 `torchdoctor run script.py` 运行，或在 "
              "`torch.autograd.set_detect_anomaly(True)` 下运行，它会指出出问题的运算。然后加以防护："
              "`torch.log(x.clamp_min(1e-8))`、`x / (y + 1e-8)`，用 `F.log_softmax`/"
              "`BCEWithLogitsLoss` 代替 `log(softmax)`/`BCELoss(sigmoid)`；降低学习率，用 "
              "`torch.nn.utils.clip_grad_norm_` 裁剪梯度；fp16 训练请配合 `torch.autocast` 和 "
              "`GradScaler`，或改用 bf16。",
    },
    docs={
        "en": """
## What it catches
The ways a NaN or infinite loss shows up in an error output: anomaly mode's `Function
'LogBackward0' returned nan values in its 0th output.`, a training script's own check
(`AssertionError: loss is nan`, `Loss is nan, stopping training`, Lightning's `The loss
returned in training_step is nan`), and the errors NaN causes further on (a distribution whose
parameters are NaN, `probability tensor contains either inf, nan or element < 0`, a metric
library's `Input contains NaN`).

## Why is this bad?
One non-finite value spreads: a NaN in the loss makes every gradient NaN, the optimizer writes
NaN into every weight, and the model is ruined from that step on. The error usually appears
far from its origin. The first non-finite value typically comes from:

- `log` of zero or of a negative number (`torch.log(softmax(x))`, `log(sigmoid(x))`, a
  probability that underflowed), `sqrt` of zero in the backward pass, division by zero
  (normalising by a norm or a count that can be 0);
- a learning rate too high, or no gradient clipping, so that the weights explode;
- fp16 overflow (values above 65504) without loss scaling;
- NaN or Inf already in the data.

`torch.autograd.set_detect_anomaly(True)` makes the backward pass stop at the first operation
that produces NaN and prints where it was called in the forward pass; `torchdoctor run` checks
losses, gradients and outputs step by step and reports the first non-finite one.

## Example
```python
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
probs = torch.softmax(logits, dim=1)
loss = -torch.log(probs[:, 0]).mean()
loss.backward()
```

## Use instead:
```python
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
log_probs = torch.log_softmax(logits, dim=1)
loss = -log_probs[:, 0].mean()
loss.backward()
```

## Symptoms
- anomaly mode: `RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.`
  (`'LogBackward'` in older versions), after `UserWarning: Error detected in LogBackward0.
  Traceback of forward call that caused the error: ...`
- your own checks: `AssertionError: loss is nan`, `ValueError: Loss is NaN`,
  torchvision's reference scripts' `Loss is nan, stopping training`, Lightning's
  `ValueError: The loss returned in training_step is nan.`
- later: `ValueError: Expected parameter loc (Tensor of shape (64, 2)) of distribution Normal(...)
  to satisfy the constraint Real(), but found invalid values: tensor([[nan, nan], ...`,
  `RuntimeError: probability tensor contains either inf, nan or element < 0`, scikit-learn's
  `ValueError: Input contains NaN, infinity or a value too large for dtype('float32').`

## References
- https://pytorch.org/docs/stable/autograd.html#anomaly-detection
- https://pytorch.org/docs/stable/amp.html#gradient-scaling
""",
        "zh": """
## What it catches
NaN 或无穷大的损失在错误输出中的各种表现：异常检测模式下的 `Function 'LogBackward0' returned nan
values in its 0th output.`，训练脚本自己的检查（`AssertionError: loss is nan`、
`Loss is nan, stopping training`、Lightning 的 `The loss returned in training_step is nan`），
以及 NaN 在后续引发的错误（参数为 NaN 的概率分布、`probability tensor contains either inf, nan
or element < 0`、指标库的 `Input contains NaN`）。

## Why is this bad?
一个非有限值会扩散：损失中的 NaN 让所有梯度都变成 NaN，优化器再把 NaN 写进每个权重，模型从这一步起就彻底坏了。
报错通常出现在离源头很远的地方。第一个非有限值一般来自：

- 对零或负数取 `log`（`torch.log(softmax(x))`、`log(sigmoid(x))`、下溢为 0 的概率），反向传播中对零求
  `sqrt`，除以零（用可能为 0 的范数或计数做归一化）；
- 学习率过高，或者没有梯度裁剪，权重爆炸；
- fp16 溢出（数值超过 65504）而没有做损失缩放；
- 数据里本来就有 NaN 或 Inf。

`torch.autograd.set_detect_anomaly(True)` 会让反向传播停在第一个产生 NaN 的运算处，并打印它在前向计算中的调用位置；
`torchdoctor run` 会逐步检查损失、梯度和输出，报告第一个非有限值。

## Example
```python
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
probs = torch.softmax(logits, dim=1)
loss = -torch.log(probs[:, 0]).mean()
loss.backward()
```

## Use instead:
```python
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
log_probs = torch.log_softmax(logits, dim=1)
loss = -log_probs[:, 0].mean()
loss.backward()
```

## Symptoms
- 异常检测模式：`RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.`
  （旧版本中为 `'LogBackward'`），之前有 `UserWarning: Error detected in LogBackward0.
  Traceback of forward call that caused the error: ...`
- 你自己的检查：`AssertionError: loss is nan`、`ValueError: Loss is NaN`、torchvision 参考脚本的
  `Loss is nan, stopping training`、Lightning 的
  `ValueError: The loss returned in training_step is nan.`
- 之后的报错：`ValueError: Expected parameter loc (Tensor of shape (64, 2)) of distribution
  Normal(...) to satisfy the constraint Real(), but found invalid values: tensor([[nan, nan], ...`、
  `RuntimeError: probability tensor contains either inf, nan or element < 0`、scikit-learn 的
  `ValueError: Input contains NaN, infinity or a value too large for dtype('float32').`

## References
- https://pytorch.org/docs/stable/autograd.html#anomaly-detection
- https://pytorch.org/docs/stable/amp.html#gradient-scaling
""",
    },
)

_CAUSE_USER_CHECK = {
    "en": "The loss became NaN or infinite and your own check stopped the run. Usual origins: "
          "`log` of 0, division by 0, a learning rate too high (exploding weights), or fp16 "
          "overflow.",
    "zh": "损失变成了 NaN 或无穷大，被你自己的检查中止了运行。常见来源：对 0 取 `log`、除以 0、"
          "学习率过高（权重爆炸），或 fp16 溢出。",
}
_CAUSE_DOWNSTREAM = {
    "en": "NaN or Inf values reached this operation: they came from an earlier step of the "
          "model or of training (`log` of 0, division by 0, exploding weights, fp16 overflow).",
    "zh": "NaN 或 Inf 传到了这个运算：它们来自模型或训练中更早的一步（对 0 取 `log`、除以 0、"
          "权重爆炸、fp16 溢出）。",
}

PITFALL.error(
    r"Function '(?P<op>\w+)' returned nan values in its (?P<index>\d+)(?:st|nd|rd|th) output",
    confidence=0.95,
    cause={
        "en": "Anomaly detection caught `{op}` producing NaN in the backward pass: the forward "
              "traceback printed above it shows the line. Typical: `log`/`sqrt`/division "
              "at 0, or inputs that are already huge or NaN.",
        "zh": "异常检测发现 `{op}` 在反向传播中产生了 NaN：它上方打印的前向调用栈指出了对应的代码行。"
              "典型原因：在 0 处做 `log`/`sqrt`/除法，或者输入本身已经极大或是 NaN。",
    })
# torchvision's reference training scripts print this, then exit(1).
PITFALL.error(r"Loss is (?:nan|inf|-inf), stopping training", types=(), confidence=0.9,
              cause=_CAUSE_USER_CHECK)
PITFALL.error(
    r"to satisfy the constraint \w+\(.*?\), but found invalid values:\s*tensor\(\[*\s*-?nan",
    types=("ValueError",), confidence=0.7, cause=_CAUSE_DOWNSTREAM)
PITFALL.error(r"probability tensor contains either `?inf`?, `?nan`? or element < 0",
              confidence=0.6, cause=_CAUSE_DOWNSTREAM)
PITFALL.error(r"Input contains NaN", types=("ValueError",), confidence=0.6,
              cause=_CAUSE_DOWNSTREAM)

# A message of the user's own check: "loss is nan", "NaN loss detected", "Loss is NaN".
_LOSS_NAN = re.compile(r"(?i)\bloss\b[^\n]{0,60}\b(?:nan|inf)\b"
                       r"|\b(?:nan|inf)\b[^\n]{0,60}\bloss\b")
_CHECK_SOURCE = re.compile(r"isnan|isinf|isfinite|math\.isnan|\bnan\b", re.I)


@PITFALL.error_check(types=("AssertionError", "ValueError", "RuntimeError",
                            "FloatingPointError", "Exception"))
def check_user_nan_check(block, report):
    """The user's own NaN check: its message, or for a bare assert, the failing line."""
    if _LOSS_NAN.search(block.message[:300]):
        return Clue(0.85, _CAUSE_USER_CHECK)
    if block.short_type != "AssertionError" or not block.frames:
        return None
    source = block.frames[-1].source or ""
    if _CHECK_SOURCE.search(source):
        return Clue(0.85 if "loss" in source.lower() else 0.7, _CAUSE_USER_CHECK)
    return None
# A training log whose printed loss turned NaN: `iteration : 7, losses : nan`, `loss=nan`.
PITFALL.error(r"(?i)\b(?:\w+_)?loss(?:es)?\b['\"]?\s*[:=]\s*(?:tensor\()?-?(?:nan|inf)\b",
              types=(), confidence=0.75, cause={
                  "en": "The loss printed in the log turned NaN/Inf: training diverged. Usual "
                        "origins: a learning rate too high for the batch size, `log` of 0 or "
                        "division by 0, bad samples in the data, or fp16 overflow.",
                  "zh": "日志中打印的损失变成了 NaN/Inf：训练发散了。常见来源：相对批大小而言学习率过高、"
                        "对 0 取 `log` 或除以 0、数据中的坏样本，或 fp16 溢出。"})
