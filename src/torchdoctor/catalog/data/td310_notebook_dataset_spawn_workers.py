"""TD310 notebook-dataset-spawn-workers: a notebook's own Dataset or function sent to
DataLoader worker processes, which cannot import the notebook."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Pitfall,
    argument,
    bindings,
    keyword_value,
    top_level_functions,
    scope_of,
    top_level_classes,
)

PITFALL = Pitfall(
    code="TD310",
    name="notebook-dataset-spawn-workers",
    title={
        "en": "Notebook-defined Dataset or function used by DataLoader worker processes",
        "zh": "DataLoader 的 worker 进程要使用 notebook 中定义的 Dataset 或函数",
    },
    messages={
        "": {
            "en": "`{loader}` starts worker processes (`num_workers={workers}`) that need "
            "`{name}`, defined in this notebook: with the spawn or forkserver start method "
            "(Windows, macOS, Linux from Python 3.14) a worker cannot import the notebook and "
            "fails with `Can't get attribute '{name}' on <module '__main__' (built-in)>`, or "
            "the kernel hangs; move `{name}` into a `.py` file and import it, or use "
            "`num_workers=0`",
            "zh": "`{loader}` 会启动 worker 进程（`num_workers={workers}`），而它们需要本 notebook 中"
            "定义的 `{name}`：在 spawn 或 forkserver 启动方式下（Windows、macOS、Python 3.14 起的 "
            "Linux），worker 无法导入 notebook，会报 `Can't get attribute '{name}' on <module "
            "'__main__' (built-in)>`，或者内核卡住；请把 `{name}` 移到一个 `.py` 文件中再导入，"
            "或者使用 `num_workers=0`",
        },
    },
    fix_hint={
        "en": "Put the Dataset class, `collate_fn` and `worker_init_fn` in a `.py` file next to "
        "the notebook and import them from there; or use `num_workers=0` in the notebook.",
        "zh": "把 Dataset 类、`collate_fn` 和 `worker_init_fn` 放进 notebook 旁边的 `.py` 文件，"
        "再从那里导入；或者在 notebook 中使用 `num_workers=0`。",
    },
    # Its Example only goes wrong in a notebook cell; linted as a .py text it is fine.
    lint_example=False,
    docs={
        "en": """
## What it catches
In a Jupyter notebook, a `DataLoader` with a constant `num_workers` above zero (or
`os.cpu_count()`) whose dataset is an instance of a class defined in the notebook (directly,
`DataLoader(MyDataset(...))`, or through a name only ever assigned such an instance), or built
with a function or class of the notebook as an argument (`transform=to_tensor`), or whose
`collate_fn` or `worker_init_fn` is a function defined in the notebook. A loader given
`multiprocessing_context="fork"` is not reported.

