"""TD403 non-contiguous-view: `.view()` that merges dimensions a permute/transpose has reordered."""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchdoctor.catalog.sdk import (
    runs_as_script,
    BlockKey,
    Context,
    Finding,
    Pitfall,
    assigned_before,
    binds_in_header,
    attribute_values,
    block_names,
    index_of,
    is_self_attribute,
    keyword_value,
    is_parameter,
    parameter_default,
    passed_values,
    per_file,
    reaching_assignment,
)

PITFALL = Pitfall(
    code="TD403",
    name="non-contiguous-view",
    # The top-k accuracy helper (`pred.t()`, then `correct[:k].view(-1)`) often lives in a
    # `utils/eval.py` that never imports torch.
    needs_torch=False,
    title={
        "en": "`.view()` on a permuted or transposed tensor",
        "zh": "在 permute/transpose 之后的张量上调用 `.view()`",
    },
    messages={
        "": {
            "en": "`.view()` merges dimensions that `{permute}` has reordered: the tensor is not "
            "contiguous, so this raises at run time; use `.reshape(...)` or "
            "`.contiguous().view(...)`",
            "zh": "`.view()` 要合并的维度已被 `{permute}` 打乱顺序：张量不连续，运行时会报错；"
            "请改用 `.reshape(...)` 或 `.contiguous().view(...)`",
        },
        "name": {
            "en": "`{name}` comes from `{permute}` (line {line}) and is not contiguous: `.view()` "
            "cannot merge its reordered dimensions and raises at run time; use "
            "`.reshape(...)` or `.contiguous().view(...)`",
            "zh": "`{name}` 来自第 {line} 行的 `{permute}`，不是连续张量：`.view()` 无法合并被打乱的维度，"
            "运行时会报错；请改用 `.reshape(...)` 或 `.contiguous().view(...)`",
        },
        "kept": {
            "en": "`{name}` is computed elementwise from `{source}`, which comes from `{permute}` "
            "(line {line}): since PyTorch 1.7 an elementwise result keeps its first operand's "
            "layout, so `{name}` is not contiguous either and `.view()` raises at run time when "
            "it merges the reordered dimensions; use `.reshape(...)` or `.contiguous().view(...)`",
            "zh": "`{name}` 由 `{source}` 逐元素计算得到，而 `{source}` 来自第 {line} 行的 `{permute}`："
            "从 PyTorch 1.7 起，逐元素运算的结果沿用第一个操作数的内存布局，所以 `{name}` 同样不连续，`.view()` "
            "合并被打乱的维度时会在运行时报错；请改用 `.reshape(...)` 或 `.contiguous().view(...)`",
        },
    },
    fix_title={
        "en": "Use `.reshape(...)` instead of `.view(...)`",
        "zh": "用 `.reshape(...)` 代替 `.view(...)`",
    },
    fix_applicability="unsafe",
    fix_hint={
        "en": "Use `.reshape(...)` instead of `.view(...)` (it copies only when it must), "
        "or call `.contiguous()` before `.view(...)`.",
        "zh": "把 `.view(...)` 换成 `.reshape(...)`（只在必要时拷贝），或者在 `.view(...)` "
        "之前先调用 `.contiguous()`。",
    },
    docs={
        "en": """
## What it catches
`.view(...)` applied to the result of `.permute(...)`, `.transpose(...)`, `.swapaxes(...)`,
`.movedim(...)`, `.t()`, `.T` or `.mT`, either directly (`x.transpose(1, 2).view(b, -1)`) or
through a name assigned before it (in its block or, when nothing between changes the name, a
block around it), also through elementwise results, casts and moves, which keep their first
operand's layout (`pred.t().type_as(target)`, `x.permute(0, 2, 1).float()`,
`target.transpose(0, 1).cuda()`: a move keeps a dense tensor's strides unless told another
`memory_format=`), and rows sliced off them
(`correct = pred.eq(...)` after `pred = pred.t()`, then `correct[:k].view(-1)`, the top-k
accuracy of the old ImageNet example, which worked up to PyTorch 1.6 and raises since 1.7, when
elementwise results began to keep the layout), when the new shape has
fewer dimensions than the reordered tensor has contiguous pieces. Then the view must merge two
dimensions that are no longer next to each other in memory, which a view cannot do.

It is reported only when the tensor being reordered is known to be contiguous: made by a factory
(`torch.randn`, `torch.zeros` ...), `.view()`, `.reshape()`, `.flatten()` or `.contiguous()`,
unpacked from `topk`, `sort` or `max(dim)`, or the output of a convolution or Linear layer of
the module (`self.conv(x)`, where `self.conv` is only ever an `nn.Conv2d` ...) in a project that
never uses the `channels_last` memory format, in the chain or in the assignment of its name just
before. A function argument or another layer's output may already be permuted in memory (a
`channels_last` feature map), and reordering it again can make it contiguous.

Views that only split dimensions or merge dimensions that stayed in order work and are not
reported, e.g. `x.transpose(1, 2).view(b, c, h, w)` (splits one dimension) or
`x.permute(0, 2, 3, 1).view(1, -1, dim)` (merges two dimensions that kept their order).
A `.contiguous()` between the two calls makes the view legal.

## Why is this bad?
`permute` and `transpose` do not move any data: they return a tensor with reordered strides.
`view` also never copies, so it can only reinterpret memory whose layout already fits the new
shape. Flattening a transposed matrix would need its elements in a different order, so the
call raises. The error often appears late: with a batch size or a head count of 1 the merged
dimension is trivial and the code works, then it fails on real data.

## Symptoms
`RuntimeError: view size is not compatible with input tensor's size and stride (at least one
dimension spans across two contiguous subspaces). Use .reshape(...) instead.`
In old PyTorch versions: `invalid argument 2: input is not contiguous`.

## Fix safety
The fix replaces `.view(` with `.reshape(`. It is unsafe because `reshape` copies when a view
is impossible: the result no longer shares memory with the original, so an in-place write to
one is not seen in the other. Code that relied on that sharing must call `.contiguous()` and
keep the copy explicitly.

## Known problems
The check does not know the sizes. A dimension of size 1 makes any order contiguous, so a view
that merges it works: `v.transpose(0, 1).view(-1)` is fine when `v` has one row. Such code still
breaks as soon as that dimension grows (a batch of two). `.t()` and `.T` are assumed to be
applied to matrices (on a 1-D tensor they do nothing). Views of function arguments are not
checked, because their memory layout is unknown. Rows sliced off a reordered tensor, `x[:k]`,
are reported only when the code shows that `k` can exceed 1 (a number above 1, a loop over a
tuple holding one or a 1 beside a setting: `topk=(1, args.kmax)`,
or a parameter whose default or some call in the same file gives one, or a
`topk` parameter when some file of the project passes `topk=(1, 5)` or calls `accuracy(...,
(1, 5))`, unless the helper is a script's own, which no file imports: a file with an `if
__name__ == "__main__":` block or one parsing its command line at the top level): a top-k
accuracy helper called only with its default `topk=(1,)` views one row, which works.
""",
        "zh": """
## What it catches
对 `.permute(...)`、`.transpose(...)`、`.swapaxes(...)`、`.movedim(...)`、`.t()`、`.T`、`.mT`
的结果调用 `.view(...)`：可以是直接链式调用（`x.transpose(1, 2).view(b, -1)`），也可以是之前赋值的
变量（在同一代码块中，或者在外层代码块中且中间没有改动过它），也包括逐元素运算、类型转换和设备迁移的结果（它们沿用
第一个操作数的内存布局：`pred.t().type_as(target)`、`x.permute(0, 2, 1).float()`、
`target.transpose(0, 1).cuda()`：除非指定了别的 `memory_format=`，迁移会保留稠密张量的步长）以及从中切出的若干行
（`pred = pred.t()` 之后 `correct = pred.eq(...)`，再 `correct[:k].view(-1)`，
即旧版 ImageNet 示例中的 top-k 准确率：它在 PyTorch 1.6 及以前能运行，
从 1.7 起逐元素运算的结果开始沿用输入的布局，于是报错）。当新形状的维数少于重排后张量的
“连续片段”数时报告：这时 view 必须把内存中已经不相邻的两个维度合并，而 view 做不到。

只有在被重排的张量确定是连续的时候才报告：它由工厂函数（`torch.randn`、`torch.zeros` 等）、
`.view()`、`.reshape()`、`.flatten()` 或 `.contiguous()` 得到，由 `topk`、`sort` 或 `max(dim)`
解包得到，或者是模块中卷积层或 Linear 层的输出（`self.conv(x)`，且 `self.conv` 只被赋值为
`nn.Conv2d` 等）并且整个项目从不使用 `channels_last` 内存格式；出现在同一条链中，或出现在紧挨着的
变量赋值中。函数参数或其他层的输出在内存中可能本来就是重排过的（例如 `channels_last` 的特征图），
再重排一次反而可能变得连续。

只拆分维度、或者只合并顺序未变的相邻维度的 view 是合法的，不会报告，例如
`x.transpose(1, 2).view(b, c, h, w)`（拆分一个维度）和 `x.permute(0, 2, 3, 1).view(1, -1, dim)`
（合并的两个维度保持原有顺序）。两次调用之间加上 `.contiguous()` 后 view 也是合法的。

## Why is this bad?
`permute` 和 `transpose` 不搬动数据，只返回步长（stride）重新排列后的张量。`view` 同样从不拷贝，
只能在内存布局本身就符合新形状时重新解释这块内存。把转置后的矩阵展平需要换一种元素顺序，
所以会直接报错。这个错误常常出现得很晚：batch size 或头数为 1 时被合并的维度是平凡的，代码能跑通，
换成真实数据才崩溃。

## Symptoms
`RuntimeError: view size is not compatible with input tensor's size and stride (at least one
dimension spans across two contiguous subspaces). Use .reshape(...) instead.`
旧版本 PyTorch 中的报错是：`invalid argument 2: input is not contiguous`。

## Fix safety
修复把 `.view(` 改成 `.reshape(`。这是不安全的：无法做成视图时 `reshape` 会拷贝数据，结果不再与原张量
共享内存，对其中一个的原地修改在另一个上看不到。如果代码依赖这种共享，应显式调用 `.contiguous()`
并自己保留这份拷贝。

## Known problems
检查时并不知道各维度的大小。大小为 1 的维度放在任何顺序都是连续的，合并它的 view 可以成功：
当 `v` 只有一行时，`v.transpose(0, 1).view(-1)` 没有问题，但只要这个维度变大（例如 batch 变成 2）
就会报错。`.t()` 和 `.T` 被假定作用于矩阵（对一维张量它们什么也不做）。函数参数的内存布局未知，
因此不检查对它们的 view。从重排后的张量切出的行 `x[:k]`，只有在代码表明 `k` 可能大于 1 时才报告
（大于 1 的数字、遍历含有这种数字的元组或 1 与某个设置项并列的元组：`topk=(1, args.kmax)`，
参数的默认值、同一文件中的某次调用给出这种数字，或者项目中
某个文件以 `topk=(1, 5)` 或 `accuracy(..., (1, 5))` 这样调用时的 `topk` 参数，除非该函数属于一个
没有任何文件导入的脚本：带有 `if __name__ == "__main__":` 块，或在顶层解析命令行的文件）：
只以默认 `topk=(1,)` 调用的 top-k 准确率函数只取一行，view 可以成功。
""",
    },
    example="""
import torch

x = torch.randn(8, 16, 32)
y = x.transpose(1, 2).view(8, -1)
""",
    use_instead="""
import torch

x = torch.randn(8, 16, 32)
y = x.transpose(1, 2).reshape(8, -1)
""",
)

