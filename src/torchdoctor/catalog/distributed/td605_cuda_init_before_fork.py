"""TD605 cuda-init-before-fork: CUDA used in the parent, then a forked child that uses it too."""

from __future__ import annotations


import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    lazy_compile,
    Clue,
    Context,
    Finding,
    Pitfall,
    index,
    index_of,
    per_file,
)

PITFALL = Pitfall(
    code="TD605",
    name="cuda-init-before-fork",
    title={
        "en": "CUDA initialized in the parent before forking a process that uses CUDA",
        "zh": "父进程已初始化 CUDA，之后又 fork 出使用 CUDA 的子进程",
    },
    messages={
        "": {
            "en": "this process is forked after the parent initialized CUDA (line {line}), and the child "
            "uses CUDA: use the 'spawn' start method",
            "zh": "父进程已经初始化了 CUDA（第 {line} 行）之后才 fork 出这个进程，而子进程也使用 CUDA："
            "请改用 'spawn' 启动方式",
        }
    },
    default=False,
    fix_hint={
        "en": "Start processes with the 'spawn' method: `torch.multiprocessing.set_start_method("
        '"spawn")` under `if __name__ == "__main__":`, `mp.get_context("spawn")`, or '
        '`DataLoader(..., multiprocessing_context="spawn")`; better, keep CUDA out of '
        "Dataset and worker code and move batches to the GPU in the main process.",
        "zh": "用 'spawn' 方式启动子进程：在 `if __name__ == \"__main__\":` 下调用 "
        '`torch.multiprocessing.set_start_method("spawn")`，或用 `mp.get_context("spawn")`、'
        '`DataLoader(..., multiprocessing_context="spawn")`；更好的做法是 Dataset 和工作进程里不碰 '
        "CUDA，在主进程中再把 batch 移到 GPU。",
    },
    docs={
        "en": """
## What it catches
A `multiprocessing.Process(target=f, ...)` (or `torch.multiprocessing.Process`) started with
the default start method, in a file that never chooses one (`set_start_method`,
`get_context`), when earlier in the same function the parent used CUDA (`x.cuda()`,
`.to("cuda")`, `device="cuda"`, `torch.cuda.set_device(...)`, `torch.cuda.synchronize()`...)
and the child uses it too: `f` is a function of the same file that uses CUDA, or a value
moved to CUDA is passed to it. Opt-in: the start method may be set in another module.

## Why is this bad?
On Linux the default start method is `fork`: the child is a copy of the parent, including a
CUDA context that cannot work in a forked process. The first CUDA call in the child fails.
`torch.cuda.is_available()` and `torch.cuda.device_count()` do not initialize CUDA, so a
parent that only asks these is fine.

## Symptoms
`RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with
multiprocessing, you must use the 'spawn' start method`

## Known problems
`Pool` and `ProcessPoolExecutor` are not checked: which function their workers run is only
known at `map`/`submit` time.
""",
        "zh": """
## What it catches
在从未选择启动方式（`set_start_method`、`get_context`）的文件里，用默认启动方式创建
`multiprocessing.Process(target=f, ...)`（或 `torch.multiprocessing.Process`），而同一个函数中在此之前
父进程已经使用了 CUDA（`x.cuda()`、`.to("cuda")`、`device="cuda"`、`torch.cuda.set_device(...)`、
`torch.cuda.synchronize()` 等），并且子进程也会用 CUDA：`f` 是本文件中使用 CUDA 的函数，
或者传给它的参数是已经移到 CUDA 上的值。默认关闭：启动方式可能在别的模块里设置。

## Why is this bad?
Linux 上默认的启动方式是 `fork`：子进程是父进程的一份拷贝，连同一个在 fork 出的进程里无法使用的 CUDA 上下文。
子进程里第一次调用 CUDA 就会失败。`torch.cuda.is_available()` 和 `torch.cuda.device_count()`
不会初始化 CUDA，父进程只调用它们是没问题的。

## Symptoms
`RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with
multiprocessing, you must use the 'spawn' start method`

## Known problems
`Pool` 和 `ProcessPoolExecutor` 不检查：它们的工作进程运行哪个函数，要到 `map`/`submit` 时才知道。
""",
    },
    example="""
import multiprocessing as mp

import torch


def worker(rank):
    torch.ones(1).cuda()


x = torch.ones(1).cuda()
p = mp.Process(target=worker, args=(0,))
p.start()
""",
    use_instead="""
import torch
import torch.multiprocessing as mp


def worker(rank):
    torch.ones(1).cuda()


if __name__ == "__main__":
    mp.set_start_method("spawn")
    x = torch.ones(1).cuda()
    p = mp.Process(target=worker, args=(0,))
    p.start()
""",
)

