"""TD415 nan-comparison: `x == float("nan")` is always False; NaN is found with `isnan`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Kind, Pitfall, index, per_file

PITFALL = Pitfall(
    code="TD415",
    name="nan-comparison",
    title={
        "en": "Comparison with NaN",
        "zh": "与 NaN 做比较",
    },
    messages={
        "": {
            "en": "`{expr}` is always {result}: NaN compares unequal to everything, itself "
            "included; use {use}",
            "zh": "`{expr}` 永远是 {result}：NaN 与任何值（包括它自己）都不相等；请使用 {use}",
        },
        "new-object": {
            "en": '`{expr}` is always {result}: `float("nan")` makes a new object each time; '
            "use {use}",
            "zh": '`{expr}` 永远是 {result}：`float("nan")` 每次都会创建一个新对象；请使用 {use}',
        },
        "identity": {
            "en": "`{expr}` only tests for that one NaN object, not for a NaN that was computed; "
            "use {use}",
            "zh": "`{expr}` 只判断是否为这一个 NaN 对象，计算得到的 NaN 不会被识别；请使用 {use}",
        },
    },
    fix_title={"en": "Use `torch.isnan`", "zh": "改用 `torch.isnan`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
An equality or identity comparison with a NaN constant: `x == float("nan")`,
`x != float('nan')`, `x == np.nan`, `x is np.nan`, `x == math.nan`, `x == torch.nan`, with
the operands either way round.

## Why is this bad?
By IEEE 754, NaN is unequal to every value, itself included: `x == nan` is always `False`
(elementwise on a tensor or array: all `False`) and `x != nan` always `True`, so a check for a
diverged loss or a missing value never fires. `x is np.nan` is true only when `x` is that very
object: a NaN computed by arithmetic, read from a file or taken out of a tensor is another
object. `torch.isnan(x)`, `np.isnan(x)` and `math.isnan(x)` test for NaN values.

## Fix safety
When `x` is known to be a tensor, the fix replaces `x == nan` with `torch.isnan(x)` (and
`x != nan` with `~torch.isnan(x)`). It is unsafe: the code that never ran now runs.
""",
        "zh": """
## What it catches
与 NaN 常量做相等或同一性比较：`x == float("nan")`、`x != float('nan')`、`x == np.nan`、
`x is np.nan`、`x == math.nan`、`x == torch.nan`，两个操作数的顺序任意。

## Why is this bad?
按照 IEEE 754，NaN 与任何值（包括它自己）都不相等：`x == nan` 永远是 `False`（对张量或数组逐元素比较时
全部为 `False`），`x != nan` 永远是 `True`，所以检测损失发散或缺失值的代码永远不会触发。
`x is np.nan` 只有当 `x` 正是那个对象时才为真：算术运算得到的、从文件读取的或从张量中取出的 NaN
都是别的对象。判断 NaN 要用 `torch.isnan(x)`、`np.isnan(x)` 或 `math.isnan(x)`。

## Fix safety
当已知 `x` 是张量时，修复会把 `x == nan` 换成 `torch.isnan(x)`（`x != nan` 换成
`~torch.isnan(x)`）。它是不安全的：原来从不执行的代码现在会执行。
""",
    },
    example="""
import torch

loss = torch.tensor(float("nan"))
if loss == float("nan"):
    raise RuntimeError("training diverged")
""",
    use_instead="""
import torch

loss = torch.tensor(float("nan"))
if torch.isnan(loss):
    raise RuntimeError("training diverged")
""",
)

