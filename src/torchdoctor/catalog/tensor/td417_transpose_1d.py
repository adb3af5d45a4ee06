"""TD417 transpose-1d: `.T` or `.t()` on a tensor known to be 1-D returns it unchanged."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Pitfall,
    bindings,
    index_of,
    names_assigned_calls_of,
    scope_of,
    shorten,
)

PITFALL = Pitfall(
    code="TD417",
    name="transpose-1d",
    title={
        "en": "Transpose of a 1-D tensor",
        "zh": "对一维张量做转置",
    },
    messages={
        "": {
            "en": "`{expr}` does nothing: `{x}` is 1-D (made by `{maker}`) and `.T` of a 1-D "
            "tensor is the same tensor (deprecated for tensors that are not 2-D); for a row use "
            "`{x}.unsqueeze(0)` or `{x}.reshape(1, -1)`, for a column `{x}.view(-1, 1)`",
            "zh": "`{expr}` 什么也不做：`{x}` 是一维张量（由 `{maker}` 创建），一维张量的 `.T` 就是它"
            "本身（对非二维张量使用 `.T` 已被弃用）；要得到行向量请用 `{x}.unsqueeze(0)` 或 "
            "`{x}.reshape(1, -1)`，列向量请用 `{x}.view(-1, 1)`",
        },
        "method": {
            "en": "`{expr}` does nothing: `{x}` is 1-D (made by `{maker}`) and `.t()` returns a "
            "1-D tensor as it is; for a row use `{x}.unsqueeze(0)` or `{x}.reshape(1, -1)`, "
            "for a column `{x}.view(-1, 1)`",
            "zh": "`{expr}` 什么也不做：`{x}` 是一维张量（由 `{maker}` 创建），`.t()` 会原样返回一维"
            "张量；要得到行向量请用 `{x}.unsqueeze(0)` 或 `{x}.reshape(1, -1)`，列向量请用 "
            "`{x}.view(-1, 1)`",
        },
    },
    fix_hint={
        "en": "A 1-D tensor has no second dimension to swap: make the row or column explicitly, "
        "`x.unsqueeze(0)` / `x.reshape(1, -1)` (1 x n) or `x.view(-1, 1)` (n x 1).",
        "zh": "一维张量没有第二个维度可以交换：请显式构造行或列，`x.unsqueeze(0)` / "
        "`x.reshape(1, -1)`（1 x n）或 `x.view(-1, 1)`（n x 1）。",
    },
    docs={
        "en": """
## What it catches
`x.T` or `x.t()` where `x` is certainly 1-D: made by `torch.arange`, `torch.linspace`,
`torch.logspace`, `torch.tensor` / `torch.as_tensor` of a flat list of numbers, or
`torch.zeros` / `ones` / `empty` / `rand` / `randn` with one integer size, directly or through
a name that is assigned only such values in its scope and never changed in place
(`unsqueeze_`, `resize_`, `x.data = ...`).

## Why is this bad?
Transposing swaps two dimensions; a 1-D tensor has one, so `x.T` and `x.t()` return it
unchanged. Code that expects a column (`n x 1`) or a row (`1 x n`) then broadcasts or multiplies
differently than intended, or fails later with a shape error. `.T` on a tensor that is not 2-D
is deprecated and will become an error.

## Symptoms
`UserWarning: The use of `x.T` on tensors of dimension other than 2 to reverse their shape is
deprecated and it will throw an error in a future release`; shapes that stay `[n]` where
`[n, 1]` or `[1, n]` was expected.

## Known problems
Only values whose dimension is certain are followed: a size held in a variable
(`torch.zeros(n)`), a slice (`x[:, 0]`) or a function's result are not reported.
""",
        "zh": """
## What it catches
对确定是一维的 `x` 使用 `x.T` 或 `x.t()`：`x` 由 `torch.arange`、`torch.linspace`、
`torch.logspace`、对数字平铺列表调用的 `torch.tensor` / `torch.as_tensor`，或只带一个整数大小
的 `torch.zeros` / `ones` / `empty` / `rand` / `randn` 创建，可以直接使用，也可以经过一个在
其作用域内只被赋予这类值、且从未被原地修改（`unsqueeze_`、`resize_`、`x.data = ...`）的名字。

## Why is this bad?
转置交换两个维度；一维张量只有一个维度，所以 `x.T` 和 `x.t()` 会原样返回它。期望得到列
（`n x 1`）或行（`1 x n`）的代码随后会以意料之外的方式广播或相乘，或在之后报形状错误。
对非二维张量使用 `.T` 已被弃用，将来会变成错误。

## Symptoms
`UserWarning: The use of `x.T` on tensors of dimension other than 2 to reverse their shape is
deprecated and it will throw an error in a future release`；本应是 `[n, 1]` 或 `[1, n]` 的
形状仍然是 `[n]`。

## Known problems
只追踪维度确定的值：大小保存在变量中（`torch.zeros(n)`）、切片（`x[:, 0]`）或函数的返回值
不会被报告。
""",
    },
    example="""
import torch

weights = torch.linspace(0, 1, steps=5)
column = weights.T
print(column.shape)
""",
    use_instead="""
import torch

