"""TD115 detach-missing-between-models: a backward fills gradients of a model whose optimizer
clears them before stepping (a GAN's discriminator loss on `G(z)` without `.detach()`)."""

from __future__ import annotations

import weakref

from torchdoctor.catalog.sdk import Monitor, Pitfall

PITFALL = Pitfall(
    code="TD115",
    name="detach-missing-between-models",
    title={
        "en": "Output of one model fed to another without `.detach()`: its gradients are "
        "computed, then thrown away",
        "zh": "一个模型的输出未经 `.detach()` 就送入另一个模型：为它算出的梯度随后被丢弃",
    },
    messages={
        "": {
            "en": "the backward that trains `{a}` also computed the gradients of `{b}` (the "
            "input of `{a}` comes from `{b}` without `.detach()`), and `zero_grad()` of the "
            "optimizer of `{b}` cleared them before any of its steps used them, {count} steps "
            "in a row: the whole backward through `{b}` is wasted; feed `{a}` the detached "
            "output (`fake.detach()`) in the step that trains it",
            "zh": "训练 `{a}` 的那次反向传播也算出了 `{b}` 的梯度（`{a}` 的输入来自 `{b}`，没有 "
            "`.detach()`），而 `{b}` 的优化器在任何一步用到它们之前就用 `zero_grad()` 把它们清掉了，"
            "已连续 {count} 步：穿过 `{b}` 的整段反向传播都白算了；在训练 `{a}` 的那一步里，"
            "给它输入 detach 过的输出（`fake.detach()`）",
        }
    },
    fix_hint={
        "en": "Detach the output of the first model where the second model's loss uses it: "
        "`d_loss = bce(D(fake.detach()), zeros)` in the discriminator step of a GAN; keep "
        "`D(fake)` (no detach) in the generator step, whose gradients must reach the generator.",
        "zh": "在第二个模型的损失使用第一个模型的输出时把它 detach：GAN 判别器那一步写成 "
        "`d_loss = bce(D(fake.detach()), zeros)`；生成器那一步保留 `D(fake)`（不 detach），"
        "因为它的梯度必须传回生成器。",
    },
    docs={
        "en": """
## What it catches
At run time (`torchdoctor run`, `torchdoctor.watch()`): a backward fills the gradients of a
model B, then B's optimizer clears them with `zero_grad()` before `B.step()` ever used them,
while the optimizer that did step in between trains a model A whose input came from another
model's output still attached to its graph. Reported once the pattern has repeated on 3
consecutive `zero_grad()` calls, naming both models.

The usual case is a GAN: the discriminator loss on `G(z)` without `.detach()`
backpropagates into the generator, and the generator's optimizer calls `zero_grad()` before
its own backward.

## Why is this bad?
`loss.backward()` follows the graph to every tensor that requires a gradient. When the
discriminator's input is the generator's live output, its backward runs through the whole
generator and accumulates into the generator's `.grad`, only for `optimizer_G.zero_grad()`
to throw the result away: the generator's backward is computed once more per step for
nothing (often more than the discriminator's own cost). Without that `zero_grad()`, the
stale gradients would instead corrupt the generator's update. And when the generator step
then reuses the same `fake` for its own loss, the discriminator's backward has already freed
the generator's graph: `RuntimeError: Trying to backward through the graph a second time`
(`backward-through-graph-twice`), which `retain_graph=True` silences without removing the waste.

## Symptoms
- a GAN (or a teacher/student, an encoder feeding a separate head) that trains, but each
  step costs noticeably more than the sum of its forward and backward passes should;
- `RuntimeError: Trying to backward through the graph a second time (or directly access
  saved tensors after they have already been freed)` in the generator step, "fixed" with
  `retain_graph=True`.

## Known problems
Seen only through `Optimizer.zero_grad()`: code that clears gradients with
`model.zero_grad()` or by setting `p.grad = None` itself is not seen. The models must be
trained by different optimizers; one optimizer over both models is a different design (then
the gradients are used). The gradients the generator step computes for the discriminator
(needed to reach the generator, and thrown away at the discriminator's next `zero_grad()`)
are not reported: freeze the discriminator there with `requires_grad_(False)` to save them.
""",
        "zh": """
## What it catches
运行时（`torchdoctor run`、`torchdoctor.watch()`）：一次反向传播填充了模型 B 的梯度，随后 B 的优化器在
`B.step()` 用到它们之前就用 `zero_grad()` 把它们清掉了，而在这期间执行了 step 的优化器训练的是模型 A，
A 的输入来自另一个模型、仍连在计算图上的输出。这种情况在连续 3 次 `zero_grad()` 中重复出现后报告一次，
并指出两个模型。

典型情况是 GAN：判别器的损失作用在没有 `.detach()` 的 `G(z)` 上，反向传播一直进入生成器，
而生成器的优化器在它自己的反向传播之前调用了 `zero_grad()`。

## Why is this bad?
`loss.backward()` 会沿着计算图走到每一个需要梯度的张量。当判别器的输入是生成器仍连着计算图的输出时，
判别器的反向传播会穿过整个生成器，并把结果累加到生成器的 `.grad` 里，然后 `optimizer_G.zero_grad()`
又把它丢掉：每一步都白白多算一遍生成器的反向传播（往往比判别器本身的开销还大）。如果没有这次
`zero_grad()`，这些过时的梯度反而会污染生成器的更新。而当生成器那一步再次使用同一个 `fake` 计算自己的损失时，
判别器的反向传播已经释放了生成器的计算图：`RuntimeError: Trying to backward through the graph a second
time`（`backward-through-graph-twice`），用 `retain_graph=True` 只能让报错消失，浪费依旧。

## Symptoms
- GAN（或教师/学生模型、编码器接一个单独的头）能训练，但每一步明显比前向加反向传播应有的时间更长；
- 生成器那一步报 `RuntimeError: Trying to backward through the graph a second time (or directly
  access saved tensors after they have already been freed)`，然后被 `retain_graph=True` “修好”。

## Known problems
只通过 `Optimizer.zero_grad()` 观察：用 `model.zero_grad()` 或自己设置 `p.grad = None` 清梯度的代码看不到。
两个模型必须由不同的优化器训练；一个优化器同时管理两个模型是另一种设计（那时梯度是会被用到的）。
生成器那一步为判别器算出的梯度（为了传回生成器必须经过判别器，在判别器下一次 `zero_grad()` 时被丢弃）
不报告：可以在那一步用 `requires_grad_(False)` 冻结判别器来省掉它们。
""",
    },
    example="""
import torch
from torch import nn

G, D = nn.Linear(4, 8), nn.Linear(8, 1)
opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(100, 16, 8).unbind():
    fake = G(torch.randn(16, 4))
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake), torch.zeros(16, 1))
    d_loss.backward(retain_graph=True)
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(16, 1)).backward()
    opt_g.step()
""",
    use_instead="""
import torch
from torch import nn

G, D = nn.Linear(4, 8), nn.Linear(8, 1)
opt_g, opt_d = torch.optim.Adam(G.parameters()), torch.optim.Adam(D.parameters())
bce = nn.BCEWithLogitsLoss()
for real in torch.randn(100, 16, 8).unbind():
    fake = G(torch.randn(16, 4))
    opt_d.zero_grad()
    d_loss = bce(D(real), torch.ones(16, 1)) + bce(D(fake.detach()), torch.zeros(16, 1))
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    bce(D(fake), torch.ones(16, 1)).backward()
    opt_g.step()
""",
)


