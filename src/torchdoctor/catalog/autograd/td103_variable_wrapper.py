"""TD103 variable-wrapper: `Variable(x)` is a leftover of PyTorch 0.3 that silently detaches."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    VARIABLE_QUALNAMES,
    VOLATILE_HELPER,
    Context,
    Finding,
    Pitfall,
    in_compat_fallback,
    call_name,
    index,
    is_parameter,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD103",
    name="variable-wrapper",
    title={
        "en": "`torch.autograd.Variable(...)` wrapper, obsolete since PyTorch 0.4",
        "zh": "PyTorch 0.4 起已过时的 `torch.autograd.Variable(...)` 包装",
    },
    messages={
        "": {
            "en": "`Variable(...)` is obsolete since PyTorch 0.4: tensors track gradients "
            "themselves, and the wrapper only returns a detached alias",
            "zh": "`Variable(...)` 从 PyTorch 0.4 起已过时：张量自己就能记录梯度，"
            "这个包装只会返回一个 detach 过的别名",
        },
        "volatile": {
            "en": "`Variable(...)` is obsolete and its `volatile` flag has had no effect since "
            "PyTorch 0.4: gradients are still tracked; use `with torch.no_grad():`",
            "zh": "`Variable(...)` 已过时，它的 `volatile` 参数从 PyTorch 0.4 起不再起作用："
            "梯度仍然会被记录；请使用 `with torch.no_grad():`",
        },
        "helper_volatile": {
            "en": "`{function}(..., volatile=...)` hands `volatile` on to `Variable`, a flag without "
            "effect since PyTorch 0.4: gradients are still recorded here; run this code under "
            "`with torch.no_grad():` instead",
            "zh": "`{function}(..., volatile=...)` 把 `volatile` 传给 `Variable`，而这个参数从 PyTorch 0.4 "
            "起不再起作用：这里仍然会记录梯度；请改为在 `with torch.no_grad():` 下运行这段代码",
        },
        "volatile_attribute": {
            "en": "Setting `{target}.volatile` has had no effect since PyTorch 0.4 (tensors have "
            "no such flag any more): gradients are still tracked; use `with torch.no_grad():` "
            "where none are wanted",
            "zh": "从 PyTorch 0.4 起设置 `{target}.volatile` 不再起任何作用（张量已经没有这个标志）："
            "梯度仍然会被记录；不需要梯度的地方请使用 `with torch.no_grad():`",
        },
    },
    fix_title={"en": "Remove the `Variable(...)` wrapper", "zh": "去掉 `Variable(...)` 包装"},
    fix_applicability="safe",
    docs={
        "en": """
## What it catches
Calls of `torch.autograd.Variable(x)`, however it was imported (`from torch.autograd import
Variable`, `torch.autograd.variable.Variable`), with or without `requires_grad=` and the
obsolete `volatile=`; and the flag set on a tensor afterwards (`p.volatile = True` for each
parameter of a net, `next_q.volatile = False`), in a file that imports torch. Also the flag
passed through a helper of the project, the 0.3 idiom `to_var(x, volatile=True)`: a call with
`volatile=` (not `False`) of a function of the file that has a `volatile` parameter and calls
`Variable`, or of a function of another module whose name says it makes a variable (`to_var`,
`make_variable`).

## Why is this bad?
Since PyTorch 0.4 `Variable` and `Tensor` are merged: every tensor records its autograd
history and has `requires_grad`, `.grad` and `.backward()`. The wrapper survives only for old
code, and it does not do nothing: `Variable(x)` returns `x.detach()`, a new tensor that shares
`x`'s memory but not its history and does not require grad. Wrapping an intermediate result
therefore cuts the graph and gradients silently stop there; `Variable(w, requires_grad=True)`
makes a new leaf, so `w.grad` stays `None`. `volatile=True` no longer disables gradients at all
(it only warns): that takes `with torch.no_grad():` now.

## Symptoms
`UserWarning: volatile was removed and now has no effect. Use `with torch.no_grad():` instead.`;
gradients that are `None` or stop at the wrapped value; more memory than expected in
evaluation code that relied on `volatile=True`.

## Fix safety
The fix removes the wrapper, turning `Variable(x, requires_grad=True)` into
`x.requires_grad_()`. It is safe when `x` is a freshly made tensor that cannot have a history
(`torch.zeros(...)`, `torch.from_numpy(a)`, `torch.tensor(data)`, `x.data`, `x.detach()`):
the wrapper's detach changed nothing there. For any other `x` it is unsafe, because
`Variable(x)` detached `x`: without the wrapper, gradients flow back into `x` if it requires
grad, and `x.requires_grad_()` changes `x` itself (write `x.detach().requires_grad_()` to keep
a separate leaf). With `volatile=` the fix drops the flag and is unsafe: the flag has no effect
any more, but the no-gradient intent needs a `torch.no_grad()` block that the fix cannot write.
The `Variable` import is left in place. Calls with other arguments get no fix. A `Variable`
imported under another name (`from torch.autograd import Variable as Var`) is recognised too,
and so is one a star import brings (`from torch.autograd import *`).
""",
        "zh": """
