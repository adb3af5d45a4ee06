"""TD201 missing-zero-grad: a training loop steps the optimizer but never clears gradients."""

from __future__ import annotations

import ast
import weakref
from bisect import bisect_left
from typing import Iterator

from torchdoctor.catalog.sdk import (
    PLAIN_STEP,
    Context,
    constant_range,
    FileIndex,
    Finding,
    Kind,
    Monitor,
    Pitfall,
    from_project_class,
    imported_roots,
    index_of,
    per_file,
    shorten,
    subtree,
    top_level_functions,
)
from torchdoctor.catalog.training._uncalled import call_it, uncalled_statement
from torchdoctor.catalog.training._loops import (
    block_steps,
    enclosing_loops,
    is_scheduler_step,
    stepped_optimizer,
)

PITFALL = Pitfall(
    code="TD201",
    name="missing-zero-grad",
    title={"en": "Training loop never clears gradients", "zh": "训练循环从不清零梯度"},
    messages={
        "": {
            "en": "this loop calls `.backward()` and `{step}` (line {line}) but never clears "
            "gradients: every iteration adds to the gradients of all earlier ones",
            "zh": "这个循环调用了 `.backward()` 和 `{step}`（第 {line} 行），却从不清零梯度："
            "每次迭代的梯度都会叠加到之前所有迭代的梯度上",
        },
        "branch": {
            "en": "`{step}` runs in the branch of this `if` that never clears gradients, while "
            "the other branch clears them in its own update (line {line}): on this path every "
            "iteration of the loop (line {loop}) adds to the gradients of all earlier ones",
            "zh": "`{step}` 所在的 `if` 分支从不清零梯度，而另一个分支在自己的更新里清零了梯度（第 {line} "
            "行）：走这条路径时，循环（第 {loop} 行）每次迭代的梯度都会叠加到之前所有迭代的梯度上",
        },
        "function": {
            "en": "`{step}` applies what `.backward()` added to the gradients of every earlier "
            "call of `{function}`: nothing in the project clears gradients (no `zero_grad()`), so "
            "each update uses the sum of all the batches so far",
            "zh": "`{step}` 用的梯度里叠加了此前每次调用 `{function}` 时 `.backward()` 留下的梯度："
            "整个项目里没有任何代码清零梯度（没有 `zero_grad()`），所以每次更新用的是到目前为止所有批次梯度之和",
        },
        "uncalled": {
            "en": "`{method}` names the method without calling it (no parentheses): this "
            "statement does nothing, so the gradients are never cleared and every `.backward()` "
            "adds to the sum of all earlier ones; write `{method}()`",
            "zh": "`{method}` 只是引用了这个方法而没有调用它（缺少括号）：这条语句什么也不做，梯度从未清零，"
            "每次 `.backward()` 都会叠加到之前所有的梯度上；应写成 `{method}()`",
        },
        "runtime": {
            "en": "gradients are never cleared: `{optimizer}.step()` applies gradients that still "
            "hold the ones it already applied at step {previous} (e.g. `{param}`); call "
            "`optimizer.zero_grad()` once per step",
            "zh": "梯度从未清零：`{optimizer}.step()` 使用的梯度里仍包含它在第 {previous} 步已经用过的"
            "梯度（例如 `{param}`）；请每步调用一次 `optimizer.zero_grad()`",
        },
    },
    fix_title={
        "en": "Clear gradients after the step: `{optimizer}.zero_grad()`",
        "zh": "在更新之后清零梯度：`{optimizer}.zero_grad()`",
    },
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A loop that calls `.backward()` and `optimizer.step()` (or `scaler.step(optimizer)` with a
`GradScaler`) but clears the gradients nowhere in the loop: no `optimizer.zero_grad()`, no
`model.zero_grad()`, no `p.grad = None`, no `p.grad.zero_()`. Also a loop whose only clearing
is `other.zero_grad()` of other optimizers: with two optimizers (a GAN's, an encoder and a
critic), the one never cleared still piles its gradients up. And a step in one branch of an
`if` whose other branch is the same update with the clearing in it (a mixed-precision branch
that forgot `zero_grad()`), when the loop clears nowhere else. A loop is reported once, on its
header, naming its first step; a branch's step on the step.

A function with no loop around its step (a trainer's `train_batch`, run per batch by a loop in
another module) that calls `.backward()` and then steps is reported on its first step when no
code of the project clears gradients, or might: no `zero_grad`, no helper named to clear them
(`reset_grad`), no `.grad` set or zeroed by hand, and the file imports no training framework
(Lightning, DeepSpeed, fairseq, ...) whose loop may clear them.

Gradient accumulation is fine: clearing every N steps under an `if` counts. Also left alone:
loops that call a helper which might clear the gradients out of sight (`self.optimizer_step()`,
`train_step(...)`, anything named like `*zero_grad*`, a function of the file or a method of
the loop's class that calls `zero_grad()` itself: `self.run_iter(...)`; but not a method of the
project named like a step whose every definition neither says `grad` nor steps anything, a
model's `training_step(batch)` that only computes the loss), DeepSpeed's `engine.step()` (it clears
the gradients itself), `optimizer.step(...)` with an argument (an LBFGS closure usually clears
them; `DistributedOptimizer.step(context_id)` keeps gradients per context), loops that build a
new model or optimizer every time round, loops that `break` right after the step, loops of at
most two rounds over a constant `range(...)` (a benchmark's warm-up), and loops
calling a model built from a class of another module of the project when some module of the
project clears its own gradients (`self.zero_grad()` in its `forward`).

Also `optimizer.zero_grad` written as a statement without its parentheses, anywhere: it names the
method and does nothing, so the gradients are never cleared (reported on that line; the fix adds
the `()`). Not on the last line of a notebook cell, which shows the method.

## Why is this bad?
`backward()` adds the new gradients to whatever is already stored in `.grad`; it never
overwrites. Without clearing, the gradient used by the step at iteration `k` is the sum of the
gradients of all `k` iterations so far, so the effective learning rate grows with every step.
Training first looks fine, then the loss stops improving, oscillates or turns into `nan`.

## Fix safety
The fix adds `optimizer.zero_grad()` right after the step (or the missing `()`). It is unsafe because it changes what
the loop computes, which is the point, but also because code after the step that still reads
`.grad` (gradient logging, a second optimizer over shared parameters) now sees `None`. It is
offered only when the loop has a single optimizer step.

## Known problems
The doctor looks at one loop at a time. A helper called in the loop that clears gradients
under an unusual name, or clearing done by a hook, is not seen; such loops are reported.
""",
        "zh": """
## What it catches
循环里调用了 `.backward()` 和 `optimizer.step()`（或配合 `GradScaler` 的 `scaler.step(optimizer)`），
但整个循环中没有任何清零梯度的操作：没有 `optimizer.zero_grad()`、`model.zero_grad()`，
也没有 `p.grad = None` 或 `p.grad.zero_()`。也包括循环中唯一的清零是对其他优化器调用 `other.zero_grad()`
的情况：有两个优化器时（GAN 的两个，或编码器与判别器），从未清零的那个仍会不断累积梯度。
还包括 `if` 某个分支里的 step，而另一个分支是带清零的同一次更新（混合精度分支忘了
`zero_grad()`），并且循环中别处都不清零。每个循环只在其头部报告一次，并指出其中第一个 step；
分支里的 step 则报告在该 step 上。

没有被循环包住的函数（例如训练器的 `train_batch`，由另一个模块里的循环每批调用一次）先调用
`.backward()` 再 step 时，如果项目里没有任何代码会（或可能会）清零梯度：没有 `zero_grad`，没有
名字表明会清零梯度的辅助函数（`reset_grad`），没有手动设置或清零 `.grad`，并且该文件没有导入
训练框架（Lightning、DeepSpeed、fairseq 等，它们的循环可能会清零），就在其第一个 step 上报告。

梯度累积没有问题：放在 `if` 里每 N 步清零一次也算清零。以下情况也不报告：循环中调用了可能在别处
清零梯度的函数（`self.optimizer_step()`、`train_step(...)`、名字像 `*zero_grad*` 的函数、本文件中自己调用了
`zero_grad()` 的函数，或循环所在类中自己调用了 `zero_grad()` 的方法：`self.run_iter(...)`；
但项目中名字像 step、而每个定义既不提 `grad` 也不调用任何 step 的方法不算，例如只计算损失的 `training_step(batch)`）；
DeepSpeed 的 `engine.step()`（它自己会清零）；带参数的 `optimizer.step(...)`（LBFGS 的闭包里通常会清零，
`DistributedOptimizer.step(context_id)` 的梯度按上下文分开保存）；每次迭代都新建模型或优化器的循环；
`step` 之后紧跟 `break` 的循环；在常量 `range(...)` 上最多两轮的循环（基准测试的预热）；
以及调用由项目其他模块中的类构建的模型、而项目中某个模块会自己清零梯度
（在 `forward` 里调用 `self.zero_grad()`）的循环。

还包括任何地方写成单独一条语句、却漏了括号的 `optimizer.zero_grad`：它只是引用了这个方法，什么也不做，
梯度因此从未清零（在该行报告；修复会补上 `()`）。notebook 单元格的最后一行除外，那里会显示这个方法。

## Why is this bad?
`backward()` 会把新算出的梯度加到 `.grad` 里已有的值上，而不是覆盖。如果从不清零，第 `k` 次迭代
更新时用的是前 `k` 次迭代梯度之和，相当于学习率随步数不断变大。训练一开始看起来正常，随后 loss
停止下降、来回震荡，甚至变成 `nan`。

## Fix safety
修复会在 `step` 之后紧接着加上 `optimizer.zero_grad()`（或补上漏掉的 `()`）。
它是不安全的：它本来就会改变循环的计算结果；
此外，`step` 之后仍然读取 `.grad` 的代码（记录梯度范数、共享参数的第二个优化器）将看到 `None`。
只有循环中只有一个优化器 `step` 时才提供这个修复。

## Known problems
一次只分析一个循环。如果循环调用的辅助函数用不常见的名字清零梯度，或者梯度是由钩子清零的，
这些情况看不到，仍会报告。
""",
    },
    example="""
import torch
from torch import nn

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in [(torch.randn(4, 10), torch.randn(4, 1))] * 100:
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
""",
    use_instead="""
import torch
from torch import nn

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in [(torch.randn(4, 10), torch.randn(4, 1))] * 100:
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
""",
)

BACKWARD_NAMES = frozenset({"backward", "manual_backward"})
# Words that, next to "grad" in a helper's name, say it may clear gradients.
_CLEARING_WORDS = ("zero", "clear", "reset", "none", "free")


# ---- this rule ---------------------------------------------------------------------------------


@PITFALL.static(ast.Expr, names={"step"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    call = node.value
    optimizer = stepped_optimizer(call, ctx)
    if optimizer is None:
        return
    if optimizer is call.func.value and (call.args or call.keywords):
        return  # step(closure): the closure usually clears the gradients
    loop = _training_loop(ctx, optimizer)
    if loop is None:
        yield from _check_function(node, optimizer, ctx)
        return
    if _exits_after(node, ctx):
        return  # `opt.step(); break`: the loop does not go round after a step
    if not _never_clears(ctx, loop) and not _clears_only_others(ctx, loop, optimizer):
        other = _other_branch_clears(ctx, loop, node)
        if other is not None:
            yield ctx.finding(
                PITFALL,
                call,
                "branch",
                step=shorten(ctx.text(call)),
                line=other.lineno,
                loop=loop.lineno,
            )
        return
    if ctx.project.has("self.zero_grad") and _calls_project_model(ctx, loop):
        return  # a model of the project that clears its own gradients, out of sight
    steps = block_steps(ctx, loop)
    if steps[0] is not node:
        return  # one finding per loop, for its first step
    fix = _fix(node, optimizer, ctx) if len(steps) == 1 else None
    # On the loop's header: what is wrong is the loop (it clears nothing), and a `noqa` for a
    # loop that accumulates on purpose belongs there. The step is named, and the fix goes after it.
    header_end = loop.test if isinstance(loop, ast.While) else loop.iter
    yield ctx.finding(
        PITFALL,
        loop,
        end_node=header_end,
        fix=fix,
        step=shorten(ctx.text(call)),
        line=node.lineno,
    )


@PITFALL.static(ast.Attribute, names={"zero_grad"})
def check_uncalled(method: ast.Attribute, ctx: Context) -> Iterator[Finding]:
    """`optimizer.zero_grad` as a statement of its own: the method named, never called."""
    if uncalled_statement(method, ctx):
        fix, shown = call_it(PITFALL, method, ctx)
        yield ctx.finding(PITFALL, method, "uncalled", fix=fix, method=shown)


def _check_function(node: ast.Expr, optimizer: ast.AST, ctx: Context) -> Iterator[Finding]:
    """A step in a function, with no loop around it, that calls `.backward()` before it, in a
    project where no code clears gradients: the loop calling it is out of sight, but whatever it
    is, every call adds to the gradients of the last (Seq2seqModel's `train_batch`, run by
    its `Trainer` base class in another module)."""
    function = ctx.enclosing_function()
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    project = ctx.project
    if not project.known or project.has("clears gradients"):
        return
    if not _FRAMEWORKS.isdisjoint(imported_roots(ctx)):
        return  # a framework's trainer may clear them (Lightning, DeepSpeed's engine, fairseq)
    before = (node.lineno, node.col_offset)
    found = index_of(ctx, function)
    if not any(
        _is_backward(call, ctx) and (call.lineno, call.col_offset) < before
        for call in found.in_block(function.body, ast.Call)
    ):
        return
    if not _never_clears(ctx, function) or block_steps(ctx, function)[0] is not node:
        return  # a helper it calls may clear them; one finding per function, for its first step
    yield ctx.finding(
        PITFALL,
        node.value,
        "function",
        fix=_fix(node, optimizer, ctx),
        step=shorten(ctx.text(node.value)),
        function=function.name,
    )


# Packages whose training loops clear gradients themselves, around a step the user writes
# (manual optimization in Lightning still calls `zero_grad`, but out of the file's sight).
_FRAMEWORKS = frozenset(
    {
        "lightning",
        "pytorch_lightning",
        "lightning_fabric",
        "deepspeed",
        "fairseq",
        "parlai",
        "ignite",
        "mmcv",
        "mmengine",
        "detectron2",
        "catalyst",
        "composer",
        "allennlp",
        "transformers",
        "accelerate",
        "fastai",
        "skorch",
        "poutyne",
        "torchbearer",
        "ray",
    }
)


def _training_loop(ctx: Context, optimizer: ast.AST) -> ast.AST | None:
    """The innermost loop around the step that calls backward, skipping loops over optimizers."""
    stepped = {n.id for n in subtree(optimizer) if isinstance(n, ast.Name)}
    for loop in enclosing_loops(ctx):
        target = getattr(loop, "target", None)
        if target is not None and stepped & {
            n.id for n in subtree(target) if isinstance(n, ast.Name)
        }:
            continue  # `for opt in optimizers: opt.step()` goes round the optimizers, not the data
        if _few_rounds(loop):
            continue  # `for _ in range(2)`: a warm-up or a test's few steps, not training
        if _calls_backward(ctx, loop):
            return loop
    return None


# At most this many rounds of a loop over a constant `range(...)` are a warm-up (torchgpipe's
# peak-memory runs), not a training loop. (Three rounds of a test comparing two models, as in
# llm-foundry's, were read as a true finding: both models pile their gradients up.)
FEW_ROUNDS = 2


def _few_rounds(loop: ast.AST) -> bool:
    """`for _ in range(2)`: a loop over a constant range of at most FEW_ROUNDS numbers."""
    count = constant_range(loop)
    return count is not None and count <= FEW_ROUNDS


@per_file
def _calls_backward(ctx: Context, loop: ast.AST) -> bool:
    return any(_is_backward(n, ctx) for n in index_of(ctx, loop).in_block(loop.body, ast.Call))


def _is_backward(node: ast.AST, ctx: Context) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if ctx.method_name(node) in BACKWARD_NAMES:
        return True
    return ctx.qualname(node.func) == "torch.autograd.backward"


@per_file
def _never_clears(ctx: Context, loop: ast.AST) -> bool:
    """True when nothing in the loop clears, or might clear, the gradients."""
    found = index_of(ctx, loop)
    start, end = found.number[loop.body[0]], found.ends[found.number[loop.body[-1]]]
    # A name saying it clears gradients (`zero_grad`, `reset_grads`...): looked up among the
    # few such identifiers of the file, not by reading every name of every loop.
    numbers = _clearing_names(ctx, found)
    if bisect_left(numbers, start) < bisect_left(numbers, end):
        return False
    for node in found.in_block(loop.body, *_CLEARING_NODES):
        if _may_clear(node, ctx):
            return False
    return True


def _other_branch_clears(ctx: Context, loop: ast.AST, step: ast.Expr) -> ast.AST | None:
    """The `zero_grad()` call of the other branch, when `step` is in a branch of an `if` in the
    loop that calls backward and clears nothing, and every clearing of the loop is in the
    other branch, which calls backward too: two versions of one update, one of them without
    `zero_grad()` (nwm's bfloat16 branch: `scaler.scale(loss).backward(); scaler.step(opt)`)."""
    found = index_of(ctx, loop)
    for owner in reversed(ctx.ancestors):
        if owner is loop:
            return None
        if type(owner) is not ast.If or not owner.orelse:
            continue
        at = found.number[step]
        inside = found.number[owner.body[0]] <= at < found.ends[found.number[owner.body[-1]]]
        other = owner.orelse if inside else owner.body
        start, end = found.number[other[0]], found.ends[found.number[other[-1]]]
        loop_start = found.number[loop.body[0]]
        loop_end = found.ends[found.number[loop.body[-1]]]
        clearing = _clearing_names(ctx, found)
        first, last = bisect_left(clearing, loop_start), bisect_left(clearing, loop_end) - 1
        # Sorted: every clearing of the loop is in the other branch when the first and the
        # last are.
        if first > last or not start <= clearing[first] <= clearing[last] < end:
            return None  # the loop clears somewhere else too
        if _clears_otherwise(ctx, loop):
            return None  # `p.grad = None` and the like: not followed
        mine_side, other_side = ("body", "orelse") if inside else ("orelse", "body")
        if not _branch_calls_backward(ctx, owner, mine_side):
            return None
        if not _branch_calls_backward(ctx, owner, other_side):
            return None
        return found.nodes[clearing[first]]
    return None


@per_file
def _clears_otherwise(ctx: Context, loop: ast.AST) -> bool:
    """Something in the loop may clear gradients without a name that says so (`p.grad =
    None`, a model built in it)."""
    found = index_of(ctx, loop)
    return any(_may_clear(n, ctx) for n in found.in_block(loop.body, *_CLEARING_NODES))


@per_file
def _branch_calls_backward(ctx: Context, owner: ast.If, side: str) -> bool:
    branch = getattr(owner, side)
    return any(_is_backward(c, ctx) for c in index_of(ctx, owner).in_block(branch, ast.Call))


@per_file
def _calls_project_model(ctx: Context, loop: ast.AST) -> bool:
    """The loop calls a model built from a class of another module of the project."""
    return any(
        type(call.func) is ast.Name and from_project_class(call.func, ctx)
        for call in index_of(ctx, loop).in_block(loop.body, ast.Call)
    )


def _clears_only_others(ctx: Context, loop: ast.AST, optimizer: ast.AST) -> bool:
    """The loop clears gradients only by `other.zero_grad()` of optimizers other than the one
    stepped here (a GAN loop that clears the encoder's optimizer and never the
    discriminator's): this one's gradients still pile up."""
    if type(optimizer) is not ast.Name or ctx.kind_of(optimizer) is not Kind.OPTIMIZER:
        return False
    cleared = _cleared_optimizers(ctx, loop)
    return cleared is not None and optimizer.id not in cleared


@per_file
def _cleared_optimizers(ctx: Context, loop: ast.AST) -> frozenset[str] | None:
    """The optimizers the loop clears, when it clears gradients only by `name.zero_grad()` of
    optimizers named so; None when it may clear them in another way."""
    found = index_of(ctx, loop)
    start, end = found.number[loop.body[0]], found.ends[found.number[loop.body[-1]]]
    numbers = _clearing_names(ctx, found)
    cleared = set()
    for at in numbers[bisect_left(numbers, start) : bisect_left(numbers, end)]:
        node = found.nodes[at]
        call = found.parents.get(node)
        if not (
            type(node) is ast.Attribute
            and node.attr == "zero_grad"
            and type(node.value) is ast.Name
            and ctx.kind_of(node.value) is Kind.OPTIMIZER
            and type(call) is ast.Call
            and call.func is node
        ):
            return None
        cleared.add(node.value.id)
    if not cleared or any(_may_clear(n, ctx) for n in found.in_block(loop.body, *_CLEARING_NODES)):
        return None
    return frozenset(cleared)


@per_file
@per_file
def _clearing_names(ctx: Context, found: FileIndex) -> list[int]:
    """The numbers, in `found` (the file's index), of the names and attributes that say they
    clear gradients: found once per file, however many loops and steps ask."""
    return sorted(
        at
        for table in (found.names, found.attributes)
        for identifier, numbers in table.items()
        if _says_it_clears(identifier)
        for at in numbers
    )


def _says_it_clears(identifier: str) -> bool:
    name = identifier.lower()
    return "zero_grad" in name or "grad" in name and any(w in name for w in _CLEARING_WORDS)


# The other nodes `_may_clear` looks at.
_CLEARING_NODES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Call)


def _may_clear(node: ast.AST, ctx: Context) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
        # `p.grad = None`, `p.grad = torch.zeros_like(p)`, `del p.grad`; and a model or
        # optimizer built inside the loop starts with fresh gradients every time round.
        return (
            any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in targets)
            or isinstance(node, ast.Assign)
            and _builds_model(node.value, ctx)
        )
    if isinstance(node, ast.Call):
        return (
            _is_grad_inplace(node)
            or _is_unknown_step(node, ctx)
            or type(node.func) is ast.Name
            and node.func.id in _clearing_functions(ctx)
            or _clearing_method(node, ctx)
        )
    return False


def _clearing_method(call: ast.Call, ctx: Context) -> bool:
    """`self.run_iter(...)`, a method of the class around the loop that calls `zero_grad()`
    itself (Seq2Seq-analysis' trainer clears both optimizers at the top of `run_iter`)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    cls = ctx.enclosing_class()
    return func.value.id == "self" and cls is not None and func.attr in _clearing_methods(ctx, cls)


@per_file
def _clearing_methods(ctx: Context, cls: ast.ClassDef) -> frozenset[str]:
    return frozenset(
        method.name
        for method in cls.body
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
        and index_of(ctx, method).calls_named(method, ["zero_grad"])
    )


@per_file
def _clearing_functions(ctx: Context) -> frozenset[str]:
    """The top-level functions of the file that call a `zero_grad()` (pointnet's `run_model(...,
    optimizer=optimizer)`, clearing before its forward): a call of one in a loop may clear."""
    functions = top_level_functions(ctx)
    return frozenset(
        name
        for name, function in functions.items()
        if index_of(ctx, function).calls_named(function, ["zero_grad"])
    )


def _builds_model(value: ast.AST, ctx: Context) -> bool:
    """A model or optimizer made from scratch (a loss module has no parameters to clear)."""
    if not isinstance(value, ast.Call):
        return False
    kind = ctx.kind_of(value)
    if kind is Kind.OPTIMIZER:
        return True
    if kind is not Kind.MODULE:
        return False
    qualname = ctx.call_qualname(value)
    if qualname:
        return not qualname.endswith("Loss")
    return isinstance(value.func, ast.Name)  # a local nn.Module class; not `model.to(device)`


def _is_grad_inplace(call: ast.Call) -> bool:
    """`p.grad.zero_()`, `p.grad.data.mul_(0)`: an in-place method on a gradient."""
    method = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    if not method.endswith("_"):
        return False
    receiver = call.func.value
    while isinstance(receiver, (ast.Attribute, ast.Subscript)):
        if isinstance(receiver, ast.Attribute) and receiver.attr == "grad":
            return True
        receiver = receiver.value
    return False


def _is_unknown_step(call: ast.Call, ctx: Context) -> bool:
    """A `*step*` call that is neither an optimizer's nor a scheduler's: it may clear gradients
    out of sight (`self.optimizer_step()`, `train_step(batch)`, DeepSpeed's `engine.step()`)."""
    func = call.func
    name = (
        func.attr
        if isinstance(func, ast.Attribute)
        else func.id
        if isinstance(func, ast.Name)
        else ""
    )
    if "step" not in name.lower():
        return False
    if isinstance(func, ast.Attribute) and ctx.project.has(PLAIN_STEP + name):
        return False  # `model.training_step(batch)`, a method of the project that only computes
    if name == "step" and (
        stepped_optimizer(call, ctx) is not None or is_scheduler_step(call, ctx)
    ):
        return False
    return True


def _exits_after(node: ast.Expr, ctx: Context) -> bool:
    """A `break` or `return` follows the step in its own block."""
    parent = ctx.parent()
    located = ctx.block_position(node, parent) if parent is not None else None
    if located is None:
        return False
    block, index = located
    return _last_exit(ctx, parent).get(id(block), -1) > index


@per_file
def _last_exit(ctx: Context, owner: ast.AST) -> dict[int, int]:
    """Per block of `owner` (by identity): the position of its last `break` or `return`."""
    found = {}
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list):
            exits = [i for i, s in enumerate(block) if isinstance(s, (ast.Break, ast.Return))]
            if exits:
                found[id(block)] = exits[-1]
    return found


def _fix(node: ast.Expr, optimizer: ast.AST, ctx: Context):
    """Insert `<optimizer>.zero_grad()` on a new line after the step statement."""
    target = ctx.text(optimizer)
    line = ctx.lines[node.lineno - 1]
    indent = line[: node.col_offset]
    if "\n" in target or indent.strip():
        return None
    end = ctx.offset(node.end_lineno, node.end_col_offset)
    last_line = ctx.lines[node.end_lineno - 1]
    line_end = ctx.offset(node.end_lineno, 0) + len(last_line.rstrip("\r\n"))
    rest = ctx.source[end:line_end].strip()
    if rest and not rest.startswith("#"):
        return None  # another statement follows on the same line
    newline = last_line[len(last_line.rstrip("\r\n")) :] or "\n"
    title = {lang: text.format(optimizer=target) for lang, text in PITFALL.fix_title.items()}
    edit = ctx.edit(line_end, line_end, f"{newline}{indent}{target}.zero_grad()")
    return ctx.fix(PITFALL, "unsafe", edit, title=title)


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class GradientsNeverCleared(Monitor):
    """A backward adds onto gradients an optimizer step already applied: nothing cleared them.

    Deliberate accumulation (several backwards, then one step, then clearing) never adds onto
    an applied gradient, so it is not reported. After each step a few parameters' gradients are
    remembered (the tensor and its version counter); clearing replaces them (None) or changes
    them in place (`zero_()` bumps the version). The check is made on the first backward that
    reaches them, so a GAN's discriminator backward does not judge the generator's gradients,
    and reported when that optimizer steps again: stale gradients nobody applies are harmless."""

    SAMPLE = 4

    def setup(self) -> None:
        self._applied: dict[int, tuple] = {}  # id(optimizer) -> (optimizer, step, sample)
        self._watching: list[tuple] = []
        self._stale: dict[int, tuple] = {}  # id(optimizer) -> (step, param) found stale

    def on_step(self, optimizer) -> None:
        stale = self._stale.pop(id(optimizer), None)
        # Cleared since (a GAN's generator backward adds onto the discriminator's applied
        # gradients, then the discriminator's `zero_grad()` drops them): a new tensor.
        if stale is not None and stale[1].grad is stale[2]():
            step, param, _ = stale
            self.report(
                id(optimizer),
                "runtime",
                optimizer=type(optimizer).__name__,
                previous=step,
                param=self.session.param_name(param) or "?",
            )

    def after_step(self, optimizer) -> None:
        # Weak references: holding the applied gradients would keep their memory alive past
        # `zero_grad(set_to_none=True)`, and the allocator would pay for it every step.
        sample = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    sample.append((p, weakref.ref(p.grad), p.grad._version))
                    if len(sample) == self.SAMPLE:
                        break
            if len(sample) == self.SAMPLE:
                break
        self._applied[id(optimizer)] = (optimizer, self.session.step, sample)

    def on_backward(self, tensor) -> None:
        self._watching = []
        for key, (optimizer, step, sample) in list(self._applied.items()):
            stale = [
                (p, g, v)
                for p, g, v in sample
                if p.grad is not None and p.grad is g() and p.grad._version == v
            ]
            if not stale:
                del self._applied[key]  # cleared since the step
                continue
            self._watching.append((key, optimizer, step, stale))

    def after_backward(self, tensor) -> None:
        for key, optimizer, step, stale in self._watching:
            grown = [
                p
                for p, g, v in stale
                if p.grad is not None and p.grad is g() and p.grad._version != v
            ]
            if grown:
                del self._applied[key]
                self._stale[key] = (step, grown[0], weakref.ref(grown[0].grad))
        self._watching = []

    def on_zero_grad(self, optimizer) -> None:
        self._stale.pop(id(optimizer), None)
