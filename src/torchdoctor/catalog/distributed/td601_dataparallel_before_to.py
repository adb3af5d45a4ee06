"""TD601 dataparallel-before-to: a DataParallel model run while its parameters are still on the CPU."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    assigned_name,
    Context,
    Finding,
    Kind,
    Pitfall,
    bindings,
    block_names,
    first_in_walk,
    index_of,
    parameter_free_module,
    per_file,
    scope_of,
    subtree,
)

PITFALL = Pitfall(
    code="TD601",
    name="dataparallel-before-to",
    title={
        "en": "DataParallel model run before it is moved to the GPU",
        "zh": "DataParallel 模型在移到 GPU 之前就被调用",
    },
    messages={
        "": {
            "en": "`{wrapper}` wraps `{model}` in DataParallel on line {line} and runs it here, but "
            "`{model}` is never moved to the GPU before: call `.to(device)` or `.cuda()` first",
            "zh": "`{wrapper}` 在第 {line} 行用 DataParallel 包装了 `{model}` 并在这里运行它，但之前从未把 "
            "`{model}` 移到 GPU：请先调用 `.to(device)` 或 `.cuda()`",
        }
    },
    docs={
        "en": """
## What it catches
`wrapper = nn.DataParallel(model)` followed, in the same block, by a forward call
`wrapper(...)`, when neither `model` nor `wrapper` is moved with `.to(...)` or `.cuda()`
anywhere before that call in the same function (or module), nor passed to another function
that could move it. A model with no parameter and no buffer (activations, pooling, losses, a
`Sequential` of them, a module class of the file without `__init__`) has nothing to move and is
not reported.

## Why is this bad?
`nn.DataParallel` does not move the model. At every forward it checks that all parameters and
buffers are on `device_ids[0]` (by default `cuda:0`), scatters the batch over the GPUs and
copies the model to each of them from there. A model left on the CPU fails on the first
batch. (Without any GPU, DataParallel only calls the model, so the same code passes on a
CPU-only machine and fails on the training server.) Moving the wrapper afterwards,
`model = nn.DataParallel(model); model.to(device)` as in the PyTorch tutorial, is fine: the
wrapper moves the model it holds.

## Symptoms
`RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0])
but found one of them on device: cpu`

## Known problems
A model whose parameters are created on the GPU directly (`torch.set_default_device`, a
`device=` argument to its constructor) is reported although it needs no move.
""",
        "zh": """
## What it catches
`wrapper = nn.DataParallel(model)` 之后，在同一个代码块里直接前向调用 `wrapper(...)`，
而在这次调用之前，同一个函数（或模块顶层）里 `model` 和 `wrapper` 都没有用 `.to(...)` 或 `.cuda()`
移动过，也没有交给其他可能移动它的函数。没有任何参数和 buffer 的模型（激活、池化、损失函数、
由它们组成的 `Sequential`、本文件中没有 `__init__` 的模块类）没有东西需要移动，不报告。

## Why is this bad?
`nn.DataParallel` 不会替你移动模型。每次前向时它都会检查所有参数和 buffer 是否在 `device_ids[0]`
（默认 `cuda:0`）上，然后把 batch 分到各张卡上，并从那里把模型复制到每张卡。模型还留在 CPU 上，
第一个 batch 就会报错。（没有 GPU 时 DataParallel 只是直接调用模型，所以同样的代码在只有 CPU 的机器上能跑，
到了训练服务器上才出错。）像 PyTorch 教程那样先包装再移动，`model = nn.DataParallel(model); model.to(device)`，
是没有问题的：包装对象会移动它持有的模型。

## Symptoms
`RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0])
but found one of them on device: cpu`

