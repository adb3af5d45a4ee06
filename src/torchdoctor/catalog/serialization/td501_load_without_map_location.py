"""TD501 load-without-map-location: `torch.load(path)` in code that may run without a GPU."""
from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.context import Context, per_file
from torchdoctor.report.finding import Finding

PITFALL = Pitfall(
    code="TD501",
    name="load-without-map-location",
    title={"en": "torch.load without map_location in code that may run on CPU",
           "zh": "可能在 CPU 上运行的代码里调用 torch.load 却没有指定 map_location"},
    messages={"": {
        "en": "`torch.load` without `map_location` in code that checks for CUDA: a checkpoint saved "
              "on a GPU fails to load on a CPU-only machine; pass `map_location=\"cpu\"` or your device",
        "zh": "这段代码会检查 CUDA 是否可用，但 `torch.load` 没有指定 `map_location`：在 GPU 上保存的 "
              "checkpoint 在只有 CPU 的机器上会加载失败；请传入 `map_location=\"cpu\"` 或你的 device",
    }},
    fix_title={"en": "Add `map_location=\"cpu\"`", "zh": "添加 `map_location=\"cpu\"`"},
    fix_applicability="unsafe",
    # Opt-in: a static check cannot see whether the file holds CUDA tensors (RNG, scheduler and
    # scaler states never do), and such loads are common in library code.
    default=False,
    docs={
        "en": """
## What it catches
A call of `torch.load(...)` without `map_location` in code that decides its device at run
time: the same function (or, at module level, the same script) calls `torch.cuda.is_available()`,
so the author expects the code to run on machines without a GPU too. Opt-in.

## Why is this bad?
`torch.load` puts every tensor back on the device it was saved from. A checkpoint written during
GPU training remembers `cuda:0`; on a laptop or CI runner without CUDA, loading it raises an
error instead of falling back to the CPU. On a multi-GPU machine it also piles every process's
copy onto GPU 0. `map_location="cpu"` (or the `device` the script picked) loads the tensors where
you want them; `model.load_state_dict` then copies them to the model's own device anyway.

## Example
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt")
```

## Use instead:
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt", map_location=device)
```

## Symptoms
`RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available()
is False. If you are running on a CPU-only machine, please use torch.load with
map_location=torch.device('cpu') to map your storages to the CPU.`

## Fix safety
The fix adds `map_location="cpu"`. It is unsafe: tensors that used to come back on the GPU now
come back on the CPU; code that uses loaded tensors directly (not through `load_state_dict`),
such as an optimizer state or a cached tensor, may need an explicit `.to(device)` afterwards.
Passing your `device` variable instead is often the better edit.

## Known problems
Only code whose function or script calls `torch.cuda.is_available()` is checked. The rule
cannot see what the file holds: RNG, LR-scheduler and grad-scaler states contain no CUDA tensors
and load fine anywhere, which is why the rule is opt-in.
""",
        "zh": """
## What it catches
在运行时才决定设备的代码里（同一个函数，或模块级脚本本身，调用了 `torch.cuda.is_available()`，
说明作者预期代码也会在没有 GPU 的机器上运行），调用 `torch.load(...)` 却没有传 `map_location`。默认关闭，需手动启用。

## Why is this bad?
`torch.load` 会把每个张量放回它保存时所在的设备。GPU 训练时保存的 checkpoint 记着 `cuda:0`；
在没有 CUDA 的笔记本或 CI 机器上加载时会直接报错，而不会自动退回 CPU。在多卡机器上，
每个进程加载的副本还会全部挤到 0 号 GPU 上。`map_location="cpu"`（或脚本选好的 `device`）
让张量加载到你想要的位置；之后 `model.load_state_dict` 本来就会把它们拷到模型所在的设备。

## Example
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt")
```

## Use instead:
```python
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
state = torch.load("model.pt", map_location=device)
```

## Symptoms
`RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available()
is False. If you are running on a CPU-only machine, please use torch.load with
map_location=torch.device('cpu') to map your storages to the CPU.`

## Fix safety
修复会加上 `map_location="cpu"`。它是不安全的：原来加载到 GPU 上的张量现在会加载到 CPU 上；
直接使用这些张量（而不是通过 `load_state_dict`）的代码，比如优化器状态或缓存的张量，
之后可能需要显式 `.to(device)`。很多时候改成传入你自己的 `device` 变量更好。

## Known problems
只检查所在函数或脚本调用了 `torch.cuda.is_available()` 的代码。规则看不到文件里存的是什么：
随机数状态、学习率调度器和 grad scaler 的状态里没有 CUDA 张量，在哪里都能正常加载，
因此这条规则默认关闭。
""",
    },
)


@PITFALL.static(ast.Call, names={"load"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not call.args or len(call.args) > 1 or ctx.qualname(call.func) != "torch.load":
        return
    # map_location given, or possibly given through **kwargs / *args.
    if any(kw.arg in ("map_location", None) for kw in call.keywords):
        return
    if isinstance(call.args[0], ast.Starred):
        return
    if not _checks_cuda(ctx, ctx.enclosing_function() or ctx.tree):
        return
    last = call.keywords[-1] if call.keywords else call.args[-1]
    _, end = ctx.span(last)
    fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end, end, ', map_location="cpu"'))
    yield ctx.finding(PITFALL, call, fix=fix)


@per_file
def _checks_cuda(ctx: Context, scope: ast.AST) -> bool:
    """`scope` calls `<...>.cuda.is_available()`: it is meant to run without a GPU too."""
    for node in ast.walk(scope):
        if (type(node) is ast.Call and type(node.func) is ast.Attribute
                and node.func.attr == "is_available" and type(node.func.value) is ast.Attribute
                and node.func.value.attr == "cuda"):
            return True
    return False
