"""TD419 apply-on-cuda-tensor: `Tensor.apply_` / `map_` run Python per element, on the CPU only."""

from __future__ import annotations

from torchdoctor.catalog.sdk import Pitfall

PITFALL = Pitfall(
    code="TD419",
    name="apply-on-cuda-tensor",
    title={
        "en": "`Tensor.apply_` / `map_` called on a tensor that is not on the CPU",
        "zh": "对不在 CPU 上的张量调用 `Tensor.apply_` / `map_`",
    },
    messages={
        "": {
            "en": "`apply_` calls a Python function once per element and works only on CPU "
            "tensors: write the function with tensor operations instead",
            "zh": "`apply_` 对每个元素调用一次 Python 函数，只能用于 CPU 张量：请改用张量运算来写这个函数",
        }
    },
    fix_hint={
        "en": "Write the function with tensor operations on the whole tensor (`x * x`, "
        "`torch.where(x > 0, x, 0)`, a lookup table indexed by `x`), which run on the GPU; "
        "or, for a small tensor, `x.cpu().apply_(f).to(x.device)`.",
        "zh": "用作用于整个张量的运算来写这个函数（`x * x`、`torch.where(x > 0, x, 0)`、用 `x` 索引查找表），"
        "它们可以在 GPU 上运行；张量很小时也可以用 `x.cpu().apply_(f).to(x.device)`。",
    },
    docs={
        "en": """
## What it catches
`Tensor.apply_(f)`, `map_` and `map2_` on a CUDA (or other non-CPU) tensor, for example
after the code that used to run on the CPU moved its data to the GPU.

## Why is this bad?
These methods call a Python function for every element, one at a time, reading and writing
CPU memory; they have no GPU implementation and fail as soon as the tensor moves there. Even
on the CPU they are thousands of times slower than the tensor operations they stand for.

## Symptoms
`TypeError: apply_ is only implemented on CPU tensors` (`map_ ...`, `map2_ ...`).
""",
        "zh": """
## What it catches
对 CUDA（或其他非 CPU）张量调用 `Tensor.apply_(f)`、`map_` 和 `map2_`，例如原本在 CPU 上运行的代码
把数据移到了 GPU 之后。

## Why is this bad?
这些方法对每个元素逐一调用一次 Python 函数，读写的是 CPU 内存；它们没有 GPU 实现，张量一移到 GPU
就会失败。即使在 CPU 上，它们也比对应的张量运算慢上千倍。

## Symptoms
`TypeError: apply_ is only implemented on CPU tensors`（`map_ ...`、`map2_ ...`）。
""",
    },
    example="""
import torch

scores = torch.rand(1000, device="cuda")
scores.apply_(lambda s: 1.0 if s > 0.5 else 0.0)
""",
    use_instead="""
import torch

scores = torch.rand(1000, device="cuda")
scores = (scores > 0.5).float()
""",
)

PITFALL.error(
    r"(?P<method>apply_|map2?_) is only implemented on CPU tensors",
    types=("TypeError",),
    confidence=0.95,
    cause={
        "en": "`{method}` calls a Python function per element on CPU memory; the tensor is on "
        "another device (the GPU), where it has no implementation.",
        "zh": "`{method}` 在 CPU 内存上对每个元素调用 Python 函数；而这个张量在其他设备（GPU）上，"
        "那里没有它的实现。",
    },
)