# Older releases wrote "with the input tensor's size", today's "with input tensor's size".
PITFALL.error(
    r"view size is not compatible with (?:the )?input tensor's size and stride",
    confidence=0.95,
    cause={
        "en": "`.view()` was called on a tensor that is not contiguous in memory (after "
        "`transpose`, `permute`, `.T`, `expand` or slicing with a step), and the new "
        "shape would have to merge dimensions that are not adjacent in memory.",
        "zh": "对内存中不连续的张量（经过 `transpose`、`permute`、`.T`、`expand` 或带步长的切片）调用了 "
        "`.view()`，而新形状需要合并在内存中并不相邻的维度。",
    },
)
# PyTorch 0.3/0.4: "input is not contiguous at /pytorch/torch/lib/TH/generic/THTensor.c:231".
PITFALL.error(
    r"^(?:invalid argument \d+: )?input is not contiguous(?: at |$)",
    confidence=0.7,
    cause={
        "en": "An old PyTorch refused an operation, most often `.view()`, on a tensor that "
        "is not contiguous in memory (after `transpose` or `permute`).",
        "zh": "旧版 PyTorch 拒绝对内存中不连续的张量（经过 `transpose` 或 `permute`）执行某个操作，"
        "最常见的是 `.view()`。",
    },
)
# The diagnosis told in an issue's prose, no message pasted: "x.view() won't work because of
# contiguity", "x is not contiguous" above the `x.view(...)` that fails.
PITFALL.error(
    r"view\(\)[^\n]{0,80}?\bcontigu|is not contiguous[\s\S]{0,300}?\.view\(",
    types=(),
    confidence=0.7,
    cause={
        "en": "As the text says, `.view()` met a tensor that is not contiguous in memory (after "
        "`transpose`, `permute`, `.T`, `expand` or slicing with a step): `view` never copies, "
        "so it cannot merge dimensions that are not adjacent in memory.",
        "zh": "如文中所说，`.view()` 遇到了内存中不连续的张量（经过 `transpose`、`permute`、`.T`、"
        "`expand` 或带步长的切片）：`view` 从不复制数据，因此无法合并在内存中并不相邻的维度。",
    },
)

