"""TD309 dataloader-num-workers-zero: a training script loads its data in the training process."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Pitfall,
    argument,
    bindings,
    scope_of,
    per_file,
)

PITFALL = Pitfall(
    code="TD309",
    name="dataloader-num-workers-zero",
    # Off by default, as TorchFix's TOR401: zero workers is right for data already in memory,
    # for debugging and in notebooks, and the checker cannot tell how costly loading is.
    default=False,
    title={
        "en": "A training loader without workers: data loads in the training process",
        "zh": "训练用的 DataLoader 没有 worker：数据在训练进程里加载",
    },
    messages={
        "": {
            "en": "`{loader}` has no `num_workers=` (the default is 0): every batch is loaded "
            "and collated in the training process while the model waits; pass "
            "`num_workers=` (and `pin_memory=True` for a GPU)",
            "zh": "`{loader}` 没有传 `num_workers=`（默认是 0）：每个批次都在训练进程里加载和拼接，"
            "模型只能等着；请传入 `num_workers=`（用 GPU 时再加 `pin_memory=True`）",
        },
        "zero": {
            "en": "`{loader}` has `num_workers=0`: every batch is loaded and collated in the "
            "training process while the model waits",
            "zh": "`{loader}` 的 `num_workers=0`：每个批次都在训练进程里加载和拼接，模型只能等着",
        },
    },
    fix_hint={
        "en": "Pass `num_workers=` a few processes (4 to 8 per GPU is a common start; measure), "
        "with `persistent_workers=True` and `pin_memory=True` when training on a GPU.",
        "zh": "给 `num_workers=` 传几个进程（每个 GPU 4 到 8 个是常见的起点，请实测），在 GPU 上训练时"
        "同时传 `persistent_workers=True` 和 `pin_memory=True`。",
    },
    docs={
        "en": """
## What it catches
A `torch.utils.data.DataLoader(...)` without `num_workers=` or with `num_workers=0`, in a file
that trains (it calls `.backward(`). A loader given `**kwargs`, or its `num_workers` by
position, is not reported, nor one of a `TensorDataset` (its batches are slices of tensors
already in memory: workers would only copy them between processes).

## Why is this bad?
With no workers, the loader reads, decodes, augments and collates each batch in the training
process, between two steps: the GPU waits for it, and for image or audio data that often
costs more than the step itself. With `num_workers=N`, N processes prepare the next batches
while the model trains on the current one.

## Symptoms
No error: low GPU utilisation (`nvidia-smi` well under 100%), steps whose time grows with the
augmentations rather than the model, one CPU core busy and the others idle.

## Known problems
Zero workers is the right choice when the data is already tensors in memory (a
`TensorDataset` made elsewhere, a list of tensors), when the dataset is not picklable, in
notebooks and when debugging (a breakpoint in `__getitem__` works only in the main process);
the rule cannot tell these apart, which is why it is off by default (as TorchFix's TOR401).
Files that define loaders without training in them (a data module) are not reported.

## References
- PyTorch docs, `torch.utils.data`: "Single- and Multi-process Data Loading", and the
  performance tuning guide ("Enable asynchronous data loading and augmentation").
- TorchFix TOR401, the same check (off by default there too).
""",
        "zh": """
## What it catches
在训练的文件里（调用了 `.backward(`）创建 `torch.utils.data.DataLoader(...)` 时没有传 `num_workers=`，
或者传了 `num_workers=0`。传了 `**kwargs` 或者按位置传 `num_workers` 的 DataLoader 不报告，
`TensorDataset` 的 DataLoader 也不报告（它的批次只是内存中已有张量的切片：worker 只会在进程之间复制它们）。

## Why is this bad?
没有 worker 时，DataLoader 在训练进程里、在两个训练步之间读取、解码、增强并拼接每个批次：GPU 只能等它，
对图像或音频数据来说，这往往比训练步本身还慢。用 `num_workers=N` 时，N 个进程会在模型训练当前批次的同时
准备后面的批次。

## Symptoms
不会报错：GPU 利用率低（`nvidia-smi` 远低于 100%），每步的耗时随数据增强而不是模型增长，只有一个 CPU
核心在忙，其他核心空闲。

## Known problems
当数据已经是内存里的张量（在别处创建的 `TensorDataset`、张量列表）、数据集无法被 pickle、在 notebook 里或者调试时
（`__getitem__` 里的断点只在主进程中有效），0 个 worker 才是正确的选择；规则无法区分这些情况，
所以它默认关闭（和 TorchFix 的 TOR401 一样）。只定义 DataLoader 而不在其中训练的文件（数据模块）不报告。

## References
- PyTorch 文档 `torch.utils.data`：“Single- and Multi-process Data Loading”，以及性能调优指南
  （“Enable asynchronous data loading and augmentation”）。
- TorchFix TOR401，同样的检查（在那里也默认关闭）。
""",
    },
    example="""
from torch.utils.data import DataLoader

loader = DataLoader(train_set, batch_size=64, shuffle=True)
for images, labels in loader:
    loss = criterion(model(images), labels)
    loss.backward()
""",
    use_instead="""
from torch.utils.data import DataLoader

loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=8, pin_memory=True)
for images, labels in loader:
    loss = criterion(model(images), labels)
    loss.backward()
""",
)

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
TENSOR_DATASETS = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
)
NUM_WORKERS_POSITION = 5  # DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)


@PITFALL.static(ast.Call, names={"DataLoader"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if len(call.args) > NUM_WORKERS_POSITION or any(type(a) is ast.Starred for a in call.args):
        return  # given by position, or maybe inside *args
    workers = None
    for keyword in call.keywords:
        if keyword.arg is None:
            return  # maybe inside **kwargs
        if keyword.arg == "num_workers":
            workers = keyword.value
    if workers is not None and not (type(workers) is ast.Constant and workers.value == 0):
        return
    if not _trains(ctx) or ctx.qualname(call.func) not in LOADERS:
        return
    dataset = argument(call, 0, "dataset")
    if _in_memory(dataset, ctx):
        return  # batches are slices of tensors already in memory: workers would only copy them
    variant = "" if workers is None else "zero"
    yield ctx.finding(PITFALL, call, variant, loader=_name(call, ctx))


@per_file
def _trains(ctx: Context) -> bool:
    """The file computes gradients: read once from its text."""
    return ".backward(" in ctx.source


def _in_memory(dataset: ast.expr | None, ctx: Context) -> bool:
    """`TensorDataset(...)`, or a name every binding of which is one."""
    if type(dataset) is ast.Name:
        found = bindings(ctx, scope_of(dataset.id, ctx), dataset.id)
        return bool(found) and all(_tensor_dataset(b.value, ctx) for b in found)
    return _tensor_dataset(dataset, ctx)


def _tensor_dataset(value: ast.expr | None, ctx: Context) -> bool:
    return type(value) is ast.Call and ctx.qualname(value.func) in TENSOR_DATASETS


def _name(call: ast.Call, ctx: Context) -> str:
    statement = ctx.parent()
    if isinstance(statement, ast.Assign) and statement.value is call:
        target = statement.targets[0]
        if isinstance(target, (ast.Name, ast.Attribute)):
            return ctx.text(target)
    return "DataLoader(...)"
