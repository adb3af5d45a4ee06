"""TD420 list-of-tensors-as-mask: a tensor indexed with a Python list of bool tensors."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Kind,
    Pitfall,
    bindings,
    index_of,
    names_assigned,
    scope_of,
    shorten,
)

PITFALL = Pitfall(
    code="TD420",
    name="list-of-tensors-as-mask",
    title={
        "en": "Tensor indexed with a Python list of bool tensors",
        "zh": "用由 bool 张量组成的 Python 列表索引张量",
    },
    messages={
        "": {
            "en": "`{mask}` is a Python list of bool tensors, not a mask: `{x}[...]` reads it "
            "as a tuple of indices, one per dimension, and returns an empty tensor (or all of "
            "`{x}` with a new dimension) instead of the selected elements, with only a "
            "deprecation warning; index with `torch.stack({mask_short})`",
            "zh": "`{mask}` 是由 bool 张量组成的 Python 列表，不是掩码：`{x}[...]` 会把它当成"
            "按维度排列的索引元组，返回空张量（或加了一个新维度的整个 `{x}`），而不是选中的元素，"
            "只给出一条弃用警告；请用 `torch.stack({mask_short})` 作为索引",
        },
        "store": {
            "en": "`{mask}` is a Python list of bool tensors, not a mask: `{x}[...] = ...` "
            "reads it as a tuple of indices, one per dimension, and writes no element (or "
            "every element), with only a deprecation warning; index with "
            "`torch.stack({mask_short})`",
            "zh": "`{mask}` 是由 bool 张量组成的 Python 列表，不是掩码：`{x}[...] = ...` 会把它"
            "当成按维度排列的索引元组，一个元素也不写（或写入全部元素），只给出一条弃用警告；"
            "请用 `torch.stack({mask_short})` 作为索引",
        },
    },
    fix_title={"en": "Stack the list into one bool tensor", "zh": "把列表堆叠成一个 bool 张量"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Make the mask one bool tensor: `torch.stack(mask)`, or compute it without a "
        "Python loop (`x > 0` rather than `[v > 0 for v in x]`).",
        "zh": "把掩码做成一个 bool 张量：`torch.stack(mask)`，或者不用 Python 循环直接计算"
        "（用 `x > 0` 而不是 `[v > 0 for v in x]`）。",
    },
    docs={
        "en": """
## What it catches
A tensor indexed (read or assigned) with a list comprehension whose elements are bool tensors:
comparisons of a tensor's elements (`[v > 0 for v in x]`, `[x[i] > t for i in range(n)]`) or
`.any()` / `.all()` of them, written in the index or held by a name that is assigned only such a
list in the same function and never changed (`append`, `mask[i] = ...`).

## Why is this bad?
Iterating over a tensor yields tensors, so `[v > 0 for v in x]` is
`[tensor(True), tensor(False), ...]`, which is not `[True, False, ...]`. numpy turns either
list into a bool array, but PyTorch reads a list that holds tensors as a tuple of indices, one
per dimension (`x[mask]` is `x[tuple(mask)]`). Each 0-dim bool tensor then acts like a new axis
of length 1 (True) or 0 (False): with PyTorch 2.13, `x[mask]` for a 1-D `x` of 4 elements and
one False in the mask is `tensor([], size=(0, 4))`, with no False it is `x` with an extra
dimension, and `x[mask] = 0` changes nothing. No error is raised, only a deprecation warning,
and the empty selection flows on (a loss over no elements, a count of zero). Rows of a 2-D
tensor make a list of 1-D masks, which fails with `too many indices`.

## Symptoms
`UserWarning: Using a non-tuple sequence for multidimensional indexing is deprecated and will
be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be
interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a
different result`; a selection of shape `(0, n)`; an assignment through the mask that changes
nothing; `IndexError: too many indices for tensor of dimension 2`.

