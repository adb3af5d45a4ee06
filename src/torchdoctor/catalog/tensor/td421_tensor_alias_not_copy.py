"""TD421 tensor-alias-not-copy: `b = a` then an in-place change through `b`, and `a` read again."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    is_name,
    BlockKey,
    Context,
    Finding,
    Kind,
    Pitfall,
    block_names,
    per_file,
    shorten,
)

PITFALL = Pitfall(
    code="TD421",
    name="tensor-alias-not-copy",
    title={
        "en": "Tensor changed in place through an alias, then read as if unchanged",
        "zh": "通过别名原地修改了张量，之后又当作未修改的值读取",
    },
    messages={
        "": {
            "en": "`{alias} = {source}` makes `{alias}` another name for the same {what}, not a "
            "copy: `{write}` (line {write_line}) also changes `{source}`, which is read again "
            "on line {read_line}; use `{alias} = {source}.{copy}()`",
            "zh": "`{alias} = {source}` 只是给同一个{what}起了另一个名字，并没有复制："
            "`{write}`（第 {write_line} 行）同时改变了 `{source}`，而它在第 {read_line} 行又被"
            "读取；请写成 `{alias} = {source}.{copy}()`",
        },
    },
    fix_title={"en": "Copy the value instead of aliasing it", "zh": "复制该值，而不是起别名"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A plain assignment of one name to another, `b = a`, where `a` is certainly a tensor or a numpy
array, followed in the same block by an in-place change through `b` (`b += 1`, `b *= s`,
`b[mask] = 0`, `b.add_(x)`, any `*_` method of a tensor, `b.fill(0)` or `b.sort()` of an
array), and then by a later statement of that block that reads the values of `a` again, with
neither name rebound in between.

## Why is this bad?
Assignment in Python never copies: `b = a` gives the same tensor a second name. An in-place
operation through `b` changes the one object both names refer to, so `a` afterwards holds the
changed values. Code that reads `a` after that (a residual, the input kept "for later", the
original image, a target compared with the prediction) silently computes with the modified
values: no error, only wrong numbers. `b = a.clone()` (or `a.copy()` for a numpy array) makes
the independent copy that was meant; an out-of-place operation (`b = b + 1`) works too.

## Symptoms
A value that should have stayed as it was changes "by itself"; a residual connection that adds
the already-updated activation; metrics or images that show the processed data where the
original was expected. With autograd, a later backward may fail with `one of the variables
needed for gradient computation has been modified by an inplace operation`.

## Fix safety
The fix replaces `b = a` by `b = a.clone()` (`a.copy()` for a numpy array). It is unsafe: it
changes what the program computes (that is its point), the copy costs memory, and code that
meant `a` to be updated through `b` would now see it unchanged; in that case write the update
on `a` itself.

## Known problems
Only aliases in one statement list are followed: an in-place change or a read of `a` nested in
an `if`, a loop or another function is not looked at, and a change through other code (a
function `b` is passed to) is not seen. Reads of `a` that only look at its shape, dtype or
device are not counted, since in-place operations keep them.
""",
        "zh": """
## What it catches
把一个名字直接赋给另一个名字 `b = a`，且 `a` 确定是张量或 numpy 数组；之后在同一语句块中通过 `b`
进行原地修改（`b += 1`、`b *= s`、`b[mask] = 0`、`b.add_(x)`、张量的任何 `*_` 方法、数组的
`b.fill(0)` 或 `b.sort()`），随后该语句块中又有语句再次读取 `a` 的值，期间两个名字都没有被重新绑定。

## Why is this bad?
Python 的赋值从不复制：`b = a` 只是给同一个张量起了第二个名字。通过 `b` 的原地操作修改的是两个名字
共同指向的那个对象，所以之后 `a` 中保存的也是修改后的值。此后再读取 `a` 的代码（残差、"留着以后用"的
输入、原始图像、与预测比较的目标）会在不知不觉中使用被修改过的值：没有报错，只有错误的数字。
`b = a.clone()`（numpy 数组用 `a.copy()`）才会得到本来想要的独立副本；也可以改用非原地操作
（`b = b + 1`）。

## Symptoms
本应保持不变的值"自己"变了；残差连接加上的是已经被更新过的激活值；指标或图像显示的是处理后的数据，
而不是原始数据。使用 autograd 时，之后的反向传播可能报
`one of the variables needed for gradient computation has been modified by an inplace operation`。

## Fix safety
修复把 `b = a` 改为 `b = a.clone()`（numpy 数组为 `a.copy()`）。它是不安全的：它改变了程序的计算结果
（这正是修复的目的），复制会占用内存；如果代码本来就想通过 `b` 更新 `a`，修复后 `a` 将保持不变，
这种情况下请直接对 `a` 进行更新。

## Known problems
只追踪同一个语句列表中的别名：嵌套在 `if`、循环或另一个函数中的原地修改或对 `a` 的读取不会被检查，
通过其他代码（`b` 被传入的函数）进行的修改也看不到。只查看 `a` 的形状、dtype 或设备的读取不计入，
因为原地操作不会改变它们。
""",
    },
    example="""
import torch

x = torch.randn(4, 8)
h = x
h += torch.randn(4, 8)
out = h + x
""",
    use_instead="""
import torch

x = torch.randn(4, 8)
h = x.clone()
h += torch.randn(4, 8)
out = h + x
""",
)