# Methods and functions that reorder dimensions without copying.
TRANSPOSES = frozenset({"transpose", "swapaxes", "swapdims"})
MOVES = frozenset({"movedim", "moveaxis"})
MATRIX_TRANSPOSES = frozenset({"t", "T", "mT", "H", "mH"})
PERMUTING = TRANSPOSES | MOVES | MATRIX_TRANSPOSES | {"permute"}
# Calls whose single argument is certainly one integer (a size), not a shape or a dtype.
INT_METHODS = frozenset({"numel", "dim", "item"})
# Results that are laid out contiguously whatever the input.
CONTIGUOUS_METHODS = frozenset({"view", "reshape", "contiguous", "flatten", "unflatten"})
CONTIGUOUS_FUNCTIONS = frozenset(
    """
randn rand randint zeros ones empty full arange linspace eye tensor reshape flatten
""".split()
)
INT_FUNCTIONS = frozenset({"len", "int"})
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)
# `a + b` of two names may join two shape tuples: only these operators make a name a number.
NUMERIC_ONLY = (ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)


@PITFALL.static(ast.Call, names={"view"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if receiver is None or call.keywords:
        return
    rank = _view_rank(call)
    if rank is None:
        return
    block, index = ctx.statement_block() or ([], 0)
    variant, fields = "", {}
    permuted = receiver
    if type(receiver) is ast.Subscript and _leading_slice(receiver.slice):
        if not _more_than_one_row(receiver.slice, ctx):
            return  # `correct[:1]` is one row: any layout views as one
        receiver = receiver.value  # `correct[:k]`: rows of it, laid out as it is
    if isinstance(receiver, ast.Name):
        found = reaching_assignment(
            receiver.id,
            ctx,
            lambda value: _permuting_or_keeping(value, ctx),
            receiver,
            in_place=True,
        )
        if found is None:
            return
        statement, index, block = found
        variant, fields = "name", {"name": receiver.id, "line": statement.lineno}
        permuted = statement.value
        for _ in range(MAX_KEEPING_HOPS):  # `correct = pred.eq(...)` after `pred = pred.t()`
            kept = _layout_source(permuted, ctx)
            if kept is None:
                break
            found = _assignment_before(kept.id, block, index, _permuting_or_keeping, ctx)
            if found is None:
                return
            statement, index = found
            permuted = statement.value
            variant = "kept"
            fields.update(source=kept.id, line=statement.lineno)
    parts = _permuting_parts(permuted, ctx)
    if parts is None:
        return
    pieces = _contiguous_pieces(parts)
    if pieces is None or rank >= pieces or _moves_a_size_one_axis(parts, ctx):
        return
    if not _is_contiguous(parts[1], block, index, ctx):
        return
    fix = ctx.fix(PITFALL, "unsafe", _rename_method(call, "reshape", ctx))
    yield ctx.finding(PITFALL, call, variant, fix=fix, permute=_describe(permuted, ctx), **fields)


def _view_rank(call: ast.Call) -> int | None:
    """How many dimensions `.view(...)` asks for; None when it cannot be told (a shape variable)."""
    args = call.args
    if not args or any(isinstance(arg, ast.Starred) for arg in args):
        return None
    if len(args) > 1:
        return len(args)
    only = args[0]
    if isinstance(only, (ast.Tuple, ast.List)):
        starred = any(isinstance(e, ast.Starred) for e in only.elts)
        return None if starred or not only.elts else len(only.elts)
    return 1 if _is_integer(only) else None


def _is_integer(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        return _is_integer(expr.operand)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ARITHMETIC):
        if _is_integer(expr.left) and _is_integer(expr.right):
            return True
        return (
            isinstance(expr.op, NUMERIC_ONLY)
            and _is_size_like(expr.left)
            and _is_size_like(expr.right)
        )
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in INT_FUNCTIONS
        if not isinstance(func, ast.Attribute):
            return False
        return func.attr in INT_METHODS or func.attr == "size" and bool(expr.args)
    if isinstance(expr, ast.Subscript):  # x.shape[0]
        return (
            isinstance(expr.value, ast.Attribute)
            and expr.value.attr == "shape"
            and _is_integer(expr.slice)
        )
    return False


def _is_size_like(expr: ast.AST) -> bool:
    """An operand of `a * b` that is a number: a literal, a size, or a plain name or attribute."""
    return _is_integer(expr) or isinstance(expr, (ast.Name, ast.Attribute))


def _assignment_before(name: str, block: list[ast.stmt], index: int, wanted, ctx: Context):
    """(statement, position) of the nearest `name = <value>` before `block[index]` when
    `wanted(value, ctx)` holds and nothing between rebinds `name` or changes it in place
    (`y.transpose_(...)`, `y.set_(...)`, `y.data = ...`: strides may change in place)."""
    value, position = assigned_before(
        name, block, index, ctx, in_place=True, wanted=lambda value: wanted(value, ctx)
    )
    return None if value is None else (block[position], position)


def _is_contiguous(tensor: ast.AST, block: list[ast.stmt], index: int, ctx: Context) -> bool:
    """True when `tensor` is surely laid out contiguously (made by a factory, `.view()`,
    `.contiguous()`, a convolution ...), directly, through a name assigned just before in the
    block, or as a parameter that every call in the file passes such a tensor. Anything else may
    already be permuted in memory (a channels_last activation): permuting it again can make it
    contiguous, and the view then works."""
    if isinstance(tensor, ast.Name):
        if _assignment_before(tensor.id, block, index, _makes_contiguous, ctx) is not None:
            return True
        if _unpacked_from_fresh(tensor.id, block, index, ctx):
            return True
        function = ctx.enclosing_function()
        return function is not None and _passed_contiguous(ctx, function, tensor.id)
    return _makes_contiguous(tensor, ctx)


# Methods returning (values, indices) as new tensors, each laid out contiguously.
FRESH_PAIRS = frozenset({"topk", "sort", "max", "min", "kthvalue", "mode", "median"})


def _unpacked_from_fresh(name: str, block: list[ast.stmt], index: int, ctx: Context) -> bool:
    """The last statement before `block[index]` that binds `name` or changes it in place is
    `_, name = x.topk(...)` (or `sort`, `max(dim)`...): a new, contiguous tensor."""
    if not _unpacks(ctx, BlockKey(block)):
        return False  # most blocks: no tuple assignment, no index to read
    position = block_names(ctx, block).last_changed_before(name, index)
    if position is None:
        return False
    statement = block[position]
    return (
        type(statement) is ast.Assign
        and len(statement.targets) == 1
        and type(statement.targets[0]) is ast.Tuple
        and any(type(e) is ast.Name and e.id == name for e in statement.targets[0].elts)
        and type(statement.value) is ast.Call
        and ctx.method_name(statement.value) in FRESH_PAIRS
        and bool(statement.value.args)
    )


@per_file
def _unpacks(ctx: Context, key: BlockKey) -> bool:
    """The block holds a tuple assignment (asked once per block, not once per view)."""
    return any(type(s) is ast.Assign and type(s.targets[0]) is ast.Tuple for s in key.block)


@per_file
def _passed_contiguous(ctx: Context, function: ast.AST, name: str) -> bool:
    """`name` is a parameter of `function` that the function never rebinds, and every call of
    it in the file passes a tensor surely laid out contiguously: a layer's output assigned just
    before the call, say (`boxes = self.bbox_conv(x)`, then `self.build_loss(boxes)`). Calls from
    other files are not seen; with none in this file, nothing is known."""
    if not is_parameter(function, name) or name in _rebound(ctx, function):
        return False
    passed = passed_values(ctx, function, name)
    return bool(passed) and all(_contiguous_at(ctx, call, value) for call, value in passed)


@per_file
def _rebound(ctx: Context, function: ast.AST) -> frozenset[str]:
    """The names `function`'s own code binds (targets, loops, `with ... as`, walrus)."""
    return frozenset(
        node.id
        for node in index_of(ctx, function).under(function, ast.Name)
        if not isinstance(node.ctx, ast.Load)
    )


def _contiguous_at(ctx: Context, call: ast.Call, value: ast.expr) -> bool:
    """Whether `value`, passed by `call`, is surely contiguous where the call is made: its
    last binding before the call, in the call's block or, when that block does not change it,
    in the blocks around (a loop around the call must not change it at all)."""
    if not isinstance(value, ast.Name):
        return _makes_contiguous(value, ctx)
    name = value.id
    parents = index_of(ctx, ctx.tree).parents
    statement: ast.AST | None = call
    while statement is not None and not isinstance(statement, ast.stmt):
        statement = parents.get(statement)
    while statement is not None:
        owner = parents.get(statement)
        place = ctx.block_position(statement, owner) if owner is not None else None
        if place is None:
            return False
        block, index = place
        names = block_names(ctx, block)
        position = names.last_changed_before(name, index)
        if position is not None:
            found = block[position]
            return _assigns_only(found, name) and _makes_contiguous(found.value, ctx)  # type: ignore[attr-defined]
        if isinstance(owner, _SCOPES) or binds_in_header(owner, name):
            return False  # the top of the scope, or `for name in ...`, `with ... as name`
        if isinstance(owner, _LOOPS) and names.last_changed_before(name, len(block)) is not None:
            return False  # a later statement of the loop rebinds it for the next turn
        statement = owner
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _makes_contiguous(expr: ast.AST, ctx: Context) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    qualname = ctx.qualname(expr.func)
    if qualname is None:
        return ctx.method_name(expr) in CONTIGUOUS_METHODS or _layer_output(expr, ctx)
    return qualname.startswith("torch.") and qualname[6:] in CONTIGUOUS_FUNCTIONS


# Layers whose output is laid out contiguously, unless their input is channels_last.
CONTIGUOUS_LAYERS = frozenset(
    f"torch.nn.{name}"
    for name in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "Linear")
)


@per_file
def _channels_last(ctx: Context) -> bool:
    """The file's text, or some file of its project, mentions the channels_last memory format
    (read once per file: a search of the text for each layer call would be quadratic)."""
    return "channels_last" in ctx.source or ctx.project.has("channels_last")


def _layer_output(call: ast.Call, ctx: Context) -> bool:
    """`self.conv(x)` where every assignment of `self.conv` in the class builds a convolution
    or a Linear layer: its output is contiguous, in a project that never mentions
    `channels_last` (the memory format that keeps a feature map permuted in memory)."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
        and not _channels_last(ctx)
    ):
        return False
    cls = ctx.enclosing_class()
    if cls is None:
        return False
    built = attribute_values(ctx, cls, func.attr)
    return bool(built) and all(
        isinstance(value, ast.Call) and ctx.qualname(value.func) in CONTIGUOUS_LAYERS
        for value in built
    )


def _assigns_only(statement: ast.stmt, name: str) -> bool:
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    )


def _is_permuting(expr: ast.AST, ctx: Context) -> bool:
    return _permuting_parts(expr, ctx) is not None


def _permuting_or_keeping(expr: ast.AST, ctx: Context) -> bool:
    return _permuting_parts(expr, ctx) is not None or _layout_source(expr, ctx) is not None


# Elementwise methods whose result is laid out as their receiver is (torch's TensorIterator
# orders the output's dimensions by its first operand that tells an order): comparisons, casts,
# arithmetic, pointwise functions.
LAYOUT_KEEPING = frozenset(
    """
eq ne lt le gt ge float double half bfloat16 long int short bool byte char type_as
add sub mul div abs neg sign sigmoid tanh relu exp log sqrt clamp pow
cuda cpu to
""".split()
)
# (The moves keep the strides of a dense tensor too: `memory_format=torch.preserve_format` is
# their default; one given another format is no such move.)


def _keeps_layout(call: ast.Call, ctx: Context) -> bool:
    """`x.float()`, `x.cuda()`: a method of LAYOUT_KEEPING, not a module's function
    (`torch.eq(...)`), not told to lay its result out otherwise (`memory_format=`)."""
    return (
        call.func.attr in LAYOUT_KEEPING  # type: ignore[attr-defined]
        and ctx.qualname(call.func) is None
        and not any(k.arg == "memory_format" for k in call.keywords)
    )


MAX_KEEPING_HOPS = 4
_KEEPING_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def _layout_source(expr: ast.AST, ctx: Context) -> ast.Name | None:
    """The name an elementwise result takes its layout from: `pred` in `pred.eq(...)`,
    `pred == target`, `(pred == target).float()`, `pred * 2`; None for anything else."""
    for _ in range(MAX_KEEPING_HOPS):
        if type(expr) is ast.Call and type(expr.func) is ast.Attribute:
            if not _keeps_layout(expr, ctx):
                return None  # `torch.eq(...)` and other module functions: not a method
            expr = expr.func.value
        elif type(expr) is ast.Compare and len(expr.ops) == 1:
            expr = expr.left
        elif type(expr) is ast.BinOp and isinstance(expr.op, _KEEPING_OPERATORS):
            expr = expr.left
        else:
            return None
        if type(expr) is ast.Name:
            return expr
    return None


def _more_than_one_row(rows: ast.Slice, ctx: Context) -> bool:
    """The slice `[:k]` may keep more than one row, as far as the code shows: `k` a number above
    1, or the variable of a loop or comprehension over numbers one of which is (a tuple written
    there, or a parameter whose default or some call in the file gives one: `accuracy(output,
    target, topk=(1, 5))`, or, no call of the file passing it, a `topk` some file of the project
    passes so). The top-k accuracy helpers called only with `topk=(1,)` keep one row."""
    upper = rows.upper
    if type(upper) is ast.Constant:
        return type(upper.value) is int and upper.value > 1
    if type(upper) is not ast.Name:
        return False
    loop = next(
        (
            node
            for node in reversed(ctx.ancestors)
            if type(node) is ast.For
            and type(node.target) is ast.Name
            and node.target.id == upper.id
        ),
        None,
    )
    if loop is None:
        loop = _comprehension_over(rows, upper.id, ctx)  # `[correct[:k].view(-1) for k in topk]`
    if loop is None:
        return False
    if _holds_more_than_one(loop.iter):
        return True
    function = ctx.enclosing_function()
    if type(loop.iter) is not ast.Name or function is None:
        return False
    name = loop.iter.id
    if not is_parameter(function, name):
        return False
    default = parameter_default(function, name)
    if default is not None and _holds_more_than_one(default):
        return True
    passed = passed_values(ctx, function, name)
    if passed:  # the file's own calls tell (skipnet's cifar scripts pass only `topk=(1,)`)
        return any(_holds_more_than_one(value) for _, value in passed)
    if runs_as_script(ctx) and not ctx.project.imports_from(_module_name(ctx.path)):
        # A script's own helper that no file imports: its calls, here, all leave the default
        # (bayesian-torch's cifar examples, beside imagenet ones passing `topk=(1, 5)`; a script
        # parsing its command line at the top level: early-bird-tickets' main.py).
        return False
    # The helper in `utils.py`, called with `topk=(1, 5)` by the training script.
    return name == "topk" and ctx.project.has("top-k for k > 1")


def _module_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _comprehension_over(node: ast.AST, name: str, ctx: Context) -> ast.comprehension | None:
    """The `for name in ...` part of a comprehension around `node` in its statement."""
    parents = ctx.statement_parents()
    current = parents.get(node)
    while current is not None:
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for generator in current.generators:
                if type(generator.target) is ast.Name and generator.target.id == name:
                    return generator
        current = parents.get(current)
    return None


def _holds_more_than_one(expr: ast.AST) -> bool:
    """`(1, 5)`, `[1, 3, 5]`: numbers written in a tuple or list, one of them above 1; or a 1
    beside a setting (`(1, args.kmax)`: early_stopping_double_descent's second k, there to be
    more than one)."""
    if type(expr) not in (ast.Tuple, ast.List):
        return False
    elements = expr.elts  # type: ignore[attr-defined]
    if any(type(e) is ast.Constant and type(e.value) is int and e.value > 1 for e in elements):
        return True
    return (
        len(elements) == 2
        and type(elements[0]) is ast.Constant
        and elements[0].value == 1
        and type(elements[1]) in (ast.Attribute, ast.Name)
    )


def _leading_slice(index: ast.AST) -> bool:
    """`[:k]`, `[a:b]`: rows of the first dimension, which keep the tensor's strides."""
    return type(index) is ast.Slice and index.step is None


def _uncast(expr: ast.AST, ctx: Context) -> ast.AST:
    """`pred.t()` in `pred.t().type_as(target)` or `x.permute(0, 2, 1).float()`: an elementwise
    method of LAYOUT_KEEPING called on a reordering gives a tensor laid out as it is."""
    for _ in range(MAX_KEEPING_HOPS):
        if not (
            type(expr) is ast.Call
            and type(expr.func) is ast.Attribute
            and type(expr.func.value) is ast.Call
            and _keeps_layout(expr, ctx)
        ):
            break
        expr = expr.func.value
    return expr


def _permuting_parts(expr: ast.AST, ctx: Context) -> tuple[str, ast.AST, list[ast.AST]] | None:
    """(operation, tensor, dimension arguments) of `x.transpose(0, 1)` / `torch.transpose(x, 0, 1)`
    / `x.T`, also cast on the way (`x.t().float()`: see `_uncast`); None for anything else."""
    expr = _uncast(expr, ctx)
    if isinstance(expr, ast.Attribute):
        return (expr.attr, expr.value, []) if expr.attr in MATRIX_TRANSPOSES - {"t"} else None
    if not isinstance(expr, ast.Call) or not isinstance(expr.func, ast.Attribute) or expr.keywords:
        return None
    operation = expr.func.attr
    if operation not in PERMUTING:
        return None
    qualname = ctx.qualname(expr.func)
    if qualname is None:
        return operation, expr.func.value, expr.args
    if qualname == f"torch.{operation}" and expr.args:
        return operation, expr.args[0], expr.args[1:]
    return None


def _contiguous_pieces(parts: tuple[str, ast.AST, list[ast.AST]]) -> int | None:
    """The fewest runs of memory-adjacent dimensions a reordering leaves, assuming its input
    was contiguous and no dimension has size 1. A view to fewer dimensions than that must merge
    two runs, which is impossible. None: not a reordering we can count."""
    operation, _, args = parts
    if operation in MATRIX_TRANSPOSES:
        return None if args else 2
    dims = _int_literals(args)
    if dims is None:
        return None
    if operation == "permute":
        return _permutation_pieces(
            dims[0] if len(dims) == 1 and isinstance(dims[0], tuple) else dims
        )
    if len(dims) != 2 or not all(isinstance(d, int) for d in dims):
        return None
    first, second = dims
    if operation in TRANSPOSES:
        return _swap_pieces(first, second)
    return _move_pieces(first, second)


def _int_literals(args: list[ast.AST]) -> list | None:
    """Integer literals (or one tuple/list of them) as Python values; None if any is not."""
    values = []
    for arg in args:
        if isinstance(arg, (ast.Tuple, ast.List)):
            inner = _int_literals(arg.elts)
            if inner is None:
                return None
            values.append(tuple(inner))
            continue
        value = _int_value(arg)
        if value is None:
            return None
        values.append(value)
    return values


def _int_value(expr: ast.AST) -> int | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        value = _int_value(expr.operand)
        return None if value is None else -value
    return None


def _moves_a_size_one_axis(parts: tuple[str, ast.AST, list[ast.AST]], ctx: Context) -> bool:
    """`self.fc(x).permute(0, 3, 1, 2)` with `self.fc = nn.Linear(512, 1)`: only the last
    axis moves, and it has size 1, so the layout stays contiguous (StarGAN-VC2's
    discriminator)."""
    operation, receiver, args = parts
    dims = _int_literals(args) if operation == "permute" else None
    if not dims:
        return False
    dims = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], tuple) else dims
    rank = len(dims)
    if not all(isinstance(d, int) for d in dims):
        return False
    order = [d % rank for d in dims]
    if [d for d in order if d != rank - 1] != list(range(rank - 1)):
        return False
    if not (type(receiver) is ast.Call and is_self_attribute(receiver.func)):
        return False
    cls = ctx.enclosing_class()
    values = attribute_values(ctx, cls, receiver.func.attr) if cls is not None else ()  # type: ignore[attr-defined]
    return bool(values) and all(_one_output_feature(value, ctx) for value in values)


