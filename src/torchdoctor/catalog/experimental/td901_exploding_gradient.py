"""TD901 exploding-gradient: the gradient norm grows by orders of magnitude during training."""

from __future__ import annotations

import math

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD901",
    name="exploding-gradient",
    title={
        "en": "Gradients explode: their norm grows by orders of magnitude",
        "zh": "梯度爆炸：梯度范数增长了几个数量级",
    },
    messages={
        "": {
            "en": "the total gradient norm reached {norm:.3g} at step {step}, {factor:.0f} times "
            "its norm at the first step ({start:.3g}): training is diverging; lower the "
            "learning rate or clip gradients with `torch.nn.utils.clip_grad_norm_`",
            "zh": "第 {step} 步的梯度总范数达到 {norm:.3g}，是第一步（{start:.3g}）的 {factor:.0f} 倍："
            "训练正在发散；请降低学习率，或用 `torch.nn.utils.clip_grad_norm_` 裁剪梯度",
        }
    },
    default=False,
    docs={
        "en": """
## What it catches
A run whose total gradient norm (all parameters of the first optimizer) climbs to more than
100 times its value at the first step (before any update, so before the learning rate could
matter) and stays there for 3 consecutive steps, or turns non-finite after growing 10 times.
Opt-in (`--select TD901`): a statistical symptom, measured on seeded runs (see docs/watch.md,
"Statistical symptoms").

## Why is this bad?
When each update makes the next gradient larger, the weights run away: the loss jumps up, then
becomes `inf` or `nan`, and the run is lost. The usual causes are a learning rate too high for
the model and batch size, no gradient clipping in a recurrent or very deep network, a loss
that is summed instead of averaged over a large batch, or a missing normalisation layer.

## Known problems
The norms are read in the optimizer step pre-hook, after `clip_grad_norm_` has run: a run that
clips is judged on its clipped gradients and is rarely reported (clipping is the remedy). A
run whose gradients legitimately grow a hundredfold (a loss that starts near zero) is
reported; that is why the check is opt-in. A classifier trained with cross-entropy at a
learning rate far too high rarely has exploding gradients (the gradient of cross-entropy with
respect to the logits is bounded): its ReLUs die and its loss stalls instead, which
`dead-relu` and `loss-plateau` report.
""",
        "zh": """
## What it catches
梯度总范数（第一个优化器的全部参数）升到第一步时（任何更新之前，学习率还不可能起作用）的 100 倍以上，
并连续 3 步保持在那里；或者先增长 10 倍后变成非有限值。需要显式启用（`--select TD901`）：这是一个统计症状，
在带种子的运行上做过测量（见 docs/watch.md 的 “Statistical symptoms” 一节）。

## Why is this bad?
如果每次更新都让下一次的梯度更大，权重就会失控：损失突然上升，然后变成 `inf` 或 `nan`，
这次训练就废了。常见原因：相对模型和 batch 大小而言学习率过高，循环网络或很深的网络没有做梯度裁剪，
大 batch 上的损失是求和而不是求平均，或者缺少归一化层。

## Known problems
范数在优化器 step 的 pre-hook 中读取，此时 `clip_grad_norm_` 已经裁剪过梯度：做了裁剪的训练按裁剪后的梯度判断，
很少会被报告。梯度合理地增长一百倍的训练（例如损失从接近 0 开始）也会被报告；所以这个检查需要显式启用。
用交叉熵训练、学习率远远过高的分类器很少出现梯度爆炸（交叉熵对 logits 的梯度是有界的）：
它的 ReLU 会死亡、损失会停滞，由 `dead-relu` 和 `loss-plateau` 报告。
""",
    },
    example="""
import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
for step in range(100):
    x = torch.randn(32, 16)
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
    use_instead="""
import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(100):
    x = torch.randn(32, 16)
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
""",
)


@PITFALL.monitor
class GradientNormRunsAway(Monitor):
    """The total gradient norm far above its first step's for several steps (or non-finite
    after growing). Reads the per-parameter norms the session computes once per step."""

    default = False
    FACTOR = 100.0
    PERSIST = 3
    NONFINITE_FACTOR = 10.0

    def setup(self) -> None:
        self._start: float | None = None
        self._peak = 0.0
        self._above = 0

    def on_step(self, optimizer) -> None:
        if optimizer is not self.session.optimizers[0]:
            return
        total = math.sqrt(sum(n * n for _, n in self.session.grad_norms(optimizer)))
        if self._start is None:
            if math.isfinite(total) and total > 0:
                self._start = total
            return
        if not math.isfinite(total):
            if self._peak >= self.NONFINITE_FACTOR * self._start:
                self._report(total)
            return
        self._peak = max(self._peak, total)
        self._above = self._above + 1 if total > self.FACTOR * self._start else 0
        if self._above >= self.PERSIST:
            self._report(total)

    def _report(self, total: float) -> None:
        factor = (total if math.isfinite(total) else self._peak) / self._start
        self.report(
            "gradient-norm", norm=total, factor=factor, start=self._start, step=self.session.step
        )
