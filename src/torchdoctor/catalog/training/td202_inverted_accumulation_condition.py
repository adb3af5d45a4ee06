"""TD202 inverted-accumulation-condition: `if step % n:` steps the optimizer on the wrong steps."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Pitfall,
    index_of,
    is_self_attribute,
    per_file,
    subtree,
)
from torchdoctor.catalog.training._loops import (
    mentions_epochs,
    LOOPS,
    SCOPES,
    block_steps,
    stepped_optimizer,
)

PITFALL = Pitfall(
    code="TD202",
    name="inverted-accumulation-condition",
    title={
        "en": "Gradient-accumulation test is inverted: `if step % n:`",
        "zh": "梯度累积的条件写反了：`if step % n:`",
    },
    messages={
        "": {
            "en": "`if {test}:` is true when `{test}` is NOT zero, so the optimizer steps on every "
            "step except the multiples of `{n}`; the update was meant for `{test} == 0`",
            "zh": "`if {test}:` 在 `{test}` 不为零时成立，于是优化器恰恰在 `{n}` 的倍数之外的每一步都更新；"
            "本意应是 `{test} == 0`",
        },
        "save": {
            "en": "`if {test}:` is true when `{test}` is NOT zero, so the checkpoint is saved on "
            "every step except the multiples of `{n}`; saving every `{n}` steps is `{test} == 0`",
            "zh": "`if {test}:` 在 `{test}` 不为零时成立，于是除了 `{n}` 的倍数之外的每一步都保存一次 checkpoint；"
            "每 `{n}` 步保存一次应写成 `{test} == 0`",
        },
    },
    fix_title={"en": "Test for a multiple: `{test} == 0`", "zh": "改为判断整除：`{test} == 0`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
An `if` whose test is a bare remainder, `if step % n:` or `if (i + 1) % accum_steps:`,
guarding an optimizer update (`optimizer.step()` or `scaler.step(optimizer)`), in a loop
that changes the counter, or in a method that counts its own calls (`self.total_steps += 1`,
then `if self.total_steps % delay:` for a delayed update).

`if step % n == 0:` and `if not step % n:` are correct and not reported, and so is an update
in the `else:` branch. Updates that take turns are not reported either: an `if` whose `else:`
steps another optimizer, a remainder that another `if` of the loop tests against 0 (GAN
training), or a remainder of the epoch number.

Also a checkpoint's save under such a test, in its own body: `torch.save(...)` or a helper
named `save_checkpoint`/`save_model`/`save_ckpt` (lets-do-irl's `if iter % 100:
save_checkpoint(...)`, which saves on 99 of every 100 iterations); not when the `if` has an
`else:`, another `if` tests the remainder against 0, or its body ends the iteration
(`continue`, `break`, `return`).

## Why is this bad?
A remainder is true when it is *not* zero. Gradient accumulation means "update once every `n`
steps", i.e. when `step % n == 0`; the bare test does the opposite and updates on `n - 1` of
every `n` steps, clearing the gradients each time, so almost nothing is accumulated. With
`n = 1` the remainder is always 0 and the model never trains at all.

## Fix safety
The fix adds `== 0` to the test. It is unsafe because it changes when the model is updated,
which is its purpose; review it if the bare test was really meant to skip every `n`-th update.
""",
        "zh": """
## What it catches
用裸余数作条件的 `if`，例如 `if step % n:` 或 `if (i + 1) % accum_steps:`，而它控制的正是优化器更新
（`optimizer.step()` 或 `scaler.step(optimizer)`），所在的循环会改变这个计数；或者所在的方法自己计数
（`self.total_steps += 1` 之后，`if self.total_steps % delay:` 控制延迟更新）。

`if step % n == 0:` 和 `if not step % n:` 是正确写法，不会报告；更新写在 `else:` 分支里也不会报告。
轮流更新的写法同样不报告：`else:` 分支更新另一个优化器、同一循环中另有 `if` 把同一个余数与 0 比较
（如 GAN 训练），或者对 epoch 编号取余。

同样报告的还有在这种条件自己的代码块里保存 checkpoint：`torch.save(...)`，或名为
`save_checkpoint`/`save_model`/`save_ckpt` 的辅助函数（lets-do-irl 的 `if iter % 100: save_checkpoint(...)`，
每 100 次迭代里有 99 次都在保存）；`if` 带有 `else:`、另有 `if` 把同一个余数与 0 比较，或其代码块会结束本次迭代
（`continue`、`break`、`return`）时不报告。

## Why is this bad?
余数不为零时才为真。梯度累积的意思是“每 `n` 步更新一次”，也就是 `step % n == 0` 时更新；
裸余数条件恰好相反：每 `n` 步中有 `n - 1` 步都在更新并清零梯度，几乎没有累积。
当 `n = 1` 时余数恒为 0，模型根本不会被更新。

## Fix safety
修复会在条件后加上 `== 0`。它是不安全的：它本来就会改变模型更新的时机；
如果原来的写法确实是想跳过每第 `n` 次更新，请不要接受这个修复。
""",
    },
    example="""
import torch

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation_steps = 4
for step in range(100):
    model(torch.randn(8, 10)).sum().backward()
    if (step + 1) % accumulation_steps:
        optimizer.step()
        optimizer.zero_grad()
""",
    use_instead="""
import torch

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation_steps = 4
for step in range(100):
    model(torch.randn(8, 10)).sum().backward()
    if (step + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
)


@PITFALL.static(ast.Expr, names={"step"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    guard = _inverted_guard(node, ctx)
    if guard is None:
        return
    branch, remainder = guard
    if block_steps(ctx, branch)[0] is not node:
        return  # one finding per `if`, on behalf of its first update
    if not _counts_in_loop(remainder.left, ctx) or _at_one_step(branch.test):
        return  # `step == last and num_steps % K`: a leftover window, not the accumulation test
    if block_steps(ctx, branch, "orelse") or _tested_elsewhere(remainder, branch, ctx):
        return  # updates take turns: the remainder is chosen on purpose
    test = ctx.text(remainder)
    title = {lang: text.format(test=test) for lang, text in PITFALL.fix_title.items()}
    end = ctx.span(remainder)[1]
    fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end, end, " == 0"), title=title)
    yield ctx.finding(PITFALL, remainder, fix=fix, test=test, n=ctx.text(remainder.right))


# A checkpoint saved under a bare remainder: `torch.save(...)`, or a helper named to save one.
_SAVES = frozenset({"save", "save_checkpoint", "save_model", "save_ckpt"})


@PITFALL.static(ast.Expr, names=_SAVES)
def check_save(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    """`if iter % 100:` around a checkpoint's save (lets-do-irl's PPO and GAIL): saved on 99 of
    every 100 iterations, where once every 100 was meant."""
    call = node.value
    if not _saves_a_checkpoint(call, ctx):  # type: ignore[arg-type]
        return
    guard = _guard_of(node, ctx)
    if guard is None:
        return
    branch, remainder = guard
    if _first_save(ctx, branch) is not node:
        return  # one finding per `if`, for its first save in its own body (asked first: cheap)
    if not _counts_in_loop(remainder.left, ctx) or _at_one_step(branch.test):
        return
    if branch.orelse or _tested_elsewhere(remainder, branch, ctx) or _leaves_early(branch):
        return  # takes turns, or skips the rest of the loop on purpose
    test = ctx.text(remainder)
    title = {lang: text.format(test=test) for lang, text in PITFALL.fix_title.items()}
    end = ctx.span(remainder)[1]
    fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end, end, " == 0"), title=title)
    yield ctx.finding(PITFALL, remainder, "save", fix=fix, test=test, n=ctx.text(remainder.right))


@per_file
def _first_save(ctx: Context, branch: ast.If) -> ast.stmt | None:
    """The first statement of the branch's own body that saves a checkpoint: found once per
    `if`, however many saves it holds."""
    return next(
        (s for s in branch.body if type(s) is ast.Expr and _saves_a_checkpoint(s.value, ctx)),
        None,
    )


def _saves_a_checkpoint(call: ast.AST, ctx: Context) -> bool:
    if type(call) is not ast.Call:
        return False
    func = call.func
    name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
    if name == "save":
        return ctx.qualname(func) == "torch.save"
    return name in _SAVES


def _leaves_early(branch: ast.If) -> bool:
    """The branch's own body ends the iteration (`continue`, `break`, `return`)."""
    return any(type(s) in (ast.Continue, ast.Break, ast.Return) for s in branch.body)


