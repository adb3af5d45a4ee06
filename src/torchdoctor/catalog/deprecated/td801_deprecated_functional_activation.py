"""TD801 deprecated-functional-activation: `F.sigmoid` / `F.tanh` rather than `torch.sigmoid`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Clue, Context, Finding, Pitfall, lazy_compile, only_identified

PITFALL = Pitfall(
    code="TD801",
    name="deprecated-functional-activation",
    title={
        "en": "`nn.functional.sigmoid` / `nn.functional.tanh` instead of `torch.sigmoid` / `torch.tanh`",
        "zh": "使用了 `nn.functional.sigmoid` / `nn.functional.tanh`，而不是 `torch.sigmoid` / `torch.tanh`",
    },
    messages={
        "": {
            "en": "`{old}` is deprecated since PyTorch 0.4.1 (1.x releases warn on every call): use `torch.{function}`",
            "zh": "`{old}` 自 PyTorch 0.4.1 起已弃用（1.x 版本每次调用都会警告）：请改用 `torch.{function}`",
        }
    },
    fix_title={"en": "Use `torch.{function}`", "zh": "改用 `torch.{function}`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Call `torch.sigmoid` / `torch.tanh` (or `x.sigmoid()` / `x.tanh()`) "
        "instead of `F.sigmoid` / `F.tanh`; the result is identical.",
        "zh": "用 `torch.sigmoid` / `torch.tanh`（或 `x.sigmoid()` / `x.tanh()`）代替 "
        "`F.sigmoid` / `F.tanh`，结果完全相同。",
    },
    # Current PyTorch dropped the warning and keeps F.sigmoid/F.tanh as plain aliases: opt-in.
    default=False,
    docs={
        "en": """
## What it catches
`torch.nn.functional.sigmoid` and `torch.nn.functional.tanh`, however they are spelled
(`F.sigmoid`, `nn.functional.tanh`, `torch.nn.functional.sigmoid`, or a name imported with
`from torch.nn.functional import sigmoid`), called or passed around as a value
(`act = F.tanh`), but not where it is only told apart from others (a key of a patch table,
`fn is F.tanh`).

## Why is this bad?
When tensors and Variables merged in PyTorch 0.4, `torch.sigmoid` and `torch.tanh` became the
one place for these element-wise functions, and from 0.4.1 through the 1.x releases the
`nn.functional` versions print a deprecation warning on every call. In a training loop that is one warning
per step: logs fill up, and the warnings that matter get lost among them. Code that must run
on those PyTorch versions should call `torch.sigmoid` / `torch.tanh` (or `x.sigmoid()`), which
compute exactly the same thing.

Current 2.x releases took the warning back and keep the `nn.functional` names as aliases, so
the rule is off by default: turn it on for code that must also run on PyTorch 1.x.

## Symptoms
`UserWarning: nn.functional.sigmoid is deprecated. Use torch.sigmoid instead.`
`UserWarning: nn.functional.tanh is deprecated. Use torch.tanh instead.`

## Fix safety
The fix replaces the reference with `torch.sigmoid` / `torch.tanh`, the function the
`nn.functional` version forwards to, so the result is identical. It is offered only where the
name `torch` refers to the torch module at that line; elsewhere nothing is changed.

## Known problems
The `nn.Sigmoid()` / `nn.Tanh()` modules are fine and not reported. A name imported with
`from torch.nn.functional import sigmoid` is found where it is called, not where it is only
passed around, and not when it was imported under another name (`import tanh as t`); the
import line itself is left in place after the calls are rewritten.

## References
- PyTorch issue #6245 (the deprecation) and #65909 (its later withdrawal)
""",
        "zh": """
## What it catches
`torch.nn.functional.sigmoid` 和 `torch.nn.functional.tanh`，不论写成 `F.sigmoid`、
`nn.functional.tanh`、`torch.nn.functional.sigmoid`，还是通过 `from torch.nn.functional import sigmoid`
导入的名字；直接调用或者当作值传来传去（`act = F.tanh`）都会被发现。
只用于和别的函数区分的地方（补丁表中的键、`fn is F.tanh`）不报告。

## Why is this bad?
PyTorch 0.4 把 Tensor 和 Variable 合并之后，`torch.sigmoid`、`torch.tanh` 成了这类逐元素函数的统一入口；
从 0.4.1 起直到整个 1.x 系列，`nn.functional` 里的版本每调用一次就打印一条弃用警告。放在训练循环里就是每一步一条：
日志被刷满，真正需要注意的警告反而被淹没。需要在这些版本上运行的代码应改用 `torch.sigmoid` /
`torch.tanh`（或 `x.sigmoid()`），计算结果完全相同。