## Fix safety
The fix wraps the list in `torch.stack(...)`, which makes it the 1-D bool mask that was meant,
on the device of its elements. It is unsafe because it changes what the line computes (that is
its point) and because `torch.stack` of an empty list raises `stack expects a non-empty
TensorList` where the list index returned an empty tensor: when the indexed tensor may be
empty, use `torch.tensor(mask, dtype=torch.bool)` or compute the mask without a loop.

## Known problems
Only comprehensions whose elements are certainly bool tensors are followed, and only when the
indexed value is known to be a tensor: a list built by `append` in a loop, a list literal
(`x[[a > 0, b > 0]]` may index two dimensions on purpose) and numpy arrays (where such a list
works as a mask) are not reported.
""",
        "zh": """
## What it catches
用列表推导式索引（读取或赋值）张量，而推导式的元素是 bool 张量：对张量元素的比较
（`[v > 0 for v in x]`、`[x[i] > t for i in range(n)]`）或对它们调用 `.any()` / `.all()`，
可以直接写在索引里，也可以经过一个在同一函数中只被赋予这种列表、且从未被修改（`append`、
`mask[i] = ...`）的名字。

## Why is this bad?
遍历张量得到的是张量，所以 `[v > 0 for v in x]` 是 `[tensor(True), tensor(False), ...]`，
而不是 `[True, False, ...]`。numpy 会把这两种列表都转成 bool 数组，但 PyTorch 会把含有张量的列表
当作按维度排列的索引元组（`x[mask]` 就是 `x[tuple(mask)]`）。于是每个零维 bool 张量都像一个长度为
1（True）或 0（False）的新维度：在 PyTorch 2.13 中，对含 4 个元素的一维 `x`，只要掩码里有一个
False，`x[mask]` 就是 `tensor([], size=(0, 4))`；没有 False 时则是多了一个维度的 `x`；而
`x[mask] = 0` 什么也不改。不会报错，只有一条弃用警告，空的选择结果继续往下传（对零个元素求损失、
计数为零）。二维张量的各行会得到一组一维掩码，这时报 `too many indices`。

## Symptoms
`UserWarning: Using a non-tuple sequence for multidimensional indexing is deprecated and will
be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be
interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a
different result`；形状为 `(0, n)` 的选择结果；通过掩码赋值却什么也没改；
`IndexError: too many indices for tensor of dimension 2`。

## Fix safety
修复用 `torch.stack(...)` 包住这个列表，使它成为本来想要的一维 bool 掩码，并留在其元素所在的设备上。
它是不安全的：它改变了这一行的计算结果（这正是修复的目的）；而且对空列表调用 `torch.stack` 会报
`stack expects a non-empty TensorList`，原来的列表索引则返回空张量：如果被索引的张量可能为空，
请用 `torch.tensor(mask, dtype=torch.bool)`，或者不用循环直接计算掩码。

## Known problems
只追踪元素确定是 bool 张量的推导式，并且只在被索引的值已知是张量时报告：在循环中用 `append`
构造的列表、列表字面量（`x[[a > 0, b > 0]]` 可能是有意按两个维度索引）以及 numpy 数组
（这种列表在 numpy 中可以当掩码用）都不会被报告。
""",
    },
    example="""
import torch

scores = torch.randn(8)
keep = [s > 0 for s in scores]
positive = scores[keep]
""",
    use_instead="""
import torch

