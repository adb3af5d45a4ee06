"""TD211 nan-loss: the loss (or a gradient) became NaN or infinite during training."""

from __future__ import annotations

import math
import os
import re
from collections import deque

from torchdoctor.catalog.sdk import lazy_compile, Clue, Monitor, Pitfall

PITFALL = Pitfall(
    code="TD211",
    name="nan-loss",
    title={
        "en": "Loss or gradients became NaN/Inf during training",
        "zh": "训练中损失或梯度变成了 NaN/Inf",
    },
    messages={
        "": {
            "en": "A non-finite value (NaN or Inf) appeared in the loss or the gradients, and "
            "everything computed from it is NaN too",
            "zh": "损失或梯度中出现了非有限值（NaN 或 Inf），之后由它算出的一切也都是 NaN",
        },
        "input": {
            "en": "the {what} is non-finite at step {step}, before the optimizer applies it: the "
            "input batch of `{model}` already holds NaN/Inf (`{arg}`): look at the data",
            "zh": "第 {step} 步的{what_zh}是非有限值（在优化器应用它之前）：`{model}` 的输入 batch "
            "本身就含有 NaN/Inf（`{arg}`）：请检查数据",
        },
        "module": {
            "en": "the {what} is non-finite at step {step}, before the optimizer applies it: the "
            "first module whose output is NaN/Inf is `{layer}` ({type}), with finite inputs "
            "and parameters",
            "zh": "第 {step} 步的{what_zh}是非有限值（在优化器应用它之前）：第一个输出 NaN/Inf 的模块是 "
            "`{layer}`（{type}），它的输入和参数都是有限值",
        },
        "backward": {
            "en": "the gradients are non-finite at step {step} (e.g. `{param}`) while the loss is "
            "finite: the backward of `{op}` made the first NaN/Inf{where}",
            "zh": "第 {step} 步的梯度是非有限值（例如 `{param}`），而损失是有限的：`{op}` 的反向传播"
            "最先产生了 NaN/Inf{where}",
        },
        "loss-function": {
            "en": "the loss is non-finite at step {step}, before the optimizer applies it, while "
            "the outputs of `{model}` are finite: the loss computation makes it (log of 0, "
            "division by 0, an invalid target?)",
            "zh": "第 {step} 步的损失是非有限值（在优化器应用它之前），而 `{model}` 的输出是有限的："
            "问题出在损失的计算中（对 0 取 log、除以 0、无效的标签？）",
        },
        "exploding": {
            "en": "the {what} is non-finite at step {step}, after the gradients exploded: their "
            "norm grew {factor:.3g} times, from {first:.3g} at step {first_step} to "
            "{peak:.3g} at step {peak_step}: the updates run away (learning rate too high, no "
            "clipping), not a log of 0 or a division by 0; lower the learning rate, clip "
            "gradients with `torch.nn.utils.clip_grad_norm_`, or warm the learning rate up",
            "zh": "第 {step} 步的{what_zh}是非有限值，此前梯度已经爆炸：梯度的范数增长了 {factor:.3g} 倍，"
            "从第 {first_step} 步的 {first:.3g} 涨到第 {peak_step} 步的 {peak:.3g}：更新失控了（学习率过高、"
            "没有裁剪），而不是对 0 取 log 或除以 0；请降低学习率，用 `torch.nn.utils.clip_grad_norm_` "
            "裁剪梯度，或对学习率做 warmup",
        },
        "parameters": {
            "en": "the {what} is non-finite at step {step}: the parameters are already non-finite "
            "(e.g. `{param}`)",
            "zh": "第 {step} 步的{what_zh}是非有限值：参数已经是非有限值（例如 `{param}`）",
        },
        "runtime": {
            "en": "the {what} is non-finite at step {step}, before the optimizer applies it "
            "(the doctor could not tell where it was born)",
            "zh": "第 {step} 步的{what_zh}是非有限值（在优化器应用它之前；无法确定它产生的位置）",
        },
    },
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
- under `torchdoctor run`: the first non-finite loss or gradient, with its cause: NaN in the
  input batch, the first module whose output is non-finite, the loss computation (log of 0,
  division by 0), the backward op, or exploding gradients, when the norm of the gradients grew
  100 times or more over the steps before (`after the gradients exploded: their norm grew
  5.51e+09 times, from 0.433 at step 1 to 2.38e+09 at step 5`).

## Known problems
The growth is read from two small gradients at both ends of the network (a bias or a norm
weight), each step (one reduction each) and from the first step on: growth that shows only in
the other parameters is not seen, and a run whose gradients legitimately grow a hundredfold
before a `log(0)` is told its gradients exploded. The growth is measured on the gradients the
optimizer step receives, after `clip_grad_norm_`.

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
- 在 `torchdoctor run` 下：第一个非有限的损失或梯度，连同它的原因：输入 batch 里的 NaN、第一个输出非有限值的模块、
  损失的计算（对 0 取 log、除以 0）、反向传播中的运算，或梯度爆炸，即此前几步中梯度的范数增长了 100 倍以上
  （`after the gradients exploded: their norm grew 5.51e+09 times, from 0.433 at step 1
  to 2.38e+09 at step 5`）。

## Known problems
梯度的增长从网络两端的两个小梯度（偏置或归一化层的权重）上读取，每一步各做一次归约，从第一步开始记录：
只在其他参数上出现的增长看不到；梯度合理地增长一百倍之后才遇到 `log(0)` 的训练会被说成梯度爆炸。
增长按优化器 step 收到的梯度计算，也就是 `clip_grad_norm_` 之后的梯度。

## References
- https://pytorch.org/docs/stable/autograd.html#anomaly-detection
- https://pytorch.org/docs/stable/amp.html#gradient-scaling
""",
    },
    example="""
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
probs = torch.softmax(logits, dim=1)
loss = -torch.log(probs[:, 0]).mean()
loss.backward()
""",
    use_instead="""
import torch

logits = torch.tensor([[0.0, 200.0], [300.0, 0.0]], requires_grad=True)
log_probs = torch.log_softmax(logits, dim=1)
loss = -log_probs[:, 0].mean()
loss.backward()
""",
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
    },
)
# torchvision's reference training scripts print this, then exit(1).
PITFALL.error(
    r"Loss is (?:nan|inf|-inf), stopping training",
    types=(),
    confidence=0.9,
    cause=_CAUSE_USER_CHECK,
)
PITFALL.error(
    r"to satisfy the constraint \w+\(.*?\), but found invalid values:\s*tensor\(\[*\s*-?nan",
    types=("ValueError",),
    confidence=0.7,
    cause=_CAUSE_DOWNSTREAM,
)
PITFALL.error(
    r"probability tensor contains either `?inf`?, `?nan`? or element < 0",
    confidence=0.6,
    cause=_CAUSE_DOWNSTREAM,
)
PITFALL.error(r"Input contains NaN", types=("ValueError",), confidence=0.6, cause=_CAUSE_DOWNSTREAM)
_CAUSE_DIVERGED = {
    "en": "The loss or the gradients turned NaN/Inf: training diverged. Usual origins: a "
    "learning rate too high for the batch size, `log` of 0 or division by 0, bad samples in "
    "the data, or fp16 overflow.",
    "zh": "损失或梯度变成了 NaN/Inf：训练发散了。常见来源：相对批大小而言学习率过高、对 0 取 `log` "
    "或除以 0、数据中的坏样本，或 fp16 溢出。",
}
# A training log whose printed loss turned NaN: `iteration : 7, losses : nan`, `loss=nan`, a
# loss term named either way round (`box_loss: nan`, detectron2's `'loss_cls': tensor(nan`,
# but not a loss scale's `loss_scale: inf`), and as Chinese logs and posts write it, `loss为nan`,
# `loss 变成了 nan` (`\b` is no boundary between `loss` and a Chinese character: both are word
# characters).
PITFALL.error(
    r"(?i)\b(?:\w+_)?loss(?:es)?(?:_(?!scal)\w+)?\b['\"]?\s*[:=]\s*(?:tensor\()?-?(?:nan|inf)\b"
    r"|(?<![a-z])loss\s*(?:为|是|变成|变为|变|出现|成)了?\s*-?(?:nan|inf)(?![a-z])",
    types=(),
    confidence=0.75,
    cause=_CAUSE_DIVERGED,
)

# A training log whose loss has not turned NaN yet but is on its way: a loss of 1e8 or more
# printed with a gradient norm as large (mmcv's `loss: 2461733416.8998, grad_norm:
# 1170372919273.4768`), or a loss that grows ten-thousandfold to a million or more from a value
# printed before it (`Loss: 20.08` ... `Loss: 29821698048.0`). A large loss alone is no sign:
# a sum over every pixel of a batch starts that large and falls.
_LOG_VALUE = lazy_compile(
    r"(?<![\w.])(?P<key>\w{0,30}?(?:loss|Loss|LOSS)\w{0,30}|grad_norm)['\"]?\s*[:=]\s*"
    r"(?P<value>\d{1,30}(?:\.\d{1,30})?(?:[eE]\+?\d{1,3})?)(?![\w.])"
)
# fp16's `loss_scale` doubles up to 2**24 by design; weights and coefficients are settings.
_NOT_A_LOSS = lazy_compile(r"(?i)scal|weight|coef")
_HUGE = 1e8
_EXPLODED = 1e6
_GROWTH = 1e4
_CAUSE_EXPLODING = {
    "en": "The loss grows to {loss} in the log: training is diverging, and NaN/Inf follow. "
    "Usual origins: a learning rate too high for the batch size (a config's rate made for "
    "more GPUs run on fewer), `log` of 0 or division by 0, bad samples in the data, or fp16 "
    "overflow.",
    "zh": "日志中的损失增长到了 {loss}：训练正在发散，随后就会出现 NaN/Inf。常见来源：相对批大小而言"
    "学习率过高（为更多 GPU 设定的学习率在更少的 GPU 上运行）、对 0 取 `log` 或除以 0、"
    "数据中的坏样本，或 fp16 溢出。",
}


@PITFALL.error_check(types=(), words=("loss",))
def loss_explodes(block, report):
    """Only for a log without an exception: with one, the crash is what to explain."""
    if report.exceptions:
        return None
    return report.once(_exploding_loss)


def _exploding_loss(report) -> Clue | None:
    lowest: dict[str, float] = {}
    for line in (report.text or "").splitlines():
        losses, norm = [], 0.0
        for found in _LOG_VALUE.finditer(line):
            key, value = found["key"], float(found["value"])
            if key == "grad_norm":
                norm = max(norm, value)
                continue
            if _NOT_A_LOSS.search(key):
                continue
            losses.append(value)
            if value >= _EXPLODED and value >= _GROWTH * lowest.get(key, math.inf):
                return Clue(0.7, _CAUSE_EXPLODING, fields={"loss": found["value"]})
            lowest[key] = min(value, lowest.get(key, math.inf))
        if losses and max(losses) >= _HUGE and norm >= _HUGE:
            return Clue(0.7, _CAUSE_EXPLODING, fields={"loss": _shown(max(losses))})
    return None


def _shown(value: float) -> str:
    return f"{value:.3g}"


# A message of the user's own check ("loss is nan", "NaN loss detected"), or a title or chat
# line telling of one ("Loss becomes NaN after a few epochs", "gradients become NaN", "loss为
# nan"): the words stand apart from other letters, but a Chinese character may touch them.
_LOSS_NAN = lazy_compile(
    r"(?i)(?<![a-z])(?:loss(?:es)?|grad(?:ient)?s?|损失|梯度)(?![a-z])[^\n]{0,60}"
    r"(?<![a-z])(?:nan|inf)(?![a-z])"
    r"|(?<![a-z])(?:nan|inf)(?![a-z])[^\n]{0,60}(?<![a-z])(?:loss(?:es)?|grad(?:ient)?s?)(?![a-z])"
)
_CHECK_SOURCE = lazy_compile(r"isnan|isinf|isfinite|math\.isnan|\bnan\b", re.I)


@PITFALL.error_check(
    types=("AssertionError", "ValueError", "RuntimeError", "FloatingPointError", "Exception"),
    words=("nan", "nf", "assertionerror"),
)
def check_user_nan_check(block, report):
    """The user's own NaN check: its message, or for a bare assert, the failing line."""
    if _LOSS_NAN.search(block.message[:300]):
        # A message without its exception (a title, a chat line) tells of the NaN, not of a
        # check that stopped the run.
        return Clue(0.85, _CAUSE_USER_CHECK if block.type else _CAUSE_DIVERGED)
    if block.short_type != "AssertionError" or not block.frames:
        return None
    source = block.frames[-1].source or ""
    if _CHECK_SOURCE.search(source):
        return Clue(0.85 if "loss" in source.lower() else 0.7, _CAUSE_USER_CHECK)
    return None


# An issue's title telling of a NaN loss ("NAN training loss after couple of steps"), above a
# training log that shows no exception: the log is the run, the title says how it ended. A
# title is the first line, and short; a long first line is a log's or a sentence's.
_TITLE = 120


@PITFALL.error_check(types=(), words=("nan", "nf"))
def title_tells_nan(block, report):
    if report.exceptions:
        return None  # the crash is what to explain
    return report.once(_nan_in_title)


def _nan_in_title(report) -> Clue | None:
    title = next((line.strip() for line in (report.text or "").split("\n", 20) if line.strip()), "")
    if len(title) > _TITLE or not _LOSS_NAN.search(title):
        return None
    return Clue(0.7, _CAUSE_DIVERGED)


# ---- at run time -------------------------------------------------------------------------------

_WHAT_ZH = {"loss": "损失", "gradients": "梯度"}
# Parameters this small are checked every step; the others only on steps whose gradient norms
# are computed anyway. A NaN made in backward flows into every earlier layer's output
# gradient, hence into the small bias/norm gradients of those layers.
_SENTINEL_NUMEL = 4096
# Parameters are listed in forward order, so the first small one gets the gradient that
# flowed back through the whole net (a NaN made anywhere in backward reaches it); the last one
# catches what the head makes. Sampled steps check every gradient.


@PITFALL.monitor
class NonFiniteValues(Monitor):
    """The first non-finite loss or gradient, caught in the optimizer step pre-hook (before the
    step applies it; never on steps a GradScaler skips), then localised: the input batch, the
    first module whose output is non-finite, or the backward op (replayed under anomaly mode).

    Always on: the loss value (read once per backward anyway) and the norm of two small
    gradients, at both ends of the net; every gradient on the steps whose norms are sampled.
    Replays run only once something is non-finite, with the RNG state and the
    model's buffers restored, so the run goes on computing what it would have."""

    # Gradients this many times larger than at the first step, in the steps before the first
    # non-finite value: the cause named is exploding gradients.
    GROWTH = 100.0
    WINDOW = 20

    def setup(self) -> None:
        self._loss_bad = False
        self._done = False
        self._small: dict[int, tuple] = {}  # id(optimizer) -> (its groups' shape, params)
        # The largest gradient norm of the sentinels: at the first step, and the recent steps.
        self._first: tuple[int, float] | None = None
        self._recent: deque[tuple[int, float]] = deque(maxlen=self.WINDOW)

    def on_backward(self, tensor) -> None:
        loss = self.session.last_loss
        bad = loss is not None and not math.isfinite(loss)
        if self.session.scaler is not None:
            # A step the scaler skipped never reaches after_step: each backward starts afresh.
            self._loss_bad = bad
        else:
            self._loss_bad = self._loss_bad or bad

    def after_step(self, optimizer) -> None:
        self._loss_bad = False

    def on_step(self, optimizer) -> None:
        if self._done:
            return
        bad_param = None if self._loss_bad else self._non_finite_grad(optimizer)
        if not self._loss_bad and bad_param is None:
            return
        self._done = True
        what = "loss" if self._loss_bad else "gradients"
        variant, fields, module = self._localise(what, bad_param)
        self.report("first", variant, module=module, what=what, what_zh=_WHAT_ZH[what], **fields)

    def _non_finite_grad(self, optimizer):
        session = self.session
        params = [p for p in self._sentinels(optimizer) if p.grad is not None]
        sampled = session.metrics is not None and session.metrics.wants_grad_norms(session.step)
        if sampled or not params:
            if params and optimizer is session.optimizers[0]:
                self._sentinel_norms(params)
            checked = session.grad_norms(optimizer)
            return next((p for p, norm in checked if not math.isfinite(norm)), None)
        # The norm of each sentinel (one fused reduction each): non-finite values propagate
        # into it, and it measures the growth of the gradients. Between the heavy kernels of a
        # step two plain reductions cost less than one foreach norm (measured).
        values = self._sentinel_norms(params) if optimizer is session.optimizers[0] else None
        for param, value in zip(params, values or self._sentinel_norms(params, record=False)):
            if not math.isfinite(value) and not _all_finite(param.grad):
                return param
        return None

    def _sentinel_norms(self, params: list, record: bool = True) -> list[float]:
        """The norm of each sentinel's gradient; the largest finite one is remembered for this
        step. (A norm can overflow where every value is finite: the caller checks again.)"""
        import torch

        values = [torch.linalg.vector_norm(p.grad).item() for p in params]
        finite = [v for v in values if math.isfinite(v)]
        if record and finite and len(finite) == len(values):
            largest = max(finite)
            if self._first is None:
                if largest > 0:
                    self._first = (self.session.step, largest)
            else:
                self._recent.append((self.session.step, largest))
        return values

    def _exploded(self) -> dict | None:
        """The growth of the gradients before now, when it is by orders of magnitude."""
        if self._first is None or not self._recent:
            return None
        first_step, first = self._first
        peak_step, peak = max(self._recent, key=lambda entry: entry[1])
        if peak < self.GROWTH * first:
            return None
        return {
            "factor": peak / first,
            "first": first,
            "first_step": first_step,
            "peak": peak,
            "peak_step": peak_step,
        }

    def _sentinels(self, optimizer) -> list:
        """The optimizer's small parameters, listed again only when its groups change."""
        groups = optimizer.param_groups
        shape = tuple((id(g["params"]), len(g["params"])) for g in groups)
        cached = self._small.get(id(optimizer))
        if cached is None or cached[0] != shape:
            small = [p for g in groups for p in g["params"] if p.numel() <= _SENTINEL_NUMEL]
            if len(small) > 2:  # its two ends suffice
                small = [small[0], small[-1]]
            cached = self._small[id(optimizer)] = (shape, small)
        return cached[1]

    def _localise(self, what: str, bad_param) -> tuple[str, dict, str | None]:
        import torch

        session = self.session
        step = {"step": session.step}
        if bad_param is not None:
            step["param"] = session.param_name(bad_param) or "?"
        if session.last_forward is None:
            return "runtime", step, None
        model, args, kwargs = session.last_forward
        name = type(model).__name__
        for arg, value in _tensors(args, kwargs):
            if value.is_floating_point() and not torch.isfinite(value).all():
                return "input", {**step, "model": name, "arg": arg}, None
        growth = self._exploded()
        if growth is not None:
            return "exploding", {**step, **growth}, None
        for pname, param in model.named_parameters():
            if not torch.isfinite(param).all():
                return "parameters", {**step, "param": pname}, pname
        eager = getattr(model, "_orig_mod", model)
        with _replaying(eager, session):
            culprit = _first_non_finite_module(eager, args, kwargs)
            if culprit is not None:
                qualified, module = culprit
                return (
                    "module",
                    {**step, "layer": qualified or name, "type": type(module).__name__},
                    qualified,
                )
            if what == "loss":
                return "loss-function", {**step, "model": name}, None
            op, where = _backward_culprit(eager, args, kwargs)
        if op is None:
            return "runtime", step, None
        return "backward", {**step, "op": op, "where": f" ({where})" if where else ""}, None


def _all_finite(tensor) -> bool:
    import torch

    return bool(torch.isfinite(tensor).all())


def _tensors(args: tuple, kwargs: dict):
    import torch

    for index, value in enumerate(args):
        if isinstance(value, torch.Tensor):
            yield f"args[{index}]", value
    for key, value in kwargs.items():
        if isinstance(value, torch.Tensor):
            yield key, value


class _replaying:
    """Run the model again without a trace: RNG state and buffers are restored afterwards."""

    def __init__(self, model, session) -> None:
        self.model = model
        self.session = session

    def __enter__(self):
        import torch

        self.session.replaying = True
        self._rng = torch.random.fork_rng(devices=[])
        self._rng.__enter__()
        self._buffers = [(b, b.detach().clone()) for b in self.model.buffers()]
        return self

    def __exit__(self, *exc) -> None:
        import torch

        with torch.no_grad():
            for buffer, saved in self._buffers:
                buffer.copy_(saved)
        self._rng.__exit__(None, None, None)
        self.session.replaying = False


def _first_non_finite_module(model, args, kwargs):
    """(qualified name, module) of the first module whose forward output is non-finite."""
    import torch

    names = {m: n for n, m in model.named_modules()}
    found = []

    def check(module, inputs, output) -> None:
        if found:
            return
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        for value in outputs:
            if (
                isinstance(value, torch.Tensor)
                and value.is_floating_point()
                and not torch.isfinite(value).all()
            ):
                found.append((names.get(module, ""), module))
                return

    handles = [m.register_forward_hook(check) for m in model.modules()]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except Exception:  # a replay that cannot run tells nothing
        return None
    finally:
        for handle in handles:
            handle.remove()
    return found[0] if found else None


def _backward_culprit(model, args, kwargs) -> tuple[str | None, str]:
    """The backward op that first returns NaN, from a replay under anomaly mode, and the user's
    line that made its forward."""
    import warnings

    import torch

    from torchdoctor.catalog.sdk import is_user_path

    params = [p for p in model.parameters() if p.requires_grad]
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            torch.autograd.detect_anomaly(check_nan=True),
        ):
            warnings.simplefilter("always")
            output = model(*args, **kwargs)
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            total = sum(
                o.float().sum() for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad
            )
            torch.autograd.grad(total, params, allow_unused=True)
    except RuntimeError as error:
        match = re.search(r"Function '(\w+)' returned nan", str(error))
        if match is None:
            return None, ""
        where = ""
        for warning in caught:
            lines = re.findall(r'File "([^"]+)", line (\d+)', str(warning.message))
            users = [(path, line) for path, line in lines if is_user_path(path)]
            if users:
                where = f"{os.path.relpath(users[-1][0])}:{users[-1][1]}"
        return match.group(1), where
    except Exception:
        return None, ""
    return None, ""