目前的 2.x 版本已经撤回了这条警告，把 `nn.functional` 中的名字保留为别名，所以本规则默认关闭：
如果代码还要在 PyTorch 1.x 上运行，再把它打开。

## Symptoms
`UserWarning: nn.functional.sigmoid is deprecated. Use torch.sigmoid instead.`
`UserWarning: nn.functional.tanh is deprecated. Use torch.tanh instead.`

## Fix safety
修复把引用替换为 `torch.sigmoid` / `torch.tanh`，也就是 `nn.functional` 版本内部转调的函数，结果完全一致。
只有当这一行的 `torch` 确实指向 torch 模块时才提供修复，否则不做任何改动。

## Known problems
`nn.Sigmoid()` / `nn.Tanh()` 模块没有问题，不会报告。通过 `from torch.nn.functional import sigmoid`
导入的名字只在被调用的地方报告，仅作为值传递、或导入时改了名字（`import tanh as t`）时不会报告；
修复只改写调用处，导入语句保持不变。

## References
- PyTorch issue #6245（引入弃用）与 #65909（后来撤回）
""",
    },
    example="""
import torch
import torch.nn.functional as F

logits = torch.randn(4, 10)
probs = F.sigmoid(logits)
""",
    use_instead="""
import torch

logits = torch.randn(4, 10)
probs = torch.sigmoid(logits)
""",
)

_CAUSE = {
    "en": "The code calls `F.{function}` (torch.nn.functional.{function}), which "
    "PyTorch 0.4.1-1.x deprecate with a warning on every call.",
    "zh": "代码调用了 `F.{function}`（torch.nn.functional.{function}），PyTorch 0.4.1-1.x "
    "已将其弃用，每次调用都会警告。",
}
_FIX = {
    "en": "Use `torch.{function}(x)` (or `x.{function}()`) instead of `F.{function}(x)`.",
    "zh": "用 `torch.{function}(x)`（或 `x.{function}()`）代替 `F.{function}(x)`。",
}
PITFALL.error(
    r"nn\.functional\.(?P<function>sigmoid|tanh) is deprecated\. Use torch\.(?P=function) "
    r"instead",
    types=(),
    confidence=0.95,
    cause=_CAUSE,
    fix=_FIX,
)
# Retold in an issue's title or text: `torch.nn.functional.sigmoid and torch.nn.functional.tanh
# deprecated`, `F.tanh is deprecated`: the same warning in the user's words, on one line.
_RETOLD = lazy_compile(
    r"(?:nn\.functional|\bF)\.(?P<function>sigmoid|tanh)\b[^\n]{0,80}?\b(?:are |is )?deprecated\b"
)


@PITFALL.error_check(types=(), words=("deprecated",))
def retold_warning(block, report) -> Clue | None:
    found = _RETOLD.search(block.message)
    if found is None:
        return None
    # Next to an exception, prose about the warning is seldom what made it crash.
    return Clue(0.4 if report.exceptions else 0.85, _CAUSE, _FIX, found.groupdict())


FUNCTIONS = {f"torch.nn.functional.{name}": name for name in ("sigmoid", "tanh")}
_TORCH = ast.Name(id="torch", ctx=ast.Load())


@PITFALL.static(ast.Attribute, names={"sigmoid", "tanh"})
def check_attribute(node: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`F.sigmoid(x)`, `nn.functional.tanh`, used in any way except as an assignment target or
    only to be told apart (`{F.sigmoid: ...}` in a patch table, `fn is F.tanh`)."""
    if not isinstance(node.ctx, ast.Load) or ctx.qualname(node) not in FUNCTIONS:
        return  # `torch.sigmoid`, `x.tanh()`: asked first, it spares the look at the parents
    if not only_identified(node, ctx):
        yield from _report(node, ctx)


@PITFALL.static(ast.Call, names={"sigmoid", "tanh"})
def check_imported_call(node: ast.Call, ctx: Context) -> Iterator[Finding]:
    """`sigmoid(x)` after `from torch.nn.functional import sigmoid` (attributes: see above)."""
    if isinstance(node.func, ast.Name):
        yield from _report(node.func, ctx)


def _report(node: ast.Attribute | ast.Name, ctx: Context) -> Iterator[Finding]:
    function = FUNCTIONS.get(ctx.qualname(node))
    if function is None:
        return
    fix = None
    if ctx.qualname(_TORCH) == "torch":  # `torch` must name the module here for the rewrite
        title = {lang: text.format(function=function) for lang, text in PITFALL.fix_title.items()}
        fix = ctx.fix(PITFALL, "safe", ctx.replace(node, f"torch.{function}"), title=title)
    written = " ".join(ctx.text(node).split())
    yield ctx.finding(PITFALL, node, fix=fix, old=written, function=function)