scores = torch.randn(8)
keep = scores > 0
positive = scores[keep]
""",
)

# Comparisons that make a bool tensor of a tensor (not `is`, `in`).
_ELEMENTWISE = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)
# Methods that reduce a tensor to a 0-dim bool tensor when called with no argument.
_REDUCTIONS = frozenset({"any", "all"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@PITFALL.static(ast.Subscript)
def check(node: ast.Subscript, ctx: Context) -> Iterator[Finding]:
    index = node.slice
    if (
        not isinstance(index, (ast.ListComp, ast.Name))
        or ctx.kind_of(node.value) is not Kind.TENSOR
    ):
        return
    if isinstance(index, ast.ListComp):
        comprehension = index if _bool_tensors(index, ctx) else None
    else:
        comprehension = _named_comprehension(index.id, ctx)
    if comprehension is None:
        return
    fix = None
    if ctx.qualname(ast.Name(id="torch", ctx=ast.Load())) == "torch":
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(index, f"torch.stack({ctx.text(index)})"))
    yield ctx.finding(
        PITFALL,
        node,
        "" if isinstance(node.ctx, ast.Load) else "store",
        fix=fix,
        mask=shorten(ctx.text(index), 50),
        mask_short=index.id if isinstance(index, ast.Name) else "[...]",
        x=shorten(ctx.text(node.value), 30),
    )


def _is_list_comprehension(value: ast.expr) -> bool:
    return type(value) is ast.ListComp


def _named_comprehension(name: str, ctx: Context) -> ast.ListComp | None:
    """The comprehension of bool tensors that `name` holds: its only binding in the scope being
    read, with no use that could change the list (`name.append(...)`, `name[i] = ...`)."""
    if name not in names_assigned(ctx, _is_list_comprehension):  # most names: none read
        return None
    scope = scope_of(name, ctx)
    inner = next((a for a in reversed(ctx.ancestors) if isinstance(a, _SCOPES)), ctx.tree)
    found = bindings(ctx, scope, name) if scope is inner else None
    if not found or len(found) != 1:
        return None
    value = found[0].value
    if found[0].augmented or not isinstance(value, ast.ListComp) or not _bool_tensors(value, ctx):
        return None
    uses = index_of(ctx, scope)
    for use in uses.names_in(scope, name):
        parent = uses.parents.get(use)
        if isinstance(parent, ast.Attribute) or (
            isinstance(parent, ast.Subscript) and parent.value is use
        ):
            return None  # `mask.append(...)`, `mask[i] = ...`: the list may change
    return value


def _bool_tensors(comprehension: ast.ListComp, ctx: Context) -> bool:
    """Every element of `[elt for target in iter]` is a bool tensor: a comparison or an
    `.any()` / `.all()` of a tensor."""
    if len(comprehension.generators) != 1:
        return False
    generator = comprehension.generators[0]
    if generator.is_async or not isinstance(generator.target, ast.Name):
        return False
    target = generator.target.id
    over_tensor = ctx.kind_of(generator.iter) is Kind.TENSOR
    element = comprehension.elt
    if isinstance(element, ast.Compare):
        return all(isinstance(op, _ELEMENTWISE) for op in element.ops) and any(
            _a_tensor(operand, target, over_tensor, ctx)
            for operand in (element.left, *element.comparators)
        )
    return (
        isinstance(element, ast.Call)
        and isinstance(element.func, ast.Attribute)
        and element.func.attr in _REDUCTIONS
        and not element.args
        and not element.keywords
        and _a_tensor(element.func.value, target, over_tensor, ctx)
    )


def _a_tensor(expr: ast.expr, target: str, over_tensor: bool, ctx: Context) -> bool:
    """`expr` is a tensor: the comprehension's target (or a subscript of it) when the loop runs
    over a tensor, or a value the context knows is a tensor and that is not read through the
    target (whose name may shadow an outer tensor's)."""
    root = expr
    while isinstance(root, ast.Subscript):
        root = root.value
    if isinstance(root, ast.Name) and root.id == target:
        return over_tensor
    if any(isinstance(n, ast.Name) and n.id == target for n in _outside_slices(expr)):
        return False
    return ctx.kind_of(expr) is Kind.TENSOR


def _outside_slices(expr: ast.AST) -> Iterator[ast.AST]:
    """The nodes of `expr` that are not inside a subscript's index (`x[i]` reads `x`, not
    `i`, as the value)."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.Subscript):
            stack.append(node.value)
        else:
            stack.extend(ast.iter_child_nodes(node))