def _one_output_feature(value: ast.AST, ctx: Context) -> bool:
    """`nn.Linear(512, 1)`: a layer whose last axis out has size 1."""
    if type(value) is not ast.Call or ctx.qualname(value.func) != "torch.nn.Linear":
        return False
    out = value.args[1] if len(value.args) > 1 else keyword_value(value, "out_features")
    return type(out) is ast.Constant and out.value == 1


def _permutation_pieces(dims) -> int | None:
    if not dims or not all(isinstance(d, int) for d in dims):
        return None
    rank = len(dims)
    order = [d % rank for d in dims]
    if sorted(order) != list(range(rank)):
        return None
    return 1 + sum(1 for a, b in zip(order, order[1:]) if b != a + 1)


def _swap_pieces(first: int, second: int) -> int | None:
    """Fewest runs after swapping two dimensions of a tensor of unknown rank."""
    if first == second or (first < 0) != (second < 0):
        return None  # the same dimension, or maybe the same (1 and -1 of a matrix)
    low, high = sorted((first, second))
    middle = 2 if high - low == 1 else 3
    outside = low > 0 if low >= 0 else high < -1
    return middle + outside


def _move_pieces(source: int, destination: int) -> int | None:
    """Fewest runs after moving one dimension of a tensor of unknown rank."""
    if source == destination or (source < 0) != (destination < 0):
        return None
    low, high = sorted((source, destination))
    outside = low > 0 if low >= 0 else high < -1
    return 2 + outside


def _rename_method(call: ast.Call, new: str, ctx: Context):
    """An edit replacing the method name of `call` (the last characters of `call.func`)."""
    _, end = ctx.span(call.func)
    return ctx.edit(end - len(call.func.attr), end, new)


def _describe(expr: ast.AST, ctx: Context) -> str:
    """`.transpose(1, 2)`, `.T`: the reordering, without the tensor it applies to."""
    operation, _, args = _permuting_parts(expr, ctx)
    if isinstance(_uncast(expr, ctx), ast.Attribute):
        return f".{operation}"
    text = f".{operation}({', '.join(ctx.text(arg) for arg in args)})"
    return text if len(text) <= 40 else f".{operation}(...)"