def _inverted_guard(node: ast.Expr, ctx: Context) -> tuple[ast.If, ast.BinOp] | None:
    """The `if x % n:` whose body holds this optimizer update, within the innermost loop."""
    if stepped_optimizer(node.value, ctx) is None:
        return None
    return _guard_of(node, ctx)


def _guard_of(node: ast.Expr, ctx: Context) -> tuple[ast.If, ast.BinOp] | None:
    """The `if x % n:` whose body holds `node`, within the innermost loop."""
    child: ast.AST = node
    for ancestor in reversed(ctx.ancestors):
        if isinstance(ancestor, LOOPS + SCOPES):
            return None
        located = ctx.block_position(child, ancestor) if isinstance(ancestor, ast.If) else None
        if located is not None and located[0] is ancestor.body:
            remainder = _bare_remainder(ancestor.test)
            if remainder is not None:
                return ancestor, remainder
        child = ancestor
    return None


def _bare_remainder(test: ast.AST) -> ast.BinOp | None:
    """`x % n` used as a truth value, alone or as one operand of `and`."""
    operands = (
        test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    )
    for operand in operands:
        if (
            isinstance(operand, ast.BinOp)
            and isinstance(operand.op, ast.Mod)
            and not isinstance(operand.left, (ast.Constant, ast.JoinedStr))  # not "%s" % x
            and not mentions_epochs(operand.left)
        ):
            return operand
    return None