PROCESSES = frozenset(
    {"multiprocessing.Process", "torch.multiprocessing.Process", "multiprocessing.context.Process"}
)
# Choosing a start method anywhere in the file: the author thought about it.
START_METHOD_CALLS = frozenset({"set_start_method", "get_context"})
# torch.cuda functions that create the CUDA context (is_available/device_count do not).
CUDA_INITIALIZERS = frozenset(
    """
init set_device synchronize empty_cache current_device get_device_name get_device_properties
mem_get_info memory_allocated max_memory_allocated memory_reserved Stream Event
""".split()
)


@PITFALL.static(ast.Call, names={"Process"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.qualname(call.func) not in PROCESSES or _chooses_start_method(ctx):
        return
    scope = next(
        (
            node
            for node in reversed(ctx.ancestors)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
        ctx.tree,
    )
    before = (call.lineno, call.col_offset)
    cuda = _cuda_uses(ctx, scope)
    if (
        not cuda.calls
        or _position(cuda.calls[0]) >= before
        or not _child_uses_cuda(call, cuda, ctx)
    ):
        return
    yield ctx.finding(PITFALL, call, line=cuda.calls[0].lineno)


@per_file
def _chooses_start_method(ctx: Context) -> bool:
    if not any(ctx.may_name(name) for name in START_METHOD_CALLS):
        return False
    calls = index(ctx).calls
    return any(calls.get(name) for name in START_METHOD_CALLS)


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else None
    )


def _own_calls(scope: ast.AST, ctx: Context) -> list[ast.Call]:
    """The calls in `scope` that may initialize CUDA (see `_initializes_cuda`), not entering
    nested functions or classes, in source order: those of its names, of names bound by
    imports (aliases of `torch.cuda` functions), and those with a `device=` argument."""
    found = index_of(ctx, scope)
    calls = found.calls_named(scope, {"cuda", "to", *CUDA_INITIALIZERS, *ctx.imported}, local=True)
    for keyword in found.under(scope, ast.keyword):
        call = found.parents[keyword]
        if keyword.arg == "device" and type(call) is ast.Call and found.is_local(scope, call):
            calls.append(call)
    return sorted(
        {id(call): call for call in calls}.values(),
        key=lambda call: (_position(call), found.number[call]),
    )


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


class _CudaUses:
    """Where one scope initializes CUDA, read once: its calls that do, in source order, and
    where each name is first moved to CUDA (`model.cuda()`, `x.to("cuda")`)."""

    def __init__(self, scope: ast.AST, ctx: Context) -> None:
        self.calls = [call for call in _own_calls(scope, ctx) if _initializes_cuda(call, ctx)]
        self.first_move: dict[str, tuple[int, int]] = {}
        for call in self.calls:
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
                self.first_move.setdefault(call.func.value.id, _position(call))


@per_file
def _cuda_uses(ctx: Context, scope: ast.AST) -> _CudaUses:
    return _CudaUses(scope, ctx)


def _initializes_cuda(call: ast.Call, ctx: Context) -> bool:
    name = _called_name(call)
    if name == "cuda" and isinstance(call.func, ast.Attribute):
        return True
    # `torch.cuda.<name>`; a bare name may be an import alias of one.
    if name in CUDA_INITIALIZERS or isinstance(call.func, ast.Name):
        qualname = ctx.qualname(call.func) or ""
        if qualname.startswith("torch.cuda.") and qualname.rpartition(".")[2] in CUDA_INITIALIZERS:
            return True
    if name == "to" and call.args and _is_cuda_string(call.args[0]):
        return True
    return any(k.arg == "device" and _is_cuda_string(k.value) for k in call.keywords)


def _is_cuda_string(expr: ast.AST) -> bool:
    return (
        isinstance(expr, ast.Constant)
        and isinstance(expr.value, str)
        and expr.value.startswith("cuda")
    )


def _child_uses_cuda(process: ast.Call, cuda: _CudaUses, ctx: Context) -> bool:
    """The target is a local function that uses CUDA, or a value moved to CUDA before the
    process starts is passed to it."""
    keywords = {k.arg: k.value for k in process.keywords}
    target = keywords.get("target")
    function = _module_functions(ctx).get(target.id) if isinstance(target, ast.Name) else None
    if function is not None and _cuda_uses(ctx, function).calls:
        return True
    args = keywords.get("args")
    passed = (
        {e.id for e in args.elts if isinstance(e, ast.Name)}
        if isinstance(args, ast.Tuple)
        else set()
    )
    before = _position(process)
    return any(name in cuda.first_move and cuda.first_move[name] < before for name in passed)


@per_file
def _module_functions(ctx: Context) -> dict[str, ast.FunctionDef]:
    return {node.name: node for node in ctx.tree.body if type(node) is ast.FunctionDef}


# Error signatures ---------------------------------------------------------------------------

# CUDA's own word for a forked child touching a context its parent made: the usual cause in a
# training script, though a broken driver says it too. As torch prints it (`CUDA error:
# initialization error`), c10 (`c10::CUDAError ... initialization error`) and torch 0.4
# (`Cuda error (3): initialization error`).
_INITIALIZATION_ERROR = lazy_compile(r"(?i)\bcuda(?:error)?\b[^\n]{0,30}?\binitialization error")
_WORKERS = lazy_compile(r"num_workers?|DataLoader|dataloader|\bfork|multiprocessing|worker")
_INITIALIZATION_CAUSE = {
    "en": "CUDA failed to initialise in this process. In training scripts this is most often "
    "a forked child (a DataLoader worker, a `multiprocessing` process) using CUDA that the "
    "parent had already initialised; otherwise the driver or the GPU is in a bad state.",
    "zh": "CUDA 在这个进程中初始化失败。在训练脚本中，最常见的是一个 fork 出来的子进程（DataLoader "
    "worker、`multiprocessing` 进程）使用了父进程已经初始化过的 CUDA；否则是驱动或 GPU 处于异常状态。",
}


@PITFALL.error_check(types=(), words=("initialization error",))
def initialization_error(block, report) -> Clue | None:
    if not _INITIALIZATION_ERROR.search(block.message):
        return None
    # Workers or a fork named around it make it the usual story; alone, only the likelier one.
    return Clue(0.8 if report.search(_WORKERS) else 0.55, _INITIALIZATION_CAUSE)


PITFALL.error(
    r"Cannot re-initialize CUDA in forked subprocess",
    types=(),
    confidence=0.95,
    cause={
        "en": "A forked child process (a multiprocessing worker or a DataLoader worker with "
        "`num_workers > 0`) used CUDA after the parent had initialized it; a CUDA "
        "context cannot be used across `fork`.",
        "zh": "父进程初始化 CUDA 之后，fork 出的子进程（multiprocessing 的工作进程，或 `num_workers > 0` "
        "的 DataLoader 工作进程）又使用了 CUDA；CUDA 上下文不能跨 `fork` 使用。",
    },
)
