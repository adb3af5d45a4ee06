"""TD404 numpy-negative-stride: a reversed or flipped numpy view handed to torch without a copy."""

from __future__ import annotations

import ast
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Kind,
    Pitfall,
    assigned_before,
    per_file,
    shorten,
    statements,
)

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD404",
    name="numpy-negative-stride",
    title={
        "en": "Reversed or flipped numpy array converted to a tensor without a copy",
        "zh": "翻转后的 numpy 数组未经拷贝直接转换为张量",
    },
    messages={
        "": {
            "en": "`{source}` is a numpy view with a negative stride: `{convert}` rejects it at run "
            "time; add `.copy()` (or use `np.ascontiguousarray`) first",
            "zh": "`{source}` 是步长为负的 numpy 视图，`{convert}` 运行时会拒绝它；"
            "请先加上 `.copy()`（或使用 `np.ascontiguousarray`）",
        },
    },
    fix_title={"en": "Add `.copy()` to the array", "zh": "给数组加上 `.copy()`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Copy the array before converting it: `torch.from_numpy(arr.copy())` "
        "(or `np.ascontiguousarray(arr)`).",
        "zh": "转换之前先拷贝数组：`torch.from_numpy(arr.copy())`（或 "
        "`np.ascontiguousarray(arr)`）。",
    },
    docs={
        "en": """
## What it catches
`torch.from_numpy`, `torch.as_tensor`, `torch.asarray` or `torch.tensor` applied to a numpy
array made by a negative-step slice (`img[..., ::-1]`, `x[::-1]`), `np.flip`, `np.fliplr`,
`np.flipud` or `np.rot90`, directly or through a name assigned just before in the same block.
A `.transpose(...)`, `.swapaxes(...)` or `.T` in between keeps the negative stride and is seen
through.

## Why is this bad?
Reversing a numpy array does not move data: numpy returns a view that walks memory backwards,
with a negative stride. PyTorch tensors cannot have negative strides, so every conversion of
such a view fails, even `torch.tensor`, which copies anyway. The classic case is converting an
OpenCV image from BGR to RGB with `img[..., ::-1]` right before `torch.from_numpy`, or a
flip used as data augmentation.

## Symptoms
`ValueError: At least one stride in the given numpy array is negative, and tensors with
negative strides are not currently supported. (You can probably work around this by making a
copy of your array with array.copy().)`
Older PyTorch versions: `ValueError: some of the strides of a given numpy array are negative.
This is currently not supported, but will be added in future releases.`

## Fix safety
The fix appends `.copy()` to the array passed to torch. It is safe: the original call always
raises, and the copy holds the same values with positive strides.

## Known problems
Only views made in the same expression or assigned just before in the same block are seen;
a flipped array returned by a function or stored in a container is not tracked. A plain
`x[::-1]` passed to `torch.tensor` or `torch.as_tensor` is reported only when `x` is known to
be a numpy array, since reversing a list is harmless.
""",
        "zh": """
## What it catches
对负步长切片（`img[..., ::-1]`、`x[::-1]`）、`np.flip`、`np.fliplr`、`np.flipud` 或 `np.rot90`
得到的 numpy 数组调用 `torch.from_numpy`、`torch.as_tensor`、`torch.asarray` 或 `torch.tensor`：
可以是直接传入，也可以是同一代码块中刚刚赋值的变量。中间的 `.transpose(...)`、`.swapaxes(...)`
或 `.T` 会保留负步长，检查时会穿过它们。

## Why is this bad?
翻转 numpy 数组并不会搬动数据：numpy 返回的是一个倒着遍历内存的视图，它的步长（stride）是负数。
PyTorch 张量不支持负步长，所以这种视图的任何转换都会失败，连本来就会拷贝数据的 `torch.tensor`
也不例外。最常见的场景是在 `torch.from_numpy` 之前用 `img[..., ::-1]` 把 OpenCV 图像从 BGR 转成 RGB，
或者在数据增强里做翻转。

## Symptoms
`ValueError: At least one stride in the given numpy array is negative, and tensors with
negative strides are not currently supported. (You can probably work around this by making a
copy of your array with array.copy().)`
旧版本 PyTorch 的报错是：`ValueError: some of the strides of a given numpy array are negative.
This is currently not supported, but will be added in future releases.`

## Fix safety
修复在传给 torch 的数组后面加上 `.copy()`。这是安全的：原来的调用必然报错，而拷贝得到的数组数值
完全相同，步长为正。

## Known problems
只能识别在同一表达式中、或在同一代码块中刚刚赋值得到的视图；函数返回的或存放在容器里的翻转数组
无法追踪。传给 `torch.tensor` 或 `torch.as_tensor` 的普通 `x[::-1]` 只有在确定 `x` 是 numpy 数组时
才报告，因为翻转一个列表是无害的。
""",
    },
    example="""
import numpy as np
import torch

image = np.random.rand(32, 32, 3)
tensor = torch.from_numpy(image[..., ::-1])
""",
    use_instead="""
import numpy as np
import torch

image = np.random.rand(32, 32, 3)
tensor = torch.from_numpy(image[..., ::-1].copy())
""",
)

