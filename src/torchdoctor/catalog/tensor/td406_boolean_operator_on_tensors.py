"""TD406 boolean-operator-on-tensors: `and`/`or`/`not` on an element-wise mask."""

from __future__ import annotations

import ast
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Clue,
    Context,
    ErrorBlock,
    ErrorReport,
    Finding,
    Kind,
    Pitfall,
    bindings,
    lazy_compile,
    per_file,
    scope_of,
    names_assigned_calls_of,
    shorten,
)
from torchdoctor.catalog.tensor._truth_value import asks_a_tensors_truth_value, truth_value_use

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD406",
    name="boolean-operator-on-tensors",
    title={
        "en": "`and` / `or` / `not` on an element-wise mask",
        "zh": "对逐元素掩码使用 `and` / `or` / `not`",
    },
    messages={
        "": {
            "en": "`{operator}` asks for the truth value of `{mask}`, an element-wise mask with more "
            "than one element, and raises; use `{instead}` to combine masks element by element",
            "zh": "`{operator}` 需要 `{mask}` 的真值，而它是包含多个元素的逐元素掩码，运行时会报错；"
            "要逐元素组合掩码请使用 `{instead}`",
        },
    },
    docs={
        "en": """
## What it catches
`and`, `or` or `not` applied to an element-wise comparison of a slice of a tensor or numpy
array, such as `x[:, 0] > 0 and x[:, 1] > 0` or `not (scores[1:] == 0)`, or of a tensor or
array known to hold several elements: made with constant sizes
(`torch.rand(100)`, `np.zeros((3, 3))`, `torch.arange(10)`) or from a literal
list of several values (`torch.tensor([0, 1, 1])`), directly or through a name only ever
assigned such a value in its function, possibly with arithmetic on it (`scores - 0.5 > 0`).
A slice (`x[:, 0]`, `x[1:]`, `x[..., 2:]`) is known to hold a whole row, column or range, so
the comparison is a mask with many elements.

## Why is this bad?
`and`, `or` and `not` are Python's boolean operators: they call `bool()` on their operand.
A mask with several elements has no single truth value, so PyTorch and numpy raise instead of
guessing. The element-wise operators are `&`, `|` and `~` (or `torch.logical_and`,
`torch.logical_or`, `torch.logical_not`, and the `np.logical_*` functions). Mind the
precedence: `&` binds tighter than `<`, so each comparison needs its own parentheses.

## Symptoms
PyTorch: `RuntimeError: Boolean value of Tensor with more than one value is ambiguous`.
numpy: `ValueError: The truth value of an array with more than one element is ambiguous. Use
a.any() or a.all()`.

## Known problems
Only comparisons of slices and of values whose sizes are written as constants are reported,
because a tensor of unknown size may hold a single element (a loss, a `.sum()`), and then
`and` works; `torch.rand(n)` with a variable `n`, and a name also assigned anything else, are
not followed. `if (x[:, 0] > 0).any() and ...` is fine and not
reported. A slice that happens to select one element (`x[0:1] > 0` on purpose) is reported
although it works.
""",
        "zh": """
## What it catches
对张量或 numpy 数组切片的逐元素比较使用 `and`、`or` 或 `not`，例如 `x[:, 0] > 0 and x[:, 1] > 0`
或 `not (scores[1:] == 0)`，以及对已知包含多个元素的张量或数组的比较：用常量尺寸创建的
（`torch.rand(100)`、`np.zeros((3, 3))`、`torch.arange(10)`）或由含多个值的列表字面量创建的
（`torch.tensor([0, 1, 1])`），可以直接写出，也可以经过一个在其函数中只被赋予这种值的名字，还可以再做
算术运算（`scores - 0.5 > 0`）。切片（`x[:, 0]`、`x[1:]`、`x[..., 2:]`）取出的是一整行、一整列或一段范围，
所以比较的结果是包含多个元素的掩码。

## Why is this bad?
`and`、`or`、`not` 是 Python 的布尔运算符，会对操作数调用 `bool()`。包含多个元素的掩码没有唯一的真值，
PyTorch 和 numpy 不会去猜，而是直接报错。逐元素的运算符是 `&`、`|`、`~`（或者 `torch.logical_and`、
`torch.logical_or`、`torch.logical_not` 以及 numpy 的 `np.logical_*` 函数）。注意优先级：`&` 比 `<`
结合得更紧，每个比较都要单独加括号。

## Symptoms
PyTorch：`RuntimeError: Boolean value of Tensor with more than one value is ambiguous`。
numpy：`ValueError: The truth value of an array with more than one element is ambiguous. Use
a.any() or a.all()`。

## Known problems
只报告对切片以及尺寸写成常量的值的比较，因为尺寸未知的张量有可能只有一个元素（损失值、`.sum()` 的结果），
这时 `and` 是可以用的；尺寸是变量的 `torch.rand(n)`、还被赋予过其他值的名字都不追踪。
`if (x[:, 0] > 0).any() and ...` 没有问题，不会报告。恰好只选出一个元素的切片（有意写成 `x[0:1] > 0`）
虽然能运行，也会被报告。
""",
    },
    example="""
import torch

boxes = torch.rand(100, 4)
valid = boxes[:, 2] > 0.1 and boxes[:, 3] > 0.1
""",
    use_instead="""
import torch

boxes = torch.rand(100, 4)
valid = (boxes[:, 2] > 0.1) & (boxes[:, 3] > 0.1)
""",
)

