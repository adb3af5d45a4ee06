"""TD905 log-exp-precision: `torch.log(1 + x)`, `torch.exp(x) - 1` and a hand-made log-sum-exp
instead of `torch.log1p`, `torch.expm1` and `torch.logsumexp`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Kind, Pitfall

PITFALL = Pitfall(
    code="TD905",
    name="log-exp-precision",
    title={
        "en": "`log(1 + x)`, `exp(x) - 1` or `log(sum(exp(x)))` computed by hand",
        "zh": "手写 `log(1 + x)`、`exp(x) - 1` 或 `log(sum(exp(x)))`",
    },
    messages={
        "": {
            "en": "`{old}` rounds away the digits of values near 0: use `{new}`",
            "zh": "`{old}` 会把接近 0 的数值的有效数字舍入掉：请改用 `{new}`",
        },
        "softplus": {
            "en": "`{old}` is softplus, and overflows to `inf` for large inputs: use `{new}`",
            "zh": "`{old}` 就是 softplus，输入较大时会溢出为 `inf`：请改用 `{new}`",
        },
        "logsumexp": {
            "en": "`{old}` overflows to `inf` for large inputs: use `{new}`",
            "zh": "`{old}` 在输入较大时会溢出为 `inf`：请改用 `{new}`",
        },
    },
    fix_title={"en": "Use `{new}`", "zh": "改用 `{new}`"},
    fix_applicability="unsafe",
    default=False,
    docs={
        "en": """
## What it catches
- `torch.log(1 + x)` and `torch.log(x + 1)`: `torch.log1p(x)` computes it;
  `torch.log(1 + torch.exp(x))` is `torch.nn.functional.softplus(x)`.
- `torch.exp(x) - 1`: `torch.expm1(x)` computes it.
- `torch.log(torch.sum(torch.exp(x), dim))` (also with `torch.exp(x).sum(dim)`):
  `torch.logsumexp(x, dim)` computes it.
- The method forms on a value known to be a tensor: `(1 + x).log()` and `x.exp() - 1`.

Opt-in (`--select TD905`): an improvement of precision, not a bug in most programs.

## Why is this bad?
In floating point, `1 + x` rounds away the digits of a small `x`: in float32, `1 + 1e-8` is
exactly `1`, so `torch.log(1 + x)` is `0` where the true value is `1e-8`, and `torch.exp(x) - 1`
cancels the same way. `log1p` and `expm1` compute these without the intermediate rounding.
`log(sum(exp(x)))` overflows: `exp(100.)` is already `inf` in float32, so the result is `inf`
(and its gradient `nan`) for logits that `logsumexp` handles by subtracting the maximum first;
`log(1 + exp(x))` overflows the same way, where `softplus` returns `x` for large inputs.

## Symptoms
Losses or log-probabilities that are exactly `0`, `inf` or `nan` for inputs that are very small
or large; `nan` gradients from a hand-written softmax normaliser.