## Known problems
参数直接创建在 GPU 上的模型（`torch.set_default_device`，或构造函数接收 `device=` 参数）不需要移动，
但也会被报告。
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.DataParallel(nn.Linear(4, 2))
out = model(torch.randn(8, 4))
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.DataParallel(nn.Linear(4, 2))
model.to("cuda")
out = model(torch.randn(8, 4).to("cuda"))
""",
)

DATA_PARALLEL = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)
MOVES = frozenset({"to", "cuda", "to_empty"})
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)


@PITFALL.static(ast.Call, names={"DataParallel", "DP"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if ctx.qualname(call.func) not in DATA_PARALLEL or not call.args:
        return
    model = call.args[0]
    if ctx.kind_of(model) is not Kind.MODULE or _has_move(model, ctx):
        return
    if parameter_free_module(model, ctx):
        return  # nothing on the CPU to move (torchgpipe's `nn.Sequential(Stash(), Pop())`)
    if isinstance(model, ast.Name) and (
        _moved_where_bound(model, ctx) or _built_around_moved(model, ctx)
    ):
        return  # `net = Net(...).to(device)`: moved on the line that built it
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    wrapper = assigned_name(statement, call)
    if wrapper is None:
        return
    names = {wrapper} | ({model.id} if isinstance(model, ast.Name) else set())
    forward = _first_forward(ctx, statement, wrapper)
    if forward is None or _touched_before(ctx, names, forward):
        return
    yield ctx.finding(PITFALL, forward, wrapper=wrapper, model=ctx.text(model), line=call.lineno)


def _has_move(expr: ast.AST, ctx: Context) -> bool:
    """`DataParallel(Net().cuda())`: the model was moved on its way in."""
    return any(ctx.method_name(node) in MOVES for node in subtree(expr))


def _moved_where_bound(name: ast.Name, ctx: Context) -> bool:
    found = bindings(ctx, scope_of(name.id, ctx), name.id) or ()
    return any(b.value is not None and _has_move(b.value, ctx) for b in found)


def _built_around_moved(name: ast.Name, ctx: Context) -> bool:
    """`wrapper = LossWrapper(model, opt)` with `model` moved already: the modules the wrapper
    holds are on the device (its own parameters, if any, cannot be seen from here)."""
    scope = _enclosing_scope(ctx)
    moved = _touches(ctx, scope).moved
    for binding in bindings(ctx, scope_of(name.id, ctx), name.id) or ():
        if not isinstance(binding.value, ast.Call):
            continue
        call = binding.value
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(arg, ast.Name) and (arg.id in moved or _moved_where_bound(arg, ctx)):
                return True
    return False


def _first_forward(ctx: Context, statement: ast.stmt, wrapper: str) -> ast.Call | None:
    """The first `wrapper(...)` in the statements after `statement` in its block, unless the
    name is rebound first."""
    located = ctx.statement_block()
    if located is None:
        return None
    block, index = located
    names = block_names(ctx, block)
    for position, nodes in names.mentions_after(wrapper, index):
        calls = [
            call
            for node in nodes
            if isinstance(call := names.index.parents[node], ast.Call) and call.func is node
        ]
        stores = [node for node in nodes if not isinstance(node.ctx, ast.Load)]
        if calls or stores:
            first = first_in_walk(ctx, block[position], [*calls, *stores])
            return first if isinstance(first, ast.Call) else None
    return None


def _touched_before(ctx: Context, names: set[str], forward: ast.Call) -> bool:
    """Anything in the scope, before `forward`, that may move the model: a `.to()`/`.cuda()` on
    one of `names`, or one of them handed to a function."""
    scope = _enclosing_scope(ctx)
    touches = _touches(ctx, scope)
    before = (forward.lineno, forward.col_offset)
    return any(touches.first(name) < before for name in names)


class _Touches:
    """Per name, where one scope first calls something that may move it: `name.to(...)`,
    `name.cuda()`, or any call but DataParallel's that takes `name` as an argument. Read per
    name from the index: the calls of the moves, and the uses of the name."""

    def __init__(self, ctx: Context, scope: ast.AST) -> None:
        self.found = found = index_of(ctx, scope)
        self.scope = scope
        # The only calls whose function matters: those of DataParallel, which move nothing.
        self.wrapping = {
            id(call)
            for call in found.calls_named(scope, {"DataParallel", *ctx.imported})
            if ctx.qualname(call.func) in DATA_PARALLEL
        }
        self.moved: dict[str | None, tuple[int, int]] = {}
        for call in found.calls_named(scope, MOVES):
            if isinstance(call.func, ast.Attribute):
                self._touch(self.moved, _root_name(call.func.value), call)
        self._first: dict[str, tuple[int, int]] = {}

    def first(self, name: str) -> tuple[float, int]:
        """Where the scope first touches `name`; (inf, 0) when it never does."""
        if name not in self._first:
            first = {name: self.moved[name]} if name in self.moved else {}
            for node in self.found.names_in(self.scope, name):
                call = self._call_taking(node)
                if call is not None and id(call) not in self.wrapping:
                    self._touch(first, name, call)
            self._first[name] = first.get(name, (float("inf"), 0))
        return self._first[name]

    def _call_taking(self, node: ast.Name) -> ast.Call | None:
        """The call `node` is an argument of (`f(node)`, `f(x=node)`), if any."""
        parent = self.found.parents[node]
        if type(parent) is ast.keyword:
            parent = self.found.parents[parent]
            return parent if type(parent) is ast.Call else None
        return parent if type(parent) is ast.Call and parent.func is not node else None

    @staticmethod
    def _touch(first: dict, name: str | None, call: ast.Call) -> None:
        where = (call.lineno, call.col_offset)
        if name is not None and where < first.get(name, (float("inf"), 0)):
            first[name] = where


def _enclosing_scope(ctx: Context) -> ast.AST:
    """The function around the current node; the module at the top level."""
    return next((node for node in reversed(ctx.ancestors) if isinstance(node, SCOPES)), ctx.tree)


@per_file
def _touches(ctx: Context, scope: ast.AST) -> _Touches:
    return _Touches(ctx, scope)


def _root_name(expr: ast.AST) -> str | None:
    """`model.module.fc` -> "model"."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
        expr = expr.value
    return expr.id if isinstance(expr, ast.Name) else None