def _at_one_step(test: ast.AST) -> bool:
    """`if step == num_steps - 1 and ...`: the branch runs at one step, whatever the remainder."""
    return (
        isinstance(test, ast.BoolOp)
        and isinstance(test.op, ast.And)
        and any(
            isinstance(v, ast.Compare) and any(isinstance(op, ast.Eq) for op in v.ops)
            for v in test.values
        )
    )


def _counts_in_loop(expr: ast.AST, ctx: Context) -> bool:
    """Some name in `expr` changes in the innermost loop around the node: the loop's target,
    or a name it assigns (`step += 1`)."""
    loop = next((a for a in reversed(ctx.ancestors) if isinstance(a, LOOPS)), None)
    if loop is None:
        return _counted_by_method(expr, ctx)
    nodes = list(ast.walk(expr))
    if any(isinstance(n, ast.Attribute) for n in nodes):
        return True  # `self.step`: attributes are not followed, as before
    names = {n.id for n in nodes if isinstance(n, ast.Name)}
    found = index_of(ctx, loop)
    for name in names:
        if any(not isinstance(n.ctx, ast.Load) for n in found.names_in(loop, name)):
            return True
    return False


def _counted_by_method(expr: ast.AST, ctx: Context) -> bool:
    """No loop around: a method run once per step that counts its calls in an attribute the
    test reads (`self.total_steps += 1` in DeepRL's TD3 agent's `step`)."""
    function = ctx.enclosing_function()
    if function is None or ctx.enclosing_class() is None:
        return False
    tested = {n.attr for n in subtree(expr) if is_self_attribute(n)}  # type: ignore[attr-defined]
    return bool(tested & _counters(ctx, function))


@per_file
def _counters(ctx: Context, function: ast.AST) -> frozenset[str]:
    """The attributes a method adds to (`self.total_steps += 1`); read once per method."""
    return frozenset(
        node.target.attr  # type: ignore[attr-defined]
        for node in index_of(ctx, function).in_block(function.body, ast.AugAssign)  # type: ignore[attr-defined]
        if isinstance(node.op, ast.Add) and is_self_attribute(node.target)
    )


def _tested_elsewhere(remainder: ast.BinOp, branch: ast.If, ctx: Context) -> bool:
    """Another `if` of the same loop tests the same remainder (`if i % n == 0:` for the other
    optimizer): the two branches are meant to take turns."""
    tests = _remainder_tests(ctx, _innermost_loop_or_scope(ctx))
    return any(test is not branch for test in tests.get(ast.dump(remainder), ()))


@per_file
def _remainder_tests(ctx: Context, scope: ast.AST) -> dict[str, list[ast.If]]:
    """The `if`s under `scope` by each remainder (`x % n`) their tests compute, read once."""
    tests: dict[str, list[ast.If]] = {}
    for node in index_of(ctx, scope).in_block(scope.body, ast.If):
        remainders = {
            ast.dump(n)
            for n in subtree(node.test)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
        }
        for remainder in remainders:
            tests.setdefault(remainder, []).append(node)
    return tests


def _innermost_loop_or_scope(ctx: Context) -> ast.AST:
    for ancestor in reversed(ctx.ancestors):
        if isinstance(ancestor, LOOPS + SCOPES):
            return ancestor
    return ctx.tree