# In-place methods that change no value: the alias is meant to share the flag.
_NOT_VALUES = frozenset({"requires_grad_", "share_memory_", "retain_grad", "pin_memory_"})
# numpy methods that change the array in place (their tensor namesakes return a new tensor).
_ARRAY_IN_PLACE = frozenset({"fill", "sort", "partition", "put", "resize", "itemset"})
# What in-place operations keep: reading these is not reading the values.
_METADATA = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout", "itemsize"}
)
_METADATA_METHODS = frozenset({"size", "dim", "numel", "nelement", "ndimension", "get_device"})
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COPIES = {Kind.TENSOR: "clone", Kind.NDARRAY: "copy"}
_WHAT = {Kind.TENSOR: {"en": "tensor", "zh": "张量"}, Kind.NDARRAY: {"en": "array", "zh": "数组"}}


@PITFALL.static(ast.Assign)
def check(node: ast.Assign, ctx: Context) -> Iterator[Finding]:
    if len(node.targets) != 1:
        return
    target, value = node.targets[0], node.value
    if not (type(target) is ast.Name and type(value) is ast.Name):  # every assignment
        return
    alias, source = target.id, value.id
    if alias == source:
        return
    kind = ctx.kind_of(value)
    if kind not in _COPIES:
        return
    owner = ctx.parent()
    found = ctx.block_position(node, owner) if owner is not None else None
    if found is None:
        return
    block, position = found
    if _last_in_place_writes(ctx, BlockKey(block), kind).get(alias, -1) <= position:
        return  # nothing later in the block changes the alias in place: no names to read
    names = block_names(ctx, block)
    parents = names.index.parents
    write = _in_place_write(names, block, position, alias, kind, parents)
    if write is None:
        return
    changed = names.last_bound_before(source, write)
    if changed is not None and changed > position:
        return  # `a` was rebound between the alias and the write: it is another object
    read = _next_read(names, block, write, source, parents)
    if read is None:
        return
    copy = _COPIES[kind]
    yield ctx.finding(
        PITFALL,
        node,
        fix=ctx.fix(PITFALL, "unsafe", ctx.replace(value, f"{source}.{copy}()")),
        alias=alias,
        source=source,
        what=_WHAT[kind],
        write=shorten(ctx.text(block[write]), 40),
        write_line=block[write].lineno,
        read_line=read.lineno,
        copy=copy,
    )


def _in_place_write(names, block, position, alias, kind, parents) -> int | None:
    """The position of the first later statement of the block that changes `alias` in place,
    when every statement before it only reads `alias` (a statement that rebinds it, or may
    change it from inside a nested block, ends the search)."""
    for at, uses in names.mentions_after(alias, position):
        statement = block[at]
        if _writes_in_place(statement, alias, kind):
            return at
        if isinstance(statement, _NESTED_SCOPES) or not uses:
            return None
        for use in uses:
            if not isinstance(use.ctx, ast.Load):
                return None
            parent = parents.get(use)
            if isinstance(parent, ast.Attribute) and parent.attr.endswith("_"):
                return None  # a change nested in this statement: not followed
            if isinstance(parent, ast.Subscript) and not isinstance(parent.ctx, ast.Load):
                return None
    return None


