"""TD904 loss-plateau: the training loss has not improved since the first steps."""

from __future__ import annotations

import math

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD904",
    name="loss-plateau",
    title={"en": "The training loss does not go down", "zh": "训练损失不下降"},
    messages={
        "": {
            "en": "the training loss has not gone down in {steps} steps: its mean over the first "
            "{window} steps was {start:.4g}, its best mean over {window} steps since is "
            "{best:.4g}; check the learning rate (0? far too small?), that the optimizer "
            "holds the trained parameters, and that they require gradients",
            "zh": "训练损失在 {steps} 步内没有下降：最初 {window} 步的平均值是 {start:.4g}，此后任意连续 {window} 步的"
            "最好平均值是 {best:.4g}；请检查学习率（是 0？太小？）、优化器里是否是要训练的参数、这些参数是否需要梯度",
        }
    },
    default=False,
    docs={
        "en": """
## What it catches
A run whose training loss (the value `backward` is called on, one per step of the first
optimizer) has not improved after 40 steps: the best mean over 10 consecutive steps is not
below the mean of the first 10 by more than 1% of it, nor by more than chance allows (3
standard deviations of a difference of two such means, from the spread of the first 10).
A run that improved once is never reported, so a converged run that flattens out is fine.
Opt-in (`--select TD904`): a statistical symptom,
measured on seeded runs (see docs/watch.md, "Statistical symptoms").

## Why is this bad?
A loss that does not move from the first steps on means the parameters are not learning: a
learning rate of 0 or far too small (a scheduler that decayed it to nothing, a typo such as
`lr=1e-50`), an optimizer built over other parameters than the model being trained (a model
rebuilt after the optimizer), parameters frozen by `requires_grad=False`, a `detach()` that
cuts the graph, or dead units that pass no gradient. Such a run can burn hours before anyone
looks at the curve.

## Known problems
A plateau reached after the loss first went down (a learning rate that decayed too early) is
not reported. Under a `GradScaler` the loss seen is the scaled one and the scale moves, so
the check is off there. A task that is learned in the first few steps (a loss near zero from
the start) cannot improve by 1% and is skipped only when its loss is below 1e-6.
""",
        "zh": """
## What it catches
训练损失（调用 `backward` 的那个值，第一个优化器每步一个）在 40 步后仍没有改善：任意连续 10 步的最好平均值
比最初 10 步的平均值低得不超过它的 1%，也不超过随机波动所能解释的幅度（由最初 10 步的离散程度算出的、
两个这样的平均值之差的 3 个标准差）。曾经改善过的训练永远不会被报告，所以收敛后变平的训练不受影响。需要显式启用
（`--select TD904`）：这是一个统计症状，在带种子的运行上做过测量（见 docs/watch.md 的 “Statistical symptoms” 一节）。

## Why is this bad?
损失从一开始就不动，说明参数没有在学习：学习率为 0 或太小（调度器把它衰减没了、`lr=1e-50` 这样的笔误），
优化器管理的不是正在训练的模型的参数（在创建优化器之后又重建了模型），参数被 `requires_grad=False` 冻结，
某个 `detach()` 切断了计算图，或者死亡的单元传不回梯度。这样的训练可能白白跑上几个小时才有人去看曲线。

## Known problems
损失先下降、之后才停滞的情况（学习率衰减得太早）不会被报告。使用 `GradScaler` 时看到的是缩放后的损失，
而且缩放系数会变化，所以此时不做检查。在最初几步就学会的任务（损失一开始就接近 0）无法再改善 1%，
只有当损失低于 1e-6 时才会被跳过。
""",
    },
    example="""
import torch

model = torch.nn.Linear(16, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
""",
    use_instead="""
import torch

model = torch.nn.Linear(16, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
""",
)


@PITFALL.monitor
class LossNeverImproves(Monitor):
    """At step CHECK_AT, no window of WINDOW steps has a mean loss 1% below the first
    window's, and the loss did not run away either (that is exploding-gradient's, and a
    non-finite loss is nan-loss's). One float per step is kept, WINDOW at most."""

    default = False
    WINDOW = 10
    CHECK_AT = 40
    IMPROVEMENT = 0.01
    DIVERGING = 2.0  # a window this many times the first: not a plateau

    def setup(self) -> None:
        self._recent: list[float] = []
        self._count = 0
        self._first: float | None = None
        self._noise = 0.0
        self._best = math.inf
        self._worst = -math.inf
        self._done = False

    def after_step(self, optimizer) -> None:
        if self._done or optimizer is not self.session.optimizers[0]:
            return
        loss = self.session.last_loss
        if loss is None or self.session.scaler is not None:
            return
        if not math.isfinite(loss):
            self._done = True
            return
        self._count += 1
        self._recent = [*self._recent[-(self.WINDOW - 1) :], loss]
        if self._count < self.WINDOW:
            return
        window = sum(self._recent) / self.WINDOW
        if self._first is None:
            self._first = window
            # how far a later window's mean can fall by chance: 3 standard deviations of a
            # difference of two window means of the first window's spread
            spread = sum((x - window) ** 2 for x in self._recent) / (self.WINDOW - 1)
            self._noise = 3 * math.sqrt(2 * spread / self.WINDOW)
            if abs(window) < 1e-6:
                self._done = True  # nothing left to learn
            return
        self._best, self._worst = min(self._best, window), max(self._worst, window)
        margin = max(self.IMPROVEMENT * abs(self._first), self._noise)
        if self._best < self._first - margin:
            self._done = True  # it learns: never reported
        elif self._count >= self.CHECK_AT:
            self._done = True
            if self._worst <= self.DIVERGING * abs(self._first):
                self.report(
                    "loss",
                    steps=self._count,
                    window=self.WINDOW,
                    start=self._first,
                    best=self._best,
                )