_NEGATIVE_STRIDE_CAUSE = {
    "en": "A numpy array with a negative stride (a view made by `[::-1]`, `np.flip`, "
    "`np.fliplr/flipud` or `np.rot90`, e.g. a BGR->RGB `img[..., ::-1]`) was converted to "
    "a tensor; tensors cannot have negative strides.",
    "zh": "把步长为负的 numpy 数组（由 `[::-1]`、`np.flip`、`np.fliplr/flipud` 或 `np.rot90` 得到的视图，"
    "例如 BGR->RGB 的 `img[..., ::-1]`）转换成了张量；张量不支持负步长。",
}
# The message's first words alone: titles cut it short, and text read off a screenshot misspells
# the rest ("numpy aray is mepative").
PITFALL.error(
    r"At least one stride in the given numpy\b",
    types=(),
    confidence=0.95,
    cause=_NEGATIVE_STRIDE_CAUSE,
)
# PyTorch before 1.1.
PITFALL.error(
    r"some of the strides of a given numpy array are negative",
    types=(),
    confidence=0.95,
    cause=_NEGATIVE_STRIDE_CAUSE,
)

CONVERSIONS = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray", "torch.tensor"})
FLIPS = frozenset({"numpy.flip", "numpy.fliplr", "numpy.flipud", "numpy.rot90"})
# numpy methods and attributes that return a view keeping the (negative) strides.
STRIDE_KEEPING_METHODS = frozenset({"transpose", "swapaxes"})


@PITFALL.static(ast.Call, names={"from_numpy", "as_tensor", "asarray", "tensor"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return
    convert = ctx.qualname(call.func)
    if convert not in CONVERSIONS:
        return
    array = call.args[0]
    source = _assigned_just_before(array.id, ctx) if isinstance(array, ast.Name) else array
    # from_numpy only takes arrays; the others also take lists, where `[::-1]` is harmless.
    if source is None or not _has_negative_stride(source, ctx, convert == "torch.from_numpy"):
        return
    _, end = ctx.span(array)
    fix = ctx.fix(PITFALL, "safe", ctx.edit(end, end, ".copy()"))
    yield ctx.finding(PITFALL, array, fix=fix, source=_short(ctx.text(source)), convert=convert)


def _has_negative_stride(expr: ast.AST, ctx: Context, surely_array: bool) -> bool:
    expr = _strip_stride_keeping(expr)
    if isinstance(expr, ast.Subscript):
        return _is_reversing_index(expr, ctx, surely_array)
    if not isinstance(expr, ast.Call):
        return False
    qualname = ctx.qualname(expr.func)
    if qualname not in FLIPS:
        return False
    return qualname != "numpy.rot90" or _rot90_flips(expr)


def _strip_stride_keeping(expr: ast.AST) -> ast.AST:
    """`x[::-1].transpose(2, 0, 1)` -> `x[::-1]`: transposing keeps every stride's sign."""
    while True:  # classes compared by `type`: asked of every assignment of the file
        if type(expr) is ast.Attribute and expr.attr == "T":
            expr = expr.value
        elif (
            type(expr) is ast.Call
            and type(expr.func) is ast.Attribute
            and expr.func.attr in STRIDE_KEEPING_METHODS
            and type(expr.func.value) is ast.Subscript
        ):
            expr = expr.func.value
        else:
            return expr


def _is_reversing_index(subscript: ast.Subscript, ctx: Context, surely_array: bool) -> bool:
    index = subscript.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    if not any(isinstance(part, ast.Slice) and _is_negative_literal(part.step) for part in parts):
        return False
    # Lists reject tuple indices and tensors reject negative steps: a tuple index means numpy.
    return (
        surely_array or isinstance(index, ast.Tuple) or ctx.kind_of(subscript.value) is Kind.NDARRAY
    )


def _is_negative_literal(expr: ast.AST | None) -> bool:
    return (
        isinstance(expr, ast.UnaryOp)
        and isinstance(expr.op, ast.USub)
        and isinstance(expr.operand, ast.Constant)
        and type(expr.operand.value) is int
        and expr.operand.value > 0
    )


def _rot90_flips(call: ast.Call) -> bool:
    """`np.rot90(x)` reverses an axis unless `k` is a multiple of 4 (then it is a plain view)."""
    turns = (
        call.args[1]
        if len(call.args) > 1
        else next((keyword.value for keyword in call.keywords if keyword.arg == "k"), None)
    )
    if turns is None:
        return True
    value = _int_value(turns)
    return value is not None and value % 4 != 0


@per_file
def _maybe_reversed(ctx: Context) -> frozenset[str]:
    """The names some plain `name = value` in the file assigns a value that may have a negative
    stride (`_has_negative_stride` decides): a reversing slice, a flip, or a call of a bare name
    (an imported alias may name `np.flip`). From the statements alone."""
    names: set[str] = set()
    for statement in statements(ctx, ast.Assign):
        target = statement.targets[0]
        if len(statement.targets) != 1 or type(target) is not ast.Name:
            continue
        value = _strip_stride_keeping(statement.value)
        if type(value) is ast.Subscript:
            index = value.slice
            parts = index.elts if type(index) is ast.Tuple else [index]
            if any(type(p) is ast.Slice and _is_negative_literal(p.step) for p in parts):
                names.add(target.id)
        elif type(value) is ast.Call:
            func = value.func
            if type(func) is ast.Name or (type(func) is ast.Attribute and func.attr in _FLIPS):
                names.add(target.id)
    return frozenset(names)


_FLIPS = frozenset(name.rpartition(".")[2] for name in FLIPS)


def _int_value(expr: ast.AST) -> int | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        value = _int_value(expr.operand)
        return None if value is None else -value
    return None


def _assigned_just_before(name: str, ctx: Context) -> ast.AST | None:
    if name not in _maybe_reversed(ctx):  # most arrays: the block's names are not read
        return None
    found = ctx.statement_block()
    return assigned_before(name, *found, ctx)[0] if found is not None else None
