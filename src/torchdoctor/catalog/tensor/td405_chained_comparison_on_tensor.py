"""TD405 chained-comparison-on-tensor: `a < t < b` on a tensor or array asks for its truth value."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Clue,
    Context,
    ErrorBlock,
    ErrorReport,
    Finding,
    Kind,
    Pitfall,
    shorten,
)
from torchdoctor.catalog.tensor._truth_value import asks_a_tensors_truth_value, truth_value_use

PITFALL = Pitfall(
    code="TD405",
    name="chained-comparison-on-tensor",
    title={"en": "Chained comparison on a tensor or array", "zh": "对张量或数组使用链式比较"},
    messages={
        "": {
            "en": "`{text}` is a chained comparison: Python evaluates it as `(...) and (...)`, "
            "which asks for the truth value of an element-wise result and raises; "
            "write `{fixed}`",
            "zh": "`{text}` 是链式比较：Python 会把它当作 `(...) and (...)` 求值，需要逐元素比较结果的"
            "真值，因而报错；请写成 `{fixed}`",
        },
    },
    fix_title={"en": "Combine the two comparisons with `&`", "zh": "用 `&` 连接两个比较"},
    fix_applicability="unsafe",
    # Off by default: wrong on all 9 findings in 38 real corpora (issue 13's measurement; the
    # operands were single-element tensors, which compare fine) until values are known.
    default=False,
    docs={
        "en": """
## What it catches
A chained comparison such as `low < t < high` or `a == t == b` where an operand of a comparison
other than the last one is known to be a tensor or a numpy array (made by a torch or numpy
function, or indexed from one).

## Why is this bad?
Python turns `a < t < b` into `(a < t) and (t < b)`. For a tensor or an array, `a < t` is an
element-wise mask, and `and` needs its truth value, which is ambiguous as soon as it has more
than one element. The intent is almost always a range mask: both comparisons combined element
by element with `&`.

## Symptoms
PyTorch: `RuntimeError: Boolean value of Tensor with more than one value is ambiguous`.
numpy: `ValueError: The truth value of an array with more than one element is ambiguous. Use
a.any() or a.all()`.

## Fix safety
The fix rewrites `a < t < b` as `(a < t) & (t < b)`. It is unsafe because the middle operand is
now written, and evaluated, twice: an expression with side effects (a random draw, a call that
counts) or an expensive one behaves differently. Only chains of two comparisons are fixed.

## Known problems
A tensor or an array with a single element has a truth value, so a chain on it works; the rule
cannot see sizes and reports it too. Operands whose type is unknown (function arguments, most
attributes) are not checked.
""",
        "zh": """
## What it catches
链式比较，例如 `low < t < high` 或 `a == t == b`，其中除最后一个比较之外，某个比较的操作数确定是张量
或 numpy 数组（由 torch 或 numpy 函数创建，或者是对它们的索引）。

## Why is this bad?
Python 会把 `a < t < b` 变成 `(a < t) and (t < b)`。对张量或数组来说，`a < t` 是逐元素比较得到的掩码，
而 `and` 需要它的真值；只要元素多于一个，这个真值就是有歧义的。代码的本意几乎总是取一个区间掩码：
用 `&` 把两个比较逐元素地组合起来。

## Symptoms
PyTorch：`RuntimeError: Boolean value of Tensor with more than one value is ambiguous`。
numpy：`ValueError: The truth value of an array with more than one element is ambiguous. Use
a.any() or a.all()`。

## Fix safety
修复把 `a < t < b` 改写为 `(a < t) & (t < b)`。这是不安全的：中间的操作数会被写两次、也会被求值两次，
如果它有副作用（随机采样、带计数的调用）或者计算代价很高，行为就会改变。只修复由两个比较组成的链。

## Known problems
只有一个元素的张量或数组有确定的真值，对它做链式比较是可以运行的；本规则看不到大小，也会报告这种情况。
类型未知的操作数（函数参数、大多数属性）不检查。
""",
    },
    example="""
import torch

x = torch.randn(100, 2)
inside = x[0 < x[:, 1] < 1]
""",
    use_instead="""
import torch

x = torch.randn(100, 2)
inside = x[(0 < x[:, 1]) & (x[:, 1] < 1)]
""",
)

# Comparisons that return an element-wise result for tensors and arrays (`is`/`in` do not).
ELEMENTWISE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
SYMBOLS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
# Operand nodes that bind at least as tightly as a comparison: no parentheses needed.
TIGHT = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant, ast.BinOp)


@PITFALL.static(ast.Compare)
def check(compare: ast.Compare, ctx: Context) -> Iterator[Finding]:
    if len(compare.ops) < 2:
        return
    operands = [compare.left, *compare.comparators]
    # Every comparison but the last one goes through `and`, which needs its truth value.
    if not any(
        isinstance(op, ELEMENTWISE)
        and (_is_array(operands[i], ctx) or _is_array(operands[i + 1], ctx))
        for i, op in enumerate(compare.ops[:-1])
    ):
        return
    fixed = _split(compare, ctx)
    fix = ctx.fix(PITFALL, "unsafe", ctx.replace(compare, fixed)) if fixed else None
    yield ctx.finding(
        PITFALL,
        compare,
        fix=fix,
        text=shorten(ctx.text(compare)),
        fixed=shorten(fixed or "(a < t) & (t < b)"),
    )


def _is_array(expr: ast.AST, ctx: Context) -> bool:
    return ctx.kind_of(expr) in (Kind.TENSOR, Kind.NDARRAY)


def _split(compare: ast.Compare, ctx: Context) -> str | None:
    """`a < t < b` -> `(a < t) & (t < b)`; None for longer chains."""
    if len(compare.ops) != 2 or not all(isinstance(op, ELEMENTWISE) for op in compare.ops):
        return None
    left, middle, right = (_operand(e, ctx) for e in (compare.left, *compare.comparators))
    first, second = (SYMBOLS[type(op)] for op in compare.ops)
    return f"({left} {first} {middle}) & ({middle} {second} {right})"


def _operand(expr: ast.AST, ctx: Context) -> str:
    text = ctx.text(expr)
    return text if isinstance(expr, TIGHT) or _is_plain_unary(expr) else f"({text})"


def _is_plain_unary(expr: ast.AST) -> bool:
    return isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not)


_CHAINED = {
    "en": "A chained comparison such as `0 < x < 1` on a tensor asks for the truth value of "
    "`0 < x`, a mask of several elements.",
    "zh": "在张量上使用 `0 < x < 1` 这样的链式比较，需要 `0 < x` 这个多元素掩码的真值。",
}


# Also raised by `and` / `or` / `if` on a mask (TD406): the failing line tells them apart; without
# it, TD406 comes first.
@PITFALL.error_check(types=("RuntimeError",), words=("is ambiguous",))
def ambiguous_truth_value(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    if not asks_a_tensors_truth_value(block.message):
        return None
    use = truth_value_use(block, report)
    if use == "chained":
        return Clue(0.9, _CHAINED)
    if use is None:
        return Clue(0.5, _CHAINED)
    return None
