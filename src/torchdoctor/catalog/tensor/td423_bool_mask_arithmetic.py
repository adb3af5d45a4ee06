"""TD423 bool-mask-arithmetic: `1 - mask` on a bool mask, the uint8-era way to invert one."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    VARIABLE_QUALNAMES,
    Context,
    Finding,
    Kind,
    Pitfall,
    bindings,
    dotted_name,
    per_file,
    returned_values,
    scope_of,
    shorten,
    top_level_classes,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD423",
    name="bool-mask-arithmetic",
    title={
        "en": "`1 - mask` on a bool mask (a comparison's result)",
        "zh": "对 bool 掩码（比较运算的结果）做 `1 - mask`",
    },
    messages={
        "": {
            "en": "`{mask}` is a bool tensor (made by `{source}`): `{expression}` raises "
            "'Subtraction, the `-` operator, with a bool tensor is not supported' since "
            "PyTorch 1.2, when comparisons stopped returning uint8; invert it with `~{mask}`",
            "zh": "`{mask}` 是 bool 张量（由 `{source}` 得到）：自 PyTorch 1.2 起比较运算不再返回 "
            "uint8，`{expression}` 会报错 'Subtraction, the `-` operator, with a bool tensor is "
            "not supported'；请用 `~{mask}` 取反",
        },
    },
    fix_title={"en": "Invert the mask with `~`", "zh": "用 `~` 对掩码取反"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Write `~mask` (or `mask.logical_not()`) for the inverted mask; where a number "
        "was meant, `1 - mask.float()`.",
        "zh": "取反的掩码写成 `~mask`（或 `mask.logical_not()`）；如果要的是数值，写成 "
        "`1 - mask.float()`。",
    },
    docs={
        "en": """