ELEMENTWISE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
INSTEAD = {ast.And: "&", ast.Or: "|"}
# Statements whose test takes the truth value of the whole expression, last operand included.
TESTING = (ast.If, ast.While, ast.Assert)


@PITFALL.static(ast.BoolOp)
def check_and_or(node: ast.BoolOp, ctx: Context) -> Iterator[Finding]:
    # `a and b` returns `b` untouched: only earlier operands are truth-tested, unless the whole
    # expression is itself a statement's test.
    statement = ctx.parent()
    tested = isinstance(statement, TESTING) and statement.test is node
    operands = node.values if tested else node.values[:-1]
    mask = next((operand for operand in operands if _is_slice_mask(operand, ctx)), None)
    if mask is None:
        return
    operator = "and" if isinstance(node.op, ast.And) else "or"
    yield ctx.finding(
        PITFALL,
        node,
        operator=operator,
        mask=_short(ctx.text(mask)),
        instead=INSTEAD[type(node.op)],
    )


@PITFALL.static(ast.UnaryOp)
def check_not(node: ast.UnaryOp, ctx: Context) -> Iterator[Finding]:
    if not isinstance(node.op, ast.Not) or not _is_slice_mask(node.operand, ctx):
        return
    yield ctx.finding(
        PITFALL, node, operator="not", mask=_short(ctx.text(node.operand)), instead="~"
    )


def _is_slice_mask(expr: ast.AST, ctx: Context) -> bool:
    """`x[:, 0] > 0` on a tensor or array: an element-wise result with many elements."""
    if (
        not isinstance(expr, ast.Compare)
        or len(expr.ops) != 1
        or not isinstance(expr.ops[0], ELEMENTWISE)
    ):
        return False
    return any(_has_many_elements(side, ctx) for side in (expr.left, expr.comparators[0]))