## Fix safety
The fixes are unsafe because they change the numbers: that is their point, but a result compared
exactly with a stored one (a test, a checkpoint's metrics) will differ in the last digits
(`softplus` also returns `x` itself above 20).
`torch.log(torch.sum(...))` is fixed only when the sum is given a dimension and no other
argument than `keepdim=` (`torch.logsumexp` needs `dim` and has no `dtype=`).

## Known problems
Only the exact forms above are found: `torch.log(x + 1.0)` is, `torch.log(x + eps)` or
`torch.log(2 + x)` are not (they are something else). NumPy's `np.log(1 + x)` is not reported.

## References
- PyTorch docs: `torch.log1p`, `torch.expm1`, `torch.logsumexp`.
- TorchFix TOR106, TOR107, TOR108.
""",
        "zh": """
## What it catches
- `torch.log(1 + x)` 和 `torch.log(x + 1)`：`torch.log1p(x)` 专门计算它；
  `torch.log(1 + torch.exp(x))` 就是 `torch.nn.functional.softplus(x)`。
- `torch.exp(x) - 1`：`torch.expm1(x)` 专门计算它。
- `torch.log(torch.sum(torch.exp(x), dim))`（以及 `torch.exp(x).sum(dim)` 的写法）：
  `torch.logsumexp(x, dim)` 专门计算它。
- 在已知是张量的值上的方法写法：`(1 + x).log()` 和 `x.exp() - 1`。

默认关闭（`--select TD905` 开启）：这是精度上的改进，在大多数程序中并不是 bug。

## Why is this bad?
在浮点数中，`1 + x` 会把很小的 `x` 的有效数字舍入掉：float32 中 `1 + 1e-8` 恰好等于 `1`，于是
`torch.log(1 + x)` 得到 `0`，而真实值是 `1e-8`；`torch.exp(x) - 1` 也会以同样的方式相消。`log1p` 和 `expm1`
的计算没有这一步中间舍入。`log(sum(exp(x)))` 会溢出：float32 中 `exp(100.)` 已经是 `inf`，结果就是 `inf`
（梯度为 `nan`），而 `logsumexp` 先减去最大值，能正确处理这样的 logits；`log(1 + exp(x))` 也会以同样的方式溢出，
而 `softplus` 在输入较大时直接返回 `x`。

## Symptoms
输入非常小或非常大时，损失或对数概率恰好为 `0`、`inf` 或 `nan`；手写的 softmax 归一化项产生 `nan` 梯度。

## Fix safety
这些修复是不安全的，因为它们会改变数值：这正是修复的目的，但与保存的结果做精确比较的地方（测试、检查点中的指标）
在最后几位会不同（`softplus` 在输入超过 20 时还会直接返回 `x`）。
`torch.log(torch.sum(...))` 只有在求和给出了维度、且除 `keepdim=` 外没有其他参数时才修复
（`torch.logsumexp` 必须有 `dim`，也没有 `dtype=`）。

## Known problems
只识别上面这些确切的写法：`torch.log(x + 1.0)` 会被发现，`torch.log(x + eps)` 或 `torch.log(2 + x)`
不会（它们是别的计算）。NumPy 的 `np.log(1 + x)` 不报告。

## References
- PyTorch 文档：`torch.log1p`、`torch.expm1`、`torch.logsumexp`。
- TorchFix TOR106、TOR107、TOR108。
""",
    },
    example="""
import torch

y = torch.log(1 + x)
z = torch.exp(x) - 1
lse = torch.log(torch.sum(torch.exp(logits), dim=1))
""",
    use_instead="""
import torch

y = torch.log1p(x)
z = torch.expm1(x)
lse = torch.logsumexp(logits, dim=1)
""",
)

LOG, EXP, SUM = "torch.log", "torch.exp", "torch.sum"


def _is_one(node: ast.AST) -> bool:
    return type(node) is ast.Constant and type(node.value) in (int, float) and node.value == 1


def _plus_one(node: ast.AST) -> ast.AST | None:
    """`x` of `1 + x` or `x + 1`."""
    if type(node) is not ast.BinOp or type(node.op) is not ast.Add:
        return None
    if _is_one(node.left):
        return node.right
    if _is_one(node.right):
        return node.left
    return None


def _torch_call(node: ast.AST, qualname: str, ctx: Context) -> ast.AST | None:
    """The one argument of `torch.log(a)` (and the like), without other arguments."""
    if type(node) is not ast.Call or len(node.args) != 1 or node.keywords:
        return None
    if type(node.args[0]) is ast.Starred or ctx.qualname(node.func) != qualname:
        return None
    return node.args[0]


def _method_call(node: ast.AST, name: str, ctx: Context) -> ast.AST | None:
    """`a` of `a.log()` when `a` is known to be a tensor."""
    if type(node) is not ast.Call or node.args or node.keywords:
        return None
    func = node.func
    if type(func) is not ast.Attribute or func.attr != name:
        return None
    return func.value if ctx.kind_of(func.value) is Kind.TENSOR else None


def _torch_prefix(call: ast.Call, ctx: Context) -> str:
    """`torch` as written in `torch.log`: `th` after `import torch as th`."""
    return ctx.text(call.func).rpartition(".")[0]


@PITFALL.static(ast.Call, names={"log"})
def check_log(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`torch.log(1 + x)`, `(1 + x).log()`, `torch.log(torch.sum(torch.exp(x), dim))`."""
    argument = _torch_call(call, LOG, ctx)
    if argument is not None and type(call.func) is ast.Attribute:
        torch = _torch_prefix(call, ctx)
        inner = _plus_one(argument)
        exp = _torch_call(inner, EXP, ctx) if inner is not None else None
        if exp is not None:  # log(1 + exp(x)): log1p would still overflow in exp
            new = f"{torch}.nn.functional.softplus({ctx.text(exp)})"
            yield _finding(call, new, ctx, "softplus")
            return
        if inner is not None:
            new = f"{torch}.log1p({ctx.text(inner)})"
            yield _finding(call, new, ctx)
            return
        yield from _logsumexp(call, argument, torch, ctx)
        return
    if type(call.func) is ast.Attribute and not call.args and not call.keywords:
        inner = _plus_one(call.func.value)
        if inner is not None and ctx.kind_of(inner) is Kind.TENSOR:
            yield _finding(call, f"{_operand(inner, ctx)}.log1p()", ctx)


def _logsumexp(call: ast.Call, argument: ast.AST, torch: str, ctx: Context) -> Iterator[Finding]:
    if type(argument) is not ast.Call:
        return
    func = argument.func
    if ctx.qualname(func) == SUM and argument.args:  # torch.sum(torch.exp(x), ...)
        exp, rest = argument.args[0], argument.args[1:]
    elif type(func) is ast.Attribute and func.attr == "sum":  # torch.exp(x).sum(...)
        exp, rest = func.value, argument.args
    else:
        return
    x = _torch_call(exp, EXP, ctx)
    if x is None:
        return
    keywords = argument.keywords
    given = [ctx.text(a) for a in rest] + [ctx.text(k) for k in keywords]
    new = f"{torch}.logsumexp({', '.join([ctx.text(x), *given])})"
    fixable = (
        (rest or any(k.arg == "dim" for k in keywords))
        and len(rest) <= 2
        and all(k.arg in {"dim", "keepdim"} for k in keywords)
        and not any(type(a) is ast.Starred for a in rest)
    )
    shown = new if fixable else f"{torch}.logsumexp({ctx.text(x)}, dim)"
    yield _finding(call, shown, ctx, "logsumexp", fixable=bool(fixable))


@PITFALL.static(ast.BinOp)
def check_expm1(node: ast.BinOp, ctx: Context) -> Iterator[Finding]:
    """`torch.exp(x) - 1`, `x.exp() - 1`."""
    if type(node.op) is not ast.Sub or not _is_one(node.right) or type(node.left) is not ast.Call:
        return
    x = _torch_call(node.left, EXP, ctx)
    if x is not None and type(node.left.func) is ast.Attribute:
        yield _finding(node, f"{_torch_prefix(node.left, ctx)}.expm1({ctx.text(x)})", ctx)
        return
    x = _method_call(node.left, "exp", ctx)
    if x is not None:
        yield _finding(node, f"{_operand(x, ctx)}.expm1()", ctx)


def _operand(node: ast.AST, ctx: Context) -> str:
    """`node`'s text, parenthesized unless it is a name, attribute, call or subscript."""
    text = ctx.text(node)
    if type(node) in (ast.Name, ast.Attribute, ast.Call, ast.Subscript):
        return text
    return f"({text})"


def _finding(node: ast.AST, new: str, ctx: Context, variant: str = "", fixable: bool = True):
    old = " ".join(ctx.text(node).split())
    fix = None
    if fixable and "\n" not in new:
        title = {lang: text.format(new=new) for lang, text in PITFALL.fix_title.items()}
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(node, new), title=title)
    return ctx.finding(PITFALL, node, variant, fix=fix, old=old, new=" ".join(new.split()))
