"""TD902 vanishing-gradient: the first layers get gradients orders of magnitude below the last."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD902",
    name="vanishing-gradient",
    title={
        "en": "Gradients vanish: the first layers barely learn",
        "zh": "梯度消失：前面的层几乎学不到东西",
    },
    messages={
        "": {
            "en": "the gradients of the first layer `{first}` are {ratio:.1e} times those of the "
            "last layer `{last}` (median over steps {start} to {end}): the first layers "
            "barely learn; use ReLU-like activations, a normalisation layer, residual "
            "connections, or a better initialisation",
            "zh": "第一层 `{first}` 的梯度只有最后一层 `{last}` 的 {ratio:.1e} 倍（第 {start} 到第 {end} 步的中位数）："
            "前面的层几乎学不到东西；请使用 ReLU 类激活函数、归一化层、残差连接或更好的初始化",
        }
    },
    default=False,
    docs={
        "en": """
## What it catches
A model with at least 4 weight matrices (parameters of 2 or more dimensions) whose first
weight's gradient norm, relative to the weight's own norm, stays below 1e-4 times the last
weight's for 10 consecutive steps. Weights whose gradient is exactly zero are left to
`dead-relu` (they are dead, not vanishing). Opt-in (`--select TD902`): a statistical symptom,
measured on seeded runs (see docs/watch.md, "Statistical symptoms").

## Why is this bad?
Backpropagation multiplies one factor per layer. With saturating activations (`sigmoid`,
`tanh`), too small an initialisation, or very deep stacks without normalisation or residual
connections, the product shrinks geometrically: the layers near the input receive almost no
gradient and keep their random weights, while the loss stalls at a poor value.

## Known problems
"First" and "last" are the order of the optimizer's parameters, which is the order the model
registers them in: a model that defines its head before its body is judged backwards. An
embedding whose rows are mostly absent from a batch has a tiny gradient by design; models
starting with one can be reported.
""",
        "zh": """
## What it catches
至少有 4 个权重矩阵（2 维及以上的参数）的模型中，第一个权重的梯度范数（相对于它自身的范数）
连续 10 步低于最后一个权重的 1e-4 倍。梯度恰好为零的权重交给 `dead-relu` 处理（它们是死掉了，
而不是梯度消失）。需要显式启用（`--select TD902`）：这是一个统计症状，在带种子的运行上做过测量
（见 docs/watch.md 的 “Statistical symptoms” 一节）。

## Why is this bad?
反向传播每经过一层就乘上一个因子。使用会饱和的激活函数（`sigmoid`、`tanh`）、初始化过小，
或者很深却没有归一化层和残差连接时，这个乘积按几何级数缩小：靠近输入的层几乎得不到梯度，
一直保持随机初始化的权重，而损失停在一个很差的值上。

## Known problems
“第一层”和“最后一层”按优化器中参数的顺序判断，也就是模型注册参数的顺序：先定义输出头、后定义主体的模型会被反过来判断。
embedding 在一个 batch 中大部分行没有出现，梯度天然很小；以 embedding 开头的模型可能被报告。
""",
    },
    example="""
import torch

layers = []
for _ in range(12):
    layers += [torch.nn.Linear(32, 32), torch.nn.Sigmoid()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(32, 2))
""",
    use_instead="""
import torch

layers = []
for _ in range(12):
    layers += [torch.nn.Linear(32, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers, torch.nn.Linear(32, 2))
""",
)


@PITFALL.monitor
class FirstLayersStarve(Monitor):
    """Relative gradient of the first weight far below the last weight's, step after step.
    Reads the per-parameter norms the session computes once per step, plus one norm of the
    two weights concerned."""

    default = False
    MIN_WEIGHTS = 4
    RATIO = 1e-4
    PERSIST = 10

    def setup(self) -> None:
        self._ratios: list[float] = []

    def on_step(self, optimizer) -> None:
        if optimizer is not self.session.optimizers[0]:
            return
        weights = [(p, n) for p, n in self.session.grad_norms(optimizer) if p.dim() >= 2]
        if len(weights) < self.MIN_WEIGHTS:
            return
        (first, first_grad), (last, last_grad) = weights[0], weights[-1]
        first_size, last_size = float(first.detach().norm()), float(last.detach().norm())
        if not (first_grad > 0 and last_grad > 0 and first_size > 0 and last_size > 0):
            self._ratios = []  # dead, frozen or not finite: not this symptom
            return
        ratio = (first_grad / first_size) / (last_grad / last_size)
        self._ratios = [*self._ratios[-(self.PERSIST - 1) :], ratio] if ratio < self.RATIO else []
        if len(self._ratios) == self.PERSIST:
            step = self.session.step
            self.report(
                "first-layers",
                first=self.session.param_name(first) or "?",
                last=self.session.param_name(last) or "?",
                ratio=sorted(self._ratios)[self.PERSIST // 2],
                start=step - self.PERSIST + 1,
                end=step,
            )