def _has_many_elements(expr: ast.AST, ctx: Context) -> bool:
    """A tensor or array certainly holding several elements: a slice, a factory call with
    constant sizes (`torch.rand(100, 4)`, `np.zeros((3, 3))`, `torch.tensor([1, 2])`), a name
    only ever assigned one of those in its scope, or arithmetic on one (which broadcasts)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, _ARITHMETIC):
        return _has_many_elements(expr.left, ctx) or _has_many_elements(expr.right, ctx)
    if isinstance(expr, ast.Name):
        if expr.id not in names_assigned_calls_of(ctx, _FACTORY_NAMES):  # most names
            return False
        return _named_many(ctx, scope_of(expr.id, ctx), expr.id)
    if isinstance(expr, ast.Call):
        return _made_with_many(expr, ctx)
    return _is_array_slice(expr, ctx)


@per_file
def _named_many(ctx: Context, scope: ast.AST, name: str) -> bool:
    """Every binding of `name` in `scope` assigns a factory call with several elements."""
    found = bindings(ctx, scope, name)
    return bool(found) and all(
        b.value is not None and not b.augmented and _made_with_many(b.value, ctx) for b in found
    )


def _made_with_many(call: ast.AST, ctx: Context) -> bool:
    if not isinstance(call, ast.Call) or not call.args:
        return False
    qualname = ctx.qualname(call.func) or ""
    if qualname in _FROM_DATA:
        data = call.args[0]
        return isinstance(data, (ast.List, ast.Tuple)) and len(data.elts) > 1
    if qualname in _SIZED:
        sizes = call.args[0] if _SIZED[qualname] == "first" else call.args
        if qualname.startswith("torch.") and len(call.args) == 1:
            sizes = call.args[0]  # `torch.zeros(3)` or `torch.zeros((3, 4))`
        return _count(sizes) > 1
    if qualname in _RANGES:
        bounds = [_constant_int(arg) for arg in call.args[:2]]
        if None in bounds or len(call.args) > 2:
            return False
        return (bounds[0] if len(bounds) == 1 else bounds[1] - bounds[0]) > 1
    return False


def _count(sizes) -> int:
    """The number of elements of constant sizes (an int, a tuple or list of ints, or a list of
    arguments); 0 when one is not a constant."""
    parts = sizes.elts if isinstance(sizes, (ast.Tuple, ast.List)) else sizes
    if not isinstance(parts, list):
        parts = [parts]
    total = 1
    for part in parts:
        value = _constant_int(part)
        if value is None:
            return 0
        total *= value
    return total


def _constant_int(expr: ast.AST) -> int | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    return None


_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# Factories whose sizes are their arguments ("args") or their first argument ("first").
_SIZED = {
    **{f"torch.{name}": "args" for name in ("rand", "randn", "zeros", "ones", "empty")},
    **{f"numpy.{name}": "first" for name in ("zeros", "ones", "empty")},
    **{f"numpy.random.{name}": "args" for name in ("rand", "randn")},
}
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "numpy.array", "numpy.asarray"})
_RANGES = frozenset({"torch.arange", "numpy.arange"})
_FACTORY_NAMES = frozenset(q.rpartition(".")[2] for q in (*_SIZED, *_FROM_DATA, *_RANGES))


def _is_array_slice(expr: ast.AST, ctx: Context) -> bool:
    if not isinstance(expr, ast.Subscript):
        return False
    index = expr.slice
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    # `x[..., 2]` may be a single element (on a 1-D tensor); a slice keeps a whole range.
    if not any(isinstance(part, ast.Slice) for part in parts):
        return False
    return ctx.kind_of(expr.value) in (Kind.TENSOR, Kind.NDARRAY)


# The same error comes from a chained comparison (TD405) and from `if mask:`: the failing line
# tells them apart when the traceback shows it.
_GENERIC = {
    "en": "Python asked a tensor of several elements for one truth value: `and` / `or` / "
    "`not` on masks, `if mask:`, or a chained comparison such as `0 < x < 1`.",
    "zh": "Python 要求一个包含多个元素的张量给出单个真值：对掩码使用 `and` / `or` / `not`、"
    "`if mask:`，或 `0 < x < 1` 这样的链式比较。",
}
_BOOLEAN = {
    "en": "`and` / `or` / `not` asked a tensor of several elements for one truth value: "
    "they do not combine masks element by element.",
    "zh": "`and` / `or` / `not` 要求一个包含多个元素的张量给出单个真值：它们不会逐元素地组合掩码。",
}
_FIX = {
    "en": "Combine masks with `&`, `|`, `~` (with parentheses around each comparison); reduce "
    "with `.any()` / `.all()` where one answer is meant.",
    "zh": "用 `&`、`|`、`~` 组合掩码（每个比较加上括号）；确实需要单个结果时用 `.any()` / "
    "`.all()` 归约。",
}


# Triton's compiler warns where a `@triton.jit` kernel combines block tensors with `and`/`or`,
# the same mistake in a kernel. torch.compile's own helpers (`torch/_inductor/...`) triggered
# it in torch 2.8: nothing for the user to fix there.
_TRITON_WARNING = "Logical operators 'and' and 'or' are deprecated for non-scalar tensors"
_INDUCTOR = lazy_compile(r"_inductor[/\\.]")
_TRITON = {
    "en": "A Triton kernel combines tensors of several elements with Python `and` / `or`, "
    "which do not work element by element on blocks.",
    "zh": "Triton kernel 用 Python 的 `and` / `or` 组合包含多个元素的张量，它们不会逐元素地作用于块。",
}


@PITFALL.error_check(types=("UserWarning",), words=("non-scalar tensors",))
def triton_boolean_operator(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    if _TRITON_WARNING not in block.message or report.search(_INDUCTOR):
        return None
    return Clue(0.8, _TRITON, _FIX)


@PITFALL.error_check(types=("RuntimeError",), words=("is ambiguous",))
def ambiguous_truth_value(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    if not asks_a_tensors_truth_value(block.message):
        return None
    use = truth_value_use(block, report)
    if use == "chained":
        return None  # TD405's
    if use == "loss flags":
        return None  # a loss class built from tensors: no mask is combined anywhere
    if use == "boolean":
        return Clue(0.9, _BOOLEAN, _FIX)
    return Clue(0.6, _GENERIC, _FIX)