## What it catches
调用 `torch.autograd.Variable(x)`，无论以何种方式导入（`from torch.autograd import Variable`、
`torch.autograd.variable.Variable`），带或不带 `requires_grad=`，以及已过时的 `volatile=`；
还有事后在张量上设置这个标志的写法（对网络的每个参数 `p.volatile = True`、`next_q.volatile = False`），
只在导入了 torch 的文件中报告。还包括经由项目里的辅助函数传入这个参数的 0.3 写法
`to_var(x, volatile=True)`：调用本文件中带 `volatile` 参数且调用了 `Variable` 的函数，
或调用其他模块中名字表明它生成 Variable 的函数（`to_var`、`make_variable`），并传入 `volatile=`（不是 `False`）。

## Why is this bad?
从 PyTorch 0.4 起 `Variable` 和 `Tensor` 已经合并：每个张量都会记录自己的自动求导历史，
也都有 `requires_grad`、`.grad` 和 `.backward()`。这个包装只是为了兼容旧代码而保留，而且它并非
什么都不做：`Variable(x)` 返回的是 `x.detach()`，一个与 `x` 共享内存、但不带计算历史、
也不需要梯度的新张量。所以包装一个中间结果会切断计算图，梯度在这里悄无声息地断掉；
`Variable(w, requires_grad=True)` 会生成一个新的叶子张量，`w.grad` 始终是 `None`。
`volatile=True` 也已经完全不能关闭梯度了（只会给出警告），现在要用 `with torch.no_grad():`。

## Symptoms
`UserWarning: volatile was removed and now has no effect. Use `with torch.no_grad():` instead.`；
梯度为 `None` 或在被包装的值处中断；依赖 `volatile=True` 的推理代码占用的显存比预期多。

## Fix safety
修复会去掉包装，并把 `Variable(x, requires_grad=True)` 改成 `x.requires_grad_()`。
当 `x` 是刚创建、不可能带计算历史的张量时（`torch.zeros(...)`、`torch.from_numpy(a)`、
`torch.tensor(data)`、`x.data`、`x.detach()`），修复是安全的：包装里的 detach 在这里本来就没有作用。
对其他 `x` 则不安全，因为 `Variable(x)` 会 detach `x`：去掉包装后，如果 `x` 需要梯度，梯度会流回 `x`；
而 `x.requires_grad_()` 会修改 `x` 本身（若想保留一个独立的叶子张量，请写 `x.detach().requires_grad_()`）。
带 `volatile=` 时修复会删掉这个参数，也是不安全的：该参数虽然早已不起作用，但“不记录梯度”的本意
需要一个 `torch.no_grad()` 代码块，而修复无法替你写出来。`Variable` 的导入语句保持不变。
带其他参数的调用不提供修复。以别名导入的 `Variable`（`from torch.autograd import Variable as Var`）同样会被识别，
星号导入带来的（`from torch.autograd import *`）也一样。
""",
    },
    example="""
import torch
from torch.autograd import Variable

inputs = Variable(torch.randn(8, 3))
weights = Variable(torch.zeros(3, 2), requires_grad=True)
""",
    use_instead="""
import torch

inputs = torch.randn(8, 3)
weights = torch.zeros(3, 2).requires_grad_()
""",
)

# torch functions that return a new tensor with no autograd history (unless requires_grad=).
FRESH_FACTORIES = frozenset(
    """
tensor zeros ones empty full rand randn randint randperm arange linspace logspace eye
from_numpy zeros_like ones_like empty_like full_like rand_like randn_like randint_like
""".split()
)
# Tensor methods that keep "no history" when applied to a tensor without one.
HISTORY_KEEPING_METHODS = frozenset(
    """