## What it catches
An integer minus a tensor that is certainly bool: `1 - mask` where `mask` is a comparison of a
tensor (`x > 0`, `target.ne(ignore_index)`, `torch.eq(a, b)`, `logical_not`, `isnan`...), that
comparison moved or reshaped (`.cuda()`, `.unsqueeze(1)`, `.view(...)` of a shape, not of a
dtype, `Variable(...)`),
combined with another bool mask (`&`, `|`, `*`), held by a name every binding of which in its
function is such a mask, or returned by a function or method of the file that only returns one
(OpenNMT's `sequence_mask(lengths)`, which ends in `.lt(lengths.unsqueeze(1))`).

## Why is this bad?
Until PyTorch 1.2 comparisons returned uint8 tensors, and `1 - mask` was the usual way to invert
a mask: `masked_fill_(1 - mask, -inf)` filled the padding. Since 1.2 comparisons return bool,
and arithmetic that would turn a bool into a number with a sign is refused: the line raises a
RuntimeError on every call. The code ran when it was written and crashes on any PyTorch of the
last years, often deep inside an attention or a loss function.

## Symptoms
`RuntimeError: Subtraction, the `-` operator, with a bool tensor is not supported. If you are
trying to invert a mask, use the `~` or `logical_not()` operator instead.` (and, for `-mask`,
`Negation, the `-` operator, on a bool tensor is not supported`).

## Fix safety
The fix writes `~mask`: the inverted bool mask, which is what `1 - mask` meant on uint8, used as
a mask or in arithmetic (`loss * ~mask` counts True as 1). It is unsafe because the doctor reads
the dtype from how the mask is made: if the value is in fact uint8 or an integer tensor (made by
code it cannot see), `~` inverts its bits instead (`~1` is 254 on uint8).

## Known problems
Only masks the doctor can see being made are reported: a mask passed as a parameter, read from
an attribute, or made in another file is not, and neither is `1 - x` of a tensor of unknown dtype.
""",
        "zh": """
## What it catches
整数减去一个确定是 bool 的张量：`1 - mask`，其中 `mask` 是对张量的比较（`x > 0`、
`target.ne(ignore_index)`、`torch.eq(a, b)`、`logical_not`、`isnan`……），或者这样的比较经过移动或变形
（`.cuda()`、`.unsqueeze(1)`、改变形状而非 dtype 的 `.view(...)`、`Variable(...)`），
或与另一个 bool 掩码组合（`&`、`|`、`*`），
或者由一个名字持有、而它在函数中的每次绑定都是这样的掩码，或者由本文件中只返回这种掩码的函数或方法返回
（OpenNMT 的 `sequence_mask(lengths)`，最后一步是 `.lt(lengths.unsqueeze(1))`）。

## Why is this bad?
在 PyTorch 1.2 之前，比较运算返回 uint8 张量，`1 - mask` 是对掩码取反的常见写法：
`masked_fill_(1 - mask, -inf)` 用来填充 padding 位置。从 1.2 起比较运算返回 bool，而会把 bool
变成带符号数的算术被拒绝：这一行每次执行都会抛出 RuntimeError。代码写成时能运行，在近几年的任何
PyTorch 上都会崩溃，而且往往发生在注意力或损失函数的深处。

## Symptoms
`RuntimeError: Subtraction, the `-` operator, with a bool tensor is not supported. If you are
trying to invert a mask, use the `~` or `logical_not()` operator instead.`（对 `-mask` 则是
`Negation, the `-` operator, on a bool tensor is not supported`）。

## Fix safety
修复把它写成 `~mask`：取反后的 bool 掩码，这正是 `1 - mask` 在 uint8 上的含义，无论作为掩码还是用于算术
（`loss * ~mask` 把 True 当作 1）。它是不安全的，因为 doctor 是根据掩码的构造方式判断 dtype 的：如果这个值
实际上是 uint8 或整数张量（由它看不到的代码构造），`~` 会按位取反（uint8 上 `~1` 是 254）。

## Known problems
只报告 doctor 能看到其构造过程的掩码：作为参数传入、从属性读取或在其他文件中构造的掩码不会报告，
dtype 未知的张量 `x` 的 `1 - x` 也不会报告。
""",
    },
    example="""
import torch

scores = torch.randn(4, 10)
padding = torch.arange(10) >= 7
scores.masked_fill_(1 - padding, 0.0)
""",
    use_instead="""
import torch

scores = torch.randn(4, 10)
padding = torch.arange(10) >= 7
scores.masked_fill_(~padding, 0.0)
""",
)

# Elementwise comparisons (not `is`, `in`) and the methods and torch functions making bool.
_COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
_BOOL_METHODS = frozenset(
    """
eq ne lt le gt ge logical_and logical_or logical_not logical_xor isnan isinf isfinite
isposinf isneginf isclose isin bool
""".split()
)
# Methods whose result keeps the receiver's dtype (and so a bool mask's).
_DTYPE_KEEPING = frozenset(
    """
cuda cpu clone detach contiguous reshape view squeeze unsqueeze expand expand_as flatten
repeat t transpose permute narrow flip roll view_as pin_memory
""".split()
)
# `mask & other`, `mask | other`, `mask ^ other`, `mask * other`: bool with a bool.
_BOOL_OPERATORS = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.Mult)
# How many names and functions are followed to the comparison.
_MAX_DEPTH = 4


@PITFALL.static(ast.BinOp)
def check(node: ast.BinOp, ctx: Context) -> Iterator[Finding]:
    left = node.left
    if (
        type(node.op) is not ast.Sub
        or type(left) is not ast.Constant
        or type(left.value) is not int
        or not ctx.imports_torch
    ):
        return
    source = _bool_source(node.right, ctx, frozenset(), 0, True)
    if source is None or _dtype_tested(node.right, ctx):
        return
    mask = ctx.text(node.right)
    inverted = mask if _binds_tightly(node.right) else f"({mask})"
    fix = None
    if "\n" not in mask and "\r" not in mask:
        title = PITFALL.fix_title
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(node, f"~{inverted}"), title=title)
    yield ctx.finding(
        PITFALL,
        node,
        fix=fix,
        mask=shorten(mask, limit=40),
        source=shorten(ctx.text(source), limit=60),
        expression=shorten(ctx.text(node), limit=50),
    )


def _dtype_tested(mask: ast.AST, ctx: Context) -> bool:
    """An `if` around the subtraction tests the mask's dtype (`if u.dtype == torch.bool: ~u`,
    `else: 1 - u`): code kept for the torch before 1.2, whose comparisons gave uint8."""
    written = dotted_name(mask)
    if written is None:
        return False
    for statement in ctx.ancestors:
        if type(statement) is not ast.If:
            continue
        for part in ast.walk(statement.test):
            if (
                type(part) is ast.Attribute
                and part.attr == "dtype"
                and dotted_name(part.value) == written
            ):
                return True
    return False


def _binds_tightly(expr: ast.AST) -> bool:
    """`~expr` needs no parentheses: a name, attribute, item or call."""
    return isinstance(expr, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))


def _bool_source(
    expr: ast.AST, ctx: Context, assumed: frozenset[str], depth: int, here: bool
) -> ast.AST | None:
    """The comparison that makes `expr` a bool tensor, or None when that is not certain.
    `assumed`: names taken to be such a mask while their own rebindings are read (`mask =
    mask.cuda()`); `here`: `expr` belongs to the scope being checked, whose kinds are known."""
    if depth > _MAX_DEPTH:
        return None
    kind = type(expr)
    if kind is ast.Compare:
        if len(expr.ops) == 1 and type(expr.ops[0]) in _COMPARISONS:
            if any(_is_tensor(side, ctx, here) for side in (expr.left, *expr.comparators)):
                return expr
        return None
    if kind is ast.UnaryOp:
        if type(expr.op) is ast.Invert:
            return _bool_source(expr.operand, ctx, assumed, depth, here)
        return None
    if kind is ast.BinOp:
        if type(expr.op) not in _BOOL_OPERATORS:
            return None
        first = _bool_source(expr.left, ctx, assumed, depth, here)
        if first is None or _bool_source(expr.right, ctx, assumed, depth, here) is None:
            return None
        return first
    if kind is ast.Name:
        if expr.id in assumed:
            return expr
        if not here:
            return None
        return _name_source(ctx, scope_of(expr.id, ctx), expr.id, assumed, depth)
    if kind is ast.Call:
        return _call_source(expr, ctx, assumed, depth, here)
    return None


def _call_source(
    call: ast.Call, ctx: Context, assumed: frozenset[str], depth: int, here: bool
) -> ast.AST | None:
    func = call.func
    qualname = ctx.qualname(func) or ""
    if qualname.startswith("torch.") and qualname.rpartition(".")[2] in _BOOL_METHODS:
        return call  # `torch.eq(a, b)`, `torch.logical_not(m)`
    if qualname in VARIABLE_QUALNAMES and len(call.args) == 1:
        return _bool_source(call.args[0], ctx, assumed, depth, here)
    if isinstance(func, ast.Attribute):
        method = func.attr
        if qualname:
            return None  # a function of an imported module (`np.isnan(u)`: numpy's bool works)
        if method in _BOOL_METHODS and _compares_a_tensor(func.value, ctx, here):
            return call
        if method == "view" and _reinterprets(call, ctx):
            return None  # `mask.view(torch.uint8)`: the same bytes read as another dtype
        if method in _DTYPE_KEEPING or (method == "to" and _moves_only(call)):
            return _bool_source(func.value, ctx, assumed, depth, here)
        if type(func.value) is ast.Name and func.value.id == "self":
            return _returned_source(_method(ctx, func.attr), ctx, depth)
        return None
    if type(func) is ast.Name:
        return _returned_source(top_level_functions(ctx).get(func.id), ctx, depth)
    return None


def _reinterprets(call: ast.Call, ctx: Context) -> bool:
    """`x.view(torch.uint8)`, `x.view(dtype=d)`: a view as another dtype, not another shape."""
    if any(keyword.arg == "dtype" for keyword in call.keywords):
        return True
    if len(call.args) != 1 or not isinstance(call.args[0], (ast.Name, ast.Attribute)):
        return False
    qualname = ctx.qualname(call.args[0]) or ""
    return qualname.startswith("torch.") and qualname != "torch.Size"


def _compares_a_tensor(receiver: ast.AST, ctx: Context, here: bool) -> bool:
    """The receiver of `.ne(...)` and the like is a tensor: known to be one, or any value in a
    file that does not use pandas, whose Series are the other objects with such methods."""
    if _is_tensor(receiver, ctx, here):
        return True
    return not ctx.may_name("pandas") and not ctx.may_name("pd")


def _is_tensor(expr: ast.AST, ctx: Context, here: bool) -> bool:
    if not here and type(_root(expr, ctx)) is ast.Name:
        return False  # made from a name of another function: its kind is not known here
    return ctx.kind_of(expr) is Kind.TENSOR


def _root(expr: ast.AST, ctx: Context) -> ast.AST:
    """What a chain of calls, attributes and items starts from: `x` of `x.view(n).float()`,
    the call `torch.arange(n)` of `torch.arange(n).repeat(b, 1)`."""
    while True:
        if isinstance(expr, ast.Call):
            if not isinstance(expr.func, ast.Attribute) or ctx.qualname(expr.func):
                return expr  # a function, of the file or of an imported module
            expr = expr.func.value
        elif isinstance(expr, (ast.Attribute, ast.Subscript)):
            expr = expr.value
        else:
            return expr


def _moves_only(call: ast.Call) -> bool:
    """`.to(device)`: one argument that names a device, not a dtype."""
    if call.keywords or len(call.args) != 1:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, str) and arg.value.split(":")[0] in ("cuda", "cpu")
    name = arg.attr if isinstance(arg, ast.Attribute) else getattr(arg, "id", "")
    return "device" in name


@per_file
def _name_source(
    ctx: Context, scope: ast.AST, name: str, assumed: frozenset[str], depth: int
) -> ast.AST | None:
    """The comparison every binding of `name` in its scope makes a mask of (the binding that
    rebinds it to itself moved, `mask = mask.cuda()`, read as keeping it)."""
    found = bindings(ctx, scope, name)
    if not found or any(b.value is None or b.augmented for b in found):
        return None
    source = None
    for binding in found:
        made = _bool_source(binding.value, ctx, assumed | {name}, depth + 1, True)
        if made is None:
            return None
        if source is None and not (type(made) is ast.Name and made.id == name):
            source = made
    return source


def _method(ctx: Context, name: str) -> ast.AST | None:
    """The method `name` of the class being checked, defined in it."""
    cls = ctx.enclosing_class()
    if cls is None or top_level_classes(ctx).get(cls.name) is not cls:
        return None
    for statement in cls.body:
        if (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == name
        ):
            return statement
    return None


def _returned_source(function: ast.AST | None, ctx: Context, depth: int) -> ast.AST | None:
    """The comparison a function of the file returns, each of its returns one: read without the
    kinds of its own names (not this scope's)."""
    if function is None or depth >= _MAX_DEPTH:
        return None
    returned = returned_values(ctx, function)
    if not returned:
        return None
    sources = [_bool_source(value, ctx, frozenset(), depth + 1, False) for value in returned]
    return sources[0] if all(s is not None for s in sources) else None


# Error signatures ---------------------------------------------------------------------------

PITFALL.error(
    r"(?:Subtraction|Negation), the `-` operator, (?:with|on) a bool tensor is not supported",
    confidence=0.95,
    cause={
        "en": "A bool tensor (a comparison's result, a mask) is subtracted from a number or "
        "negated: `1 - mask` inverted a uint8 mask before PyTorch 1.2; comparisons return bool "
        "now. Invert it with `~mask` (or `mask.logical_not()`).",
        "zh": "对 bool 张量（比较的结果、掩码）做了减法或取负：在 PyTorch 1.2 之前 `1 - mask` 用来对 uint8 "
        "掩码取反；现在比较运算返回 bool。请用 `~mask`（或 `mask.logical_not()`）取反。",
    },
)