@PITFALL.monitor
class GradientsClearedUnused(Monitor):
    """Per optimizer, the state of one sentinel gradient (its last trainable parameter's) when
    the optimizer last stepped or cleared: a weak reference to the gradient tensor and its
    version counter. At `zero_grad()`, a gradient that is another tensor or was written since
    was made by a backward that no step of this optimizer used. It is reported when the
    optimizer that stepped in between trains a model fed by a differentiable input (another
    model's live output), 3 times in a row. Costs a few attribute reads per `zero_grad()` once
    a second optimizer has stepped (nothing before: with one, no backward can be another's),
    and one look at the tensor arguments of each model's forward until it has seen one."""

    REPEAT = 3

    def setup(self) -> None:
        self._clean: dict[int, tuple] = {}  # id(optimizer) -> (weakref to grad | None, version)
        self._fed: set[int] = set()  # id(model) whose forward took a tensor requiring grad
        self._stepping: set[int] = set()
        self._last_stepped = None  # weak reference to the optimizer that stepped last
        self._wasted: dict[int, int] = {}
        self._models: dict[int, tuple] = {}  # id(optimizer) -> (weakref sentinel, weakref model)

    def on_forward(self, model, args: tuple, kwargs: dict) -> None:
        if id(model) in self._fed:
            return
        values = [*args, *kwargs.values()]
        if any(getattr(v, "requires_grad", False) is True for v in values):
            self._fed.add(id(model))

    def on_step(self, optimizer) -> None:
        self._stepping.add(id(optimizer))

    def after_step(self, optimizer) -> None:
        self._stepping.discard(id(optimizer))
        self._last_stepped = weakref.ref(optimizer)
        if len(self.session.optimizers) > 1:
            self._remember(optimizer)

    def on_zero_grad(self, optimizer) -> None:
        # One optimizer cannot waste another's backward: nothing is kept until there are two,
        # and an optimizer with no state kept yet is judged from its next clearing on.
        if id(optimizer) in self._stepping or id(optimizer) not in self._clean:
            return  # (in _stepping: a closure inside step(), LBFGS)
        param = _sentinel(optimizer)
        if param is None or param.grad is None or self._unchanged(optimizer, param.grad):
            self._wasted.pop(id(optimizer), None)
            return
        other = self._last_stepped() if self._last_stepped is not None else None
        a, b = self._model_of(other), self._model_of(optimizer)
        if other is None or other is optimizer or a is None or b is None or a is b:
            return
        if id(a) not in self._fed:
            return
        count = self._wasted[id(optimizer)] = self._wasted.get(id(optimizer), 0) + 1
        if count >= self.REPEAT:
            self.report(
                (id(other), id(optimizer)),
                a=type(a).__name__,
                b=type(b).__name__,
                count=count,
            )

    def after_zero_grad(self, optimizer) -> None:
        if len(self.session.optimizers) > 1:
            self._remember(optimizer)

    def _remember(self, optimizer) -> None:
        param = _sentinel(optimizer)
        grad = param.grad if param is not None else None
        self._clean[id(optimizer)] = (
            (weakref.ref(grad), grad._version) if grad is not None else (None, None)
        )

    def _unchanged(self, optimizer, grad) -> bool:
        ref, version = self._clean.get(id(optimizer), (None, None))
        return ref is not None and ref() is grad and grad._version == version

    def _model_of(self, optimizer):
        """The watched model holding the optimizer's sentinel parameter (looked up once per
        optimizer and sentinel)."""
        param = _sentinel(optimizer) if optimizer is not None else None
        if param is None:
            return None
        cached = self._models.get(id(optimizer))
        if cached is not None and cached[0]() is param and cached[1]() is not None:
            return cached[1]()
        for model in self.session.models:
            if any(p is param for p in model.parameters()):
                self._models[id(optimizer)] = (weakref.ref(param), weakref.ref(model))
                return model
        return None


def _sentinel(optimizer):
    """The optimizer's last parameter that requires a gradient."""
    for group in reversed(optimizer.param_groups):
        for param in reversed(group["params"]):
            if param.requires_grad:
                return param
    return None
