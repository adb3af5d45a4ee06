"""TD214 zero-grad-set-to-none-false: `zero_grad(set_to_none=False)` fills gradients with zeros."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Pitfall

PITFALL = Pitfall(
    code="TD214",
    name="zero-grad-set-to-none-false",
    # Off by default, as TorchFix's TOR402: a performance hint, and some code needs zeros.
    default=False,
    title={
        "en": "`zero_grad(set_to_none=False)` writes zeros into every gradient",
        "zh": "`zero_grad(set_to_none=False)` 把每个梯度都填成 0",
    },
    messages={
        "": {
            "en": "`{call}` fills every gradient with zeros at each step and keeps their "
            "memory; the default `zero_grad()` (`set_to_none=True`) just drops them",
            "zh": "`{call}` 每一步都把所有梯度填成 0，并一直占着它们的显存；默认的 `zero_grad()`"
            "（`set_to_none=True`）直接丢掉它们",
        }
    },
    fix_title={"en": "Call `zero_grad()`", "zh": "改为调用 `zero_grad()`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A call `x.zero_grad(set_to_none=False)` (or `x.zero_grad(False)`), on an optimizer or a module.

## Why is this bad?
Since PyTorch 2.0 `zero_grad()` sets each gradient to `None` by default: the next `backward()`
allocates it afresh and writes it once. With `set_to_none=False`, every step launches a kernel
per gradient (or per group, with `foreach`) that writes zeros, then `backward()` reads and adds
into them: extra memory traffic, and the gradients' memory stays allocated between the step and
the next backward, when activations need it most. PyTorch's documentation of `zero_grad` says
`None` "will in general have lower memory footprint, and can modestly improve performance".

## Symptoms
No error: a slower step and a higher memory peak than needed.

## Fix safety
The fix calls `zero_grad()` without the argument. It is unsafe because zeros and `None` differ
for code that reads the gradients: `p.grad.add_(...)`, gradient clipping or logging written
for tensors fails on `None` (`AttributeError: 'NoneType' object has no attribute ...`), a
parameter that receives no gradient in a step keeps `None`, and the `torch.optim` optimizers
skip a parameter whose gradient is `None` where they would step with a zero gradient (with
momentum or weight decay, that parameter still moves). The fix is offered only when the flag is
the call's one argument.

## Known problems
The rule does not check what the receiver is: any `.zero_grad(set_to_none=False)` is reported.
Code that needs zero-filled gradients (a hook or a custom optimizer that reads `.grad` before
`backward()`) should keep the flag, with `# noqa: TD214`.

## References
- PyTorch docs, `torch.optim.Optimizer.zero_grad` and the performance tuning guide
  ("Use parameter.grad = None instead of model.zero_grad() or optimizer.zero_grad()").
- TorchFix TOR402, the same check (off by default there too).
""",
        "zh": """
## What it catches
在优化器或模块上调用 `x.zero_grad(set_to_none=False)`（或 `x.zero_grad(False)`）。

## Why is this bad?
自 PyTorch 2.0 起，`zero_grad()` 默认把每个梯度设为 `None`：下一次 `backward()` 重新分配并只写一次。
用 `set_to_none=False` 时，每一步都要为每个梯度（用 `foreach` 时为每组）启动一个写 0 的 kernel，之后
`backward()` 再读出来累加：多了内存读写，而且梯度的显存在这一步到下一次 backward 之间一直被占着，
而这正是激活值最需要显存的时候。PyTorch 的 `zero_grad` 文档说 `None` “通常占用更少的内存，并能适度提升性能”。

## Symptoms
不会报错：训练步更慢，显存峰值比需要的高。

## Fix safety
修复改为调用不带参数的 `zero_grad()`。它不安全，因为对读取梯度的代码来说，0 和 `None` 不一样：
`p.grad.add_(...)`、按张量写的梯度裁剪或日志遇到 `None` 会出错
（`AttributeError: 'NoneType' object has no attribute ...`）；某一步没有得到梯度的参数会保持 `None`；
而 `torch.optim` 的优化器会跳过梯度为 `None` 的参数，梯度为 0 时则照常更新（有动量或权重衰减时，
这个参数仍会变化）。只有这个标志是调用的唯一参数时才提供修复。

## Known problems
规则不检查调用者是什么：任何 `.zero_grad(set_to_none=False)` 都会报告。确实需要用 0 填充梯度的代码
（在 `backward()` 之前读取 `.grad` 的 hook 或自定义优化器）应保留这个标志，并加上 `# noqa: TD214`。

## References
- PyTorch 文档 `torch.optim.Optimizer.zero_grad` 以及性能调优指南
  （“Use parameter.grad = None instead of model.zero_grad() or optimizer.zero_grad()”）。
- TorchFix TOR402，同样的检查（在那里也默认关闭）。
""",
    },
    example="""
import torch

optimizer = torch.optim.AdamW(model.parameters())
for inputs, targets in loader:
    optimizer.zero_grad(set_to_none=False)
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
""",
    use_instead="""
import torch

optimizer = torch.optim.AdamW(model.parameters())
for inputs, targets in loader:
    optimizer.zero_grad()
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
""",
)


@PITFALL.static(ast.Call, names={"zero_grad"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if type(call.func) is not ast.Attribute:
        return
    flags = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "set_to_none")]
    if not flags or not all(type(f) is ast.Constant and f.value is False for f in flags):
        return
    fix = None
    if len(call.args) + len(call.keywords) == 1:
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(call, f"{ctx.text(call.func)}()"))
    yield ctx.finding(PITFALL, call, fix=fix, call=f"{ctx.text(call.func)}(set_to_none=False)")