weights = torch.linspace(0, 1, steps=5)
column = weights.view(-1, 1)
print(column.shape)
""",
)

# Always 1-D.
_RANGES = frozenset({"torch.arange", "torch.linspace", "torch.logspace"})
# 1-D from a flat list of numbers.
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
# 1-D with one integer size.
_FILLED = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn"})
_MAKER_NAMES = frozenset(q.rpartition(".")[2] for q in (*_RANGES, *_FROM_DATA, *_FILLED))
# Methods that keep a tensor's shape.
_SAME_SHAPE = frozenset(
    {"float", "double", "half", "long", "int", "bool", "cpu", "cuda", "to", "clone", "detach"}
)
# In-place methods that change a tensor's shape.
_RESHAPING = frozenset(
    {"unsqueeze_", "squeeze_", "resize_", "resize_as_", "set_", "as_strided_", "t_",
     "transpose_", "swapdims_", "swapaxes_"}
)  # fmt: skip
_SIZE_METHODS = frozenset({"size", "numel"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@PITFALL.static(ast.Attribute, names={"T"})
def check_attribute(node: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    if isinstance(node.ctx, ast.Load):
        yield from _report(node, node.value, "", ctx)


@PITFALL.static(ast.Call, names={"t"})
def check_method(node: ast.Call, ctx: Context) -> Iterator[Finding]:
    if isinstance(node.func, ast.Attribute) and not node.args and not node.keywords:
        yield from _report(node, node.func.value, "method", ctx)


def _report(node: ast.expr, value: ast.expr, variant: str, ctx: Context) -> Iterator[Finding]:
    maker = _one_d_maker(value, ctx)
    if isinstance(value, ast.Name) and maker is None:
        maker = _one_d_name(value.id, ctx)
    if maker is not None:
        yield ctx.finding(
            PITFALL,
            node,
            variant,
            expr=shorten(ctx.text(node)),
            x=shorten(ctx.text(value), 40),
            maker=maker,
        )


def _one_d_name(name: str, ctx: Context) -> str | None:
    """The maker of every value `name` is assigned in its scope, when all are 1-D ones and the
    scope is the one being read (not an enclosing function's or the module's, from inside a
    function) and nothing changes its shape in place."""
    if name not in names_assigned_calls_of(ctx, _MAKER_NAMES):  # most names: nothing read
        return None
    scope = scope_of(name, ctx)
    inner = next(
        (a for a in reversed(ctx.ancestors) if isinstance(a, _SCOPES)),
        ctx.tree,
    )
    found = bindings(ctx, scope, name) if scope is inner else None
    if not found:
        return None
    makers = set()
    for binding in found:
        maker = None if binding.augmented else _one_d_maker(binding.value, ctx)
        if maker is None:
            return None
        makers.add(maker)
    if len(makers) != 1 or _changed_in_place(name, scope, ctx):
        return None
    return makers.pop()


def _changed_in_place(name: str, scope: ast.AST, ctx: Context) -> bool:
    """`name.unsqueeze_(0)`, `name.data = ...`, `name.shape` set..."""
    found = index_of(ctx, scope)
    for use in found.names_in(scope, name):
        parent = found.parents.get(use)
        if isinstance(parent, ast.Attribute) and (
            not isinstance(parent.ctx, ast.Load) or parent.attr in _RESHAPING
        ):
            return True
    return False


def _one_d_maker(value: ast.expr | None, ctx: Context) -> str | None:
    """The qualified name of the call that certainly made `value` 1-D, or None."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _SAME_SHAPE
    ):
        value = value.func.value
    if not isinstance(value, ast.Call) or any(isinstance(arg, ast.Starred) for arg in value.args):
        return None
    qualname = ctx.call_qualname(value)
    if qualname in _RANGES:
        certain = True
    elif qualname in _FROM_DATA:
        certain = len(value.args) >= 1 and _flat_numbers(value.args[0])
    elif qualname in _FILLED:
        certain = (
            len(value.args) == 1
            and all(k.arg != "size" for k in value.keywords)
            and _an_int(value.args[0])
        )
    else:
        certain = False
    return f"{qualname}(...)" if certain else None


def _flat_numbers(data: ast.expr) -> bool:
    return isinstance(data, (ast.List, ast.Tuple)) and all(_number(e) for e in data.elts)


def _number(expr: ast.expr) -> bool:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        expr = expr.operand
    return isinstance(expr, ast.Constant) and type(expr.value) in (int, float, bool, complex)


def _an_int(expr: ast.expr) -> bool:
    """An expression that is certainly an int: a literal, `len(...)`, `x.numel()`,
    `x.size(0)`, `x.shape[0]`, `int(...)` and arithmetic on them."""
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.BinOp):
        return isinstance(expr.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)) and (
            _an_int(expr.left) and _an_int(expr.right)
        )
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in ("len", "int") and len(expr.args) == 1
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _SIZE_METHODS
            and len(expr.args) == (func.attr == "size")
        )
    return (
        isinstance(expr, ast.Subscript)
        and isinstance(expr.value, ast.Attribute)
        and expr.value.attr == "shape"
        and isinstance(expr.slice, ast.Constant)
        and type(expr.slice.value) is int
    )