## Why is this bad?
Each DataLoader worker is a separate process. With the `fork` start method (the default on
Linux up to Python 3.13) it is a copy of the kernel and has everything the notebook defined.
With `spawn` (Windows, macOS) and `forkserver` (the Linux default since Python 3.14) it is a
fresh interpreter: the dataset and the functions it uses are pickled, which records classes
and functions by module and name, and the worker imports them again. A class defined in a
notebook lives in the kernel's `__main__`, which is not a file a worker can import, so every
worker fails. The same notebook works on a Linux server and fails on a laptop. In a script
the same class works (spawn re-runs the script's file, under `if __name__ == "__main__":`);
only interactive code has no file.

## Symptoms
`AttributeError: Can't get attribute 'MyDataset' on <module '__main__' (built-in)>` printed
by each worker, followed by `RuntimeError: DataLoader worker (pid(s) ...) exited
unexpectedly`; in Jupyter often nothing at all: the cell hangs, or the kernel dies ("The kernel
appears to have died. It will restart automatically.").

## Known problems
The platform the notebook runs on cannot be seen: on Linux with Python 3.13 or older the
reported loader works. Worker counts that are not constants (`num_workers=args.workers`), a
dataset wrapped in another call (`Subset(MyDataset(), ...)`), and classes defined inside a
function or under an `if` are not followed. The error text itself is explained by
`dataloader-worker-pickle`, which links to this rule's finding.

## References
- PyTorch documentation, `torch.utils.data`: "Platform-specific behaviors".
- https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods
""",
        "zh": """
## What it catches
在 Jupyter notebook 中，`num_workers` 为大于零的常量（或 `os.cpu_count()`）的 `DataLoader`，其数据集是
notebook 中定义的类的实例（直接写成 `DataLoader(MyDataset(...))`，或通过一个只被赋予这种实例的名字），
或构造时以 notebook 中的函数或类为参数（`transform=to_tensor`），或者其 `collate_fn`、
`worker_init_fn` 是 notebook 中定义的函数。传入了 `multiprocessing_context="fork"` 的 DataLoader
不报告。

## Why is this bad?
每个 DataLoader worker 都是一个独立的进程。使用 `fork` 启动方式时（Python 3.13 及以前 Linux 的默认值），
它是内核进程的副本，拥有 notebook 定义的一切。使用 `spawn`（Windows、macOS）和 `forkserver`
（Python 3.14 起 Linux 的默认值）时，它是一个全新的解释器：数据集及其用到的函数会被 pickle，而 pickle
按模块和名字记录类和函数，worker 会重新导入它们。notebook 中定义的类位于内核的 `__main__` 中，
而它不是 worker 可以导入的文件，于是每个 worker 都会失败。同一个 notebook 在 Linux 服务器上能运行，
换到笔记本电脑上就失败。在脚本中同样的类可以工作（spawn 会在 `if __name__ == "__main__":` 的保护下
重新执行脚本文件）；只有交互式代码没有文件。

## Symptoms
每个 worker 打印 `AttributeError: Can't get attribute 'MyDataset' on <module '__main__' (built-in)>`，
随后是 `RuntimeError: DataLoader worker (pid(s) ...) exited unexpectedly`；在 Jupyter 中常常什么也
看不到：单元格一直卡住，或者内核崩溃（"The kernel appears to have died. It will restart
automatically."）。

## Known problems
看不到 notebook 运行在什么平台上：在 Python 3.13 及以前的 Linux 上，被报告的 DataLoader 可以正常工作。
不是常量的 worker 数（`num_workers=args.workers`）、包在其他调用中的数据集（`Subset(MyDataset(), ...)`）
以及定义在函数内部或 `if` 之下的类都不追踪。错误信息本身由 `dataloader-worker-pickle` 解释，它会链接到
本规则的发现。

## References
- PyTorch 文档，`torch.utils.data`："Platform-specific behaviors"。
- https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods
""",
    },
    example="""
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor([float(i * i)])


loader = DataLoader(Squares(), batch_size=8, num_workers=2)
""",
    use_instead="""
import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return torch.tensor([float(i)]), torch.tensor([float(i * i)])


loader = DataLoader(Squares(), batch_size=8, num_workers=0)
""",
)

LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
# pin_memory, drop_last, timeout, worker_init_fn, ...): positions of the arguments read.
_POSITIONS = {"num_workers": 5, "collate_fn": 6, "worker_init_fn": 10}
_CPU_COUNTS = frozenset({"os.cpu_count", "multiprocessing.cpu_count"})


@PITFALL.static(ast.Call, names={"DataLoader"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if not ctx.is_notebook or ctx.qualname(call.func) not in LOADERS:
        return
    workers = _argument(call, "num_workers")
    if workers is None or not _some_workers(workers, ctx):
        return
    start = keyword_value(call, "multiprocessing_context")
    if start is not None and not (isinstance(start, ast.Constant) and start.value != "fork"):
        return  # `fork` works; a context object or a variable may be one
    name = _notebook_object(call, ctx)
    if name is None:
        return
    yield ctx.finding(
        PITFALL, call, loader=f"{ctx.text(call.func)}(...)", workers=ctx.text(workers), name=name
    )


def _argument(call: ast.Call, name: str) -> ast.expr | None:
    position = _POSITIONS[name]
    if len(call.args) > position and not any(
        isinstance(arg, ast.Starred) for arg in call.args[: position + 1]
    ):
        return call.args[position]
    return keyword_value(call, name)


def _some_workers(expr: ast.expr, ctx: Context) -> bool:
    """A worker count certainly above zero: a constant, `os.cpu_count()`, or a name only ever
    assigned one of those."""
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int and expr.value > 0
    if isinstance(expr, ast.Call):
        return not expr.args and ctx.qualname(expr.func) in _CPU_COUNTS
    if isinstance(expr, ast.Name):
        values = _assigned(expr.id, ctx)
        return bool(values) and all(_some_workers(value, ctx) for value in values)
    return False


def _assigned(name: str, ctx: Context) -> list[ast.expr] | None:
    """Every value `name` is assigned in its scope; None when a binding cannot be followed."""
    found = bindings(ctx, scope_of(name, ctx), name)
    if not found or any(b.value is None or b.augmented for b in found):
        return None
    return [b.value for b in found]


def _notebook_object(call: ast.Call, ctx: Context) -> str | None:
    """The name of a class or function defined in the notebook that the workers must import:
    the dataset's class, a function or class given to the dataset, `collate_fn` or
    `worker_init_fn`."""
    classes, functions = top_level_classes(ctx), top_level_functions(ctx)
    dataset = argument(call, 0, "dataset")
    if isinstance(dataset, ast.Name):
        values = _assigned(dataset.id, ctx) or []
        made = [_made_in_notebook(value, classes, functions) for value in values]
        if made and all(made):
            return made[0]
    elif dataset is not None:
        found = _made_in_notebook(dataset, classes, functions)
        if found:
            return found
    for keyword in ("collate_fn", "worker_init_fn"):
        function = _argument(call, keyword)
        if isinstance(function, ast.Name) and function.id in functions:
            return function.id
    return None


def _made_in_notebook(value: ast.expr, classes: dict, functions: dict) -> str | None:
    """`MyDataset(...)` of a notebook class, or a dataset built with a notebook function or
    class as an argument (`ImageFolder(root, transform=to_tensor)`)."""
    if not isinstance(value, ast.Call):
        return None
    if isinstance(value.func, ast.Name) and value.func.id in classes:
        return value.func.id
    for given in (*value.args, *(k.value for k in value.keywords)):
        if isinstance(given, ast.Call):  # `transform=Normalize()` of a notebook class
            given = given.func
        if isinstance(given, ast.Name) and (given.id in functions or given.id in classes):
            return given.id
    return None