@per_file
def _last_in_place_writes(ctx: Context, key: BlockKey, kind: Kind) -> dict[str, int]:
    """For each name, the position of the block's last statement that changes it in place (as
    `_writes_in_place` reads it): read once per block, however many aliases the block makes."""
    last: dict[str, int] = {}
    for position, statement in enumerate(key.block):
        kind_of_statement = type(statement)  # the common cases first, without a call
        if kind_of_statement is ast.Assign:
            targets = statement.targets
            if len(targets) == 1 and type(targets[0]) is not ast.Subscript:
                continue  # `b = ...` rebinds `b`: nothing written in place
        elif kind_of_statement is not ast.AugAssign and kind_of_statement is not ast.Expr:
            continue
        for name in _written_names(statement):
            if _writes_in_place(statement, name, kind):
                last[name] = position
    return last


def _written_names(statement: ast.stmt) -> list[str]:
    """The names `_writes_in_place` may find `statement` changing: an augmented target, the
    root of a subscript target, the receiver of a method call statement."""
    if isinstance(statement, ast.AugAssign):
        targets = [statement.target]
    elif isinstance(statement, ast.Assign):
        # `b = ...` rebinds: only a subscript target (`b[...] = ...`) writes in place.
        targets = [target for target in statement.targets if type(target) is ast.Subscript]
    elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        # Only a method that changes its receiver in place (as `_writes_in_place` tells them).
        changes = isinstance(func, ast.Attribute) and (
            func.attr.endswith("_") or func.attr in _ARRAY_IN_PLACE
        )
        targets = [func.value] if changes else []
    else:
        targets = []
    names = []
    for target in targets:
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            names.append(target.id)
    return names


def _writes_in_place(statement: ast.stmt, alias: str, kind: Kind) -> bool:
    """`b += ...`, `b[...] = ...`, `b[...] += ...`, `b.add_(...)` as a statement of its own."""
    if isinstance(statement, ast.AugAssign):
        return is_name(statement.target, alias) or _subscript_of(statement.target, alias)
    if isinstance(statement, ast.Assign):
        return any(_subscript_of(target, alias) for target in statement.targets)
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    if not (isinstance(func, ast.Attribute) and is_name(func.value, alias)):
        return False
    method = func.attr
    if kind is Kind.NDARRAY:
        return method in _ARRAY_IN_PLACE
    return method.endswith("_") and not method.startswith("_") and method not in _NOT_VALUES


def _subscript_of(target: ast.AST, alias: str) -> bool:
    if not isinstance(target, ast.Subscript):
        return False
    while isinstance(target, ast.Subscript):
        target = target.value
    return is_name(target, alias)


def _next_read(names, block, write, source, parents) -> ast.stmt | None:
    """The first later statement of the block that reads the values of `source`; None when it
    is rebound (or used in a nested scope) first."""
    for at, uses in names.mentions_after(source, write):
        statement = block[at]
        if isinstance(statement, _NESTED_SCOPES) or not uses:
            return None
        if any(not isinstance(use.ctx, ast.Load) for use in uses):
            # `a = a + 1` reads the changed `a` first; `a = other` just rebinds it, and a loop
            # or a block that rebinds it may do so before it reads it.
            simple = isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            return statement if simple and _reads_values(uses, parents) else None
        if _reads_values(uses, parents):
            return statement
    return None


def _reads_values(uses: list[ast.Name], parents) -> bool:
    for use in uses:
        if not isinstance(use.ctx, ast.Load):
            continue
        parent = parents.get(use)
        if isinstance(parent, ast.Attribute) and (
            parent.attr in _METADATA or parent.attr in _METADATA_METHODS
        ):
            continue
        if isinstance(parent, ast.Compare) and all(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops
        ):
            continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in ("len", "id", "isinstance", "type")
        ):
            continue
        return True
    return False