NAN_CONSTANTS = frozenset(
    {"math.nan", "numpy.nan", "numpy.NaN", "numpy.NAN", "torch.nan", "cmath.nan"}
)
_EQUALITY = (ast.Eq, ast.NotEq)
_IDENTITY = (ast.Is, ast.IsNot)
# Where a NaN constant is kept as the value itself.
_STORING = (
    ast.Assign,
    ast.AnnAssign,
    ast.Return,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.IfExp,
    ast.arguments,
)
_USE = {
    Kind.TENSOR: {"en": "`torch.isnan({x})`", "zh": "`torch.isnan({x})`"},
    Kind.NDARRAY: {"en": "`np.isnan({x})`", "zh": "`np.isnan({x})`"},
    Kind.UNKNOWN: {
        "en": "`torch.isnan({x})`, `np.isnan({x})` or `math.isnan({x})`",
        "zh": "`torch.isnan({x})`、`np.isnan({x})` 或 `math.isnan({x})`",
    },
}


@PITFALL.static(ast.Compare)
def check(node: ast.Compare, ctx: Context) -> Iterator[Finding]:
    operands = [node.left, *node.comparators]
    for at, op in enumerate(node.ops):
        if not isinstance(op, _EQUALITY + _IDENTITY):
            continue
        left, right = operands[at], operands[at + 1]
        if _is_nan(right, ctx):
            value = left
        elif _is_nan(left, ctx):
            value = right
        else:
            continue
        if _is_nan(value, ctx):
            continue  # `nan == nan`: a demonstration, not a test
        kind = ctx.kind_of(value)
        if kind not in _USE:
            kind = Kind.UNKNOWN
        x = ctx.text(value)
        use = {lang: text.format(x=x) for lang, text in _USE[kind].items()}
        negated = isinstance(op, (ast.NotEq, ast.IsNot))
        variant = ""
        if isinstance(op, _IDENTITY):
            # `x is float("nan")` tests a new object, never `x`.
            nan = left if value is right else right
            new = _is_float_call(nan)
            if not new and ctx.qualname(nan) in _sentinels(ctx):
                continue  # `x = torch.nan` somewhere, then `x is torch.nan`: a sentinel, found
            variant = "new-object" if new else "identity"
        fix = None
        if kind is Kind.TENSOR and len(node.ops) == 1 and _torch_name(ctx):
            fix = ctx.fix(
                PITFALL,
                "unsafe",
                ctx.replace(node, f"{'~' if negated else ''}torch.isnan({x})"),
            )
        expr = ctx.text(node) if len(node.ops) == 1 else f"{x} {_symbol(op)} nan"
        yield ctx.finding(
            PITFALL,
            node,
            variant,
            fix=fix,
            expr=expr,
            result="True" if negated else "False",
            use=use,
        )


@per_file
def _sentinels(ctx: Context) -> frozenset[str]:
    """The NaN constants the file stores as values (`x = torch.nan`, returned, a default, an
    item of a tuple or dict): there `x is torch.nan` may test for that very object, a
    sentinel. (Passed to a call, as in `np.full(n, np.nan)`, it fills other objects.)"""
    found = index(ctx)
    stored = set()
    for name in ("nan", "NaN", "NAN"):
        for at in found.attributes.get(name, ()):
            node = found.nodes[at]
            if isinstance(found.parents[node], _STORING):
                stored.add(ctx.qualname(node))
    return frozenset(stored & NAN_CONSTANTS)


def _is_nan(expr: ast.AST, ctx: Context) -> bool:
    if _is_float_call(expr):
        return True
    return type(expr) is ast.Attribute and ctx.qualname(expr) in NAN_CONSTANTS


def _is_float_call(expr: ast.AST) -> bool:
    """`float("nan")`, any case, signed."""
    if not (
        type(expr) is ast.Call
        and type(expr.func) is ast.Name
        and expr.func.id == "float"
        and len(expr.args) == 1
        and not expr.keywords
    ):
        return False
    argument = expr.args[0]
    return (
        type(argument) is ast.Constant
        and isinstance(argument.value, str)
        and argument.value.strip().lstrip("+-").lower() == "nan"
    )


def _torch_name(ctx: Context) -> bool:
    """`torch` here names the torch module, so `torch.isnan` can be written."""
    return ctx.qualname(ast.Name(id="torch", ctx=ast.Load())) == "torch"


def _symbol(op: ast.cmpop) -> str:
    return {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}[type(op)]
