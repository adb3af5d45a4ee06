"""TD903 dead-relu: most units of a ReLU output zero for every sample, step after step."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD903",
    name="dead-relu",
    title={
        "en": "Dead ReLUs: most units output zero for every input",
        "zh": "ReLU 死亡：大多数单元对所有输入都输出 0",
    },
    messages={
        "": {
            "en": "{percent:.0f}% of the units of `{layer}` ({type}) output zero for every sample "
            "of the batch at steps {steps}: they are dead and get no gradient; lower the "
            "learning rate, check the initialisation (large negative biases), or use "
            "LeakyReLU/GELU",
            "zh": "`{layer}`（{type}）有 {percent:.0f}% 的单元在第 {steps} 步对 batch 中所有样本都输出 0："
            "它们已经死亡，得不到梯度；请降低学习率、检查初始化（过大的负偏置），或改用 LeakyReLU/GELU",
        }
    },
    default=False,
    docs={
        "en": """
## What it catches
An `nn.ReLU` module (or `nn.ReLU6`) of a model in training mode where at least 90% of the units
are zero for every sample of the batch, at 3 sampled steps in a row (one step in 10 is
sampled). A unit is a channel for convolution outputs (`[N, C, ...]` with 4 or 5 dimensions),
a feature for `[N, F]`, and the last dimension for `[N, T, F]`. Opt-in (`--select TD903`): a
statistical symptom, measured on seeded runs (see docs/watch.md, "Statistical symptoms").

## Why is this bad?
A ReLU unit whose input is negative for every sample outputs 0 and passes back a zero
gradient, so nothing can revive it: it is dead for good. A large learning rate step, a large
negative bias (from initialisation or a bad update) or inputs that are not normalised can kill
most units of a layer at once; the network then has far less capacity than it seems, or
stops learning altogether.

## Known problems
Only ReLU modules are watched: `F.relu`/`torch.relu` called in `forward` are not (a forward
hook needs a module). Only models seen while the check is enabled get the hooks. A ReLU
followed by max-pooling over sparse features can legitimately leave many channels at zero.
""",
        "zh": """
## What it catches
训练模式下模型中的 `nn.ReLU`（或 `nn.ReLU6`）模块，在连续 3 个采样步（每 10 步采样一次）中，
至少 90% 的单元对 batch 中的所有样本都输出 0。单元的含义：卷积输出（4 维或 5 维的 `[N, C, ...]`）
按通道，`[N, F]` 按特征，`[N, T, F]` 按最后一维。需要显式启用（`--select TD903`）：这是一个统计症状，
在带种子的运行上做过测量（见 docs/watch.md 的 “Statistical symptoms” 一节）。

## Why is this bad?
如果一个 ReLU 单元对所有样本的输入都是负数，它就输出 0，并回传零梯度，于是再也无法恢复：它永久死亡了。
过大的学习率步长、过大的负偏置（来自初始化或一次糟糕的更新）或没有归一化的输入，都可能一下子让一层中的
大多数单元死亡；网络的实际容量因此远小于看上去的大小，甚至完全停止学习。

## Known problems
只监视 ReLU 模块：在 `forward` 中调用的 `F.relu`/`torch.relu` 不在其中（前向 hook 需要模块）。
只有启用检查之后才见到的模型会被挂上 hook。ReLU 之后接在稀疏特征上做最大池化时，很多通道为 0 也可能是正常的。
""",
    },
    example="""
import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
torch.nn.init.constant_(model[0].bias, -5.0)
""",
    use_instead="""
import torch

model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
torch.nn.init.zeros_(model[0].bias)
""",
)


@PITFALL.monitor
class UnitsNeverFire(Monitor):
    """Forward hooks on the ReLU modules of each model; every EVERY steps, one reduction per
    ReLU (the maximum of each unit over the batch) gives the fraction of units that are zero
    for every sample. The hook returns at once on the other steps."""

    default = False
    EVERY = 10
    DEAD = 0.9
    PERSIST = 3
    MIN_UNITS = 4

    def setup(self) -> None:
        self._history: dict[int, list] = {}  # id(relu) -> [(step, dead fraction), ...]

    def on_model(self, model) -> None:
        from torch import nn

        for name, module in model.named_modules():
            if type(module) in (nn.ReLU, nn.ReLU6):
                self.session.add_module_hook(
                    self, module.register_forward_hook, self._sampler(name)
                )

    def _sampler(self, name: str):
        def hook(module, args, output):
            step = self.session.step
            if step % self.EVERY or not module.training:
                return None
            history = self._history.setdefault(id(module), [])
            if history and history[-1][0] == step:
                return None  # a ReLU module used twice in one forward: its first use
            self._sample(module, name, output, step, history)
            return None

        return hook

    def _sample(self, module, name: str, output, step: int, history: list) -> None:
        dims = output.dim()
        if dims < 2:
            return
        unit = dims - 1 if dims == 3 else 1
        reduce = [d for d in range(dims) if d != unit]
        peaks = output.detach().amax(dim=reduce)
        if peaks.numel() < self.MIN_UNITS:
            return
        dead = float((peaks <= 0).sum()) / peaks.numel()
        history.append((step, dead))
        del history[: -self.PERSIST]
        if len(history) == self.PERSIST and all(f >= self.DEAD for _, f in history):
            self.report(
                id(module),
                module=name,
                layer=name,
                type=type(module).__name__,
                percent=100 * min(f for _, f in history),
                steps=", ".join(str(s) for s, _ in history),
            )