to cuda cpu float double half bfloat16 long int short bool byte char type contiguous
view reshape unsqueeze squeeze permute transpose t clone pin_memory
""".split()
)
# Expressions that can stand where a call stood without parentheses.
ATOMS = (
    ast.Name,
    ast.Attribute,
    ast.Call,
    ast.Subscript,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Set,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
FIXABLE_KEYWORDS = frozenset({"requires_grad", "volatile"})


@PITFALL.static(ast.Call, names={"Variable"}, imported=True)
def check(call: ast.Call, ctx: Context) -> list[Finding] | None:
    if ctx.qualname(call.func) not in VARIABLE_QUALNAMES:
        return None
    if in_compat_fallback(ctx):
        return None  # code kept for older torch versions, which never runs on this one
    keywords = {kw.arg: kw.value for kw in call.keywords}
    volatile = keywords.get("volatile")
    variant = "volatile" if volatile is not None and not _is_false(volatile) else ""
    return [ctx.finding(PITFALL, call, variant, fix=_unwrap(call, keywords, ctx))]


@PITFALL.static(ast.Attribute, names={"volatile"})
def check_volatile_attribute(node: ast.Attribute, ctx: Context) -> list[Finding] | None:
    """`p.volatile = True` on the parameters of a net, `next_q.volatile = False`: the 0.3 way
    to turn gradients off and on again, now only a warning."""
    if type(node.ctx) is not ast.Store or type(node.value) is not ast.Name:
        return None
    if node.value.id in ("self", "cls") or not ctx.imports_torch:
        return None  # an object's own `volatile` setting (a data loader's option)
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    if not (
        isinstance(statement, ast.Assign)
        and statement.targets == [node]
        and isinstance(statement.value, ast.Constant)
        and type(statement.value.value) is bool
    ):
        return None
    if in_compat_fallback(ctx):
        return None
    return [ctx.finding(PITFALL, node, "volatile_attribute", target=node.value.id)]


@PITFALL.static(ast.Module)
def check_helpers(tree: ast.Module, ctx: Context) -> Iterator[Finding]:
    """`to_var(x, volatile=True)`, `make_variable(images, volatile=True)`: a helper of the project
    that hands the flag on to `Variable` (see the docs)."""
    if "volatile" not in ctx.source or "torch" not in ctx.source:
        return  # (the imports are not read yet: this runs before the walk)
    found = index(ctx)
    variables = _variable_names(tree)
    for at in found.by_class.get(ast.keyword, ()):
        keyword = found.nodes[at]
        if keyword.arg != "volatile" or _is_false(keyword.value):
            continue
        scope = found.scopes[at]
        if (
            type(keyword.value) is ast.Name
            and hasattr(scope, "args")
            and is_parameter(scope, keyword.value.id)
        ):
            continue  # a helper handing on its own parameter: reported where its callers set it
        call = found.nodes[found.above[at]]
        name = call_name(call)
        if name is None or name in variables:
            continue  # `Variable(...)` itself: reported by `check`
        if _hands_on_volatile(name, variables, ctx, found):
            yield ctx.finding(PITFALL, call, "helper_volatile", function=name)


def _variable_names(tree: ast.Module) -> set[str]:
    """The names `Variable` is called by: its own, and those the module's imports give it
    (`from torch.autograd import Variable as V`). Read from the statements, as this runs before
    the walk reads the imports."""
    names = {"Variable"}
    for statement in tree.body:
        if type(statement) is ast.ImportFrom and statement.module in _VARIABLE_MODULES:
            names.update(a.asname for a in statement.names if a.name == "Variable" and a.asname)
    return names


_VARIABLE_MODULES = frozenset({"torch.autograd", "torch.autograd.variable"})


def _hands_on_volatile(name: str, variables: set[str], ctx: Context, found) -> bool:
    """`name` is a function of the file with a `volatile` parameter that calls `Variable`, or,
    when the file defines no function of that name, one whose name says it makes a variable or
    one another module of the project defines so (rdpg's `to_tensor` in util.py)."""
    function = top_level_functions(ctx).get(name)
    if function is None:
        return "var" in name.lower() or ctx.project.has(VOLATILE_HELPER + name)
    return is_parameter(function, "volatile") and bool(found.calls_named(function, variables))


def _unwrap(call: ast.Call, keywords: dict, ctx: Context):
    if len(call.args) != 1 or isinstance(call.args[0], ast.Starred):
        return None
    if not set(keywords) <= FIXABLE_KEYWORDS:  # name=, _grad_fn=, **options
        return None
    data = call.args[0]
    if _has_comment_outside(call, data, ctx):  # the comment would be lost with the wrapper
        return None
    text = ctx.text(data)
    if not isinstance(data, ATOMS) or "\n" in text:
        text = f"({text})"
    requires_grad = keywords.get("requires_grad")
    if requires_grad is not None and not _is_false(requires_grad):
        flag = "" if _is_true(requires_grad) else ctx.text(requires_grad)
        text = f"{text}.requires_grad_({flag})"
    volatile = keywords.get("volatile")
    safe = _has_no_history(data, ctx) and (volatile is None or _is_false(volatile))
    return ctx.fix(PITFALL, "safe" if safe else "unsafe", ctx.replace(call, text))


def _has_no_history(expr: ast.expr, ctx: Context) -> bool:
    """A tensor made right here that cannot require grad: detaching it changes nothing."""
    if isinstance(expr, ast.Attribute):
        return expr.attr == "data"  # `x.data` is already cut from the graph
    if not isinstance(expr, ast.Call):
        return False
    if any(kw.arg == "requires_grad" and not _is_false(kw.value) for kw in expr.keywords):
        return False
    func = expr.func
    qualname = ctx.qualname(func)
    if qualname is not None:
        head, _, last = qualname.rpartition(".")
        return head == "torch" and last in FRESH_FACTORIES
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == "detach":
        return True
    return func.attr in HISTORY_KEEPING_METHODS and _has_no_history(func.value, ctx)


def _has_comment_outside(call: ast.Call, data: ast.expr, ctx: Context) -> bool:
    call_start, call_end = ctx.span(call)
    data_start, data_end = ctx.span(data)
    source = ctx.source
    return "#" in source[call_start:data_start] or "#" in source[data_end:call_end]


def _is_true(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def _is_false(expr: ast.expr | None) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is False
