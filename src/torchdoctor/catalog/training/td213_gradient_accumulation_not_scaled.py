"""TD213 gradient-accumulation-not-scaled: one update every k backwards of a loss never divided
by k, so the gradient is a sum of k losses and the effective learning rate k times larger."""

from __future__ import annotations

import ast
import re
from itertools import islice
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Pitfall,
    attribute_values,
    bindings,
    is_self_attribute,
    scope_of,
    computes_a_loss,
    index_of,
    name_words,
    per_file,
    subtree,
)
from torchdoctor.catalog.training._loops import (
    mentions_epochs,
    LOOPS,
    SCOPES,
    block_steps,
    last_identifier,
    stepped_optimizer,
)

PITFALL = Pitfall(
    code="TD213",
    name="gradient-accumulation-not-scaled",
    title={
        "en": "Gradient accumulation without dividing the loss by the accumulation steps",
        "zh": "梯度累积时没有把 loss 除以累积步数",
    },
    messages={
        "": {
            "en": "`{backward}` runs on every batch but the optimizer steps once every `{k}`, and "
            "`{loss}` is never divided by `{k}`: the gradients of `{k}` batches are summed, so "
            "the effective learning rate is `{k}` times larger; backpropagate `{loss} / {k}`",
            "zh": "`{backward}` 每个 batch 都执行，而优化器每 `{k}` 次才更新一次，`{loss}` 却从未除以 "
            "`{k}`：`{k}` 个 batch 的梯度被相加，实际学习率放大了 `{k}` 倍；应当对 `{loss} / {k}` "
            "做反向传播",
        }
    },
    fix_title={
        "en": "Divide the loss by the accumulation steps: `{scaled}`",
        "zh": "把 loss 除以累积步数：`{scaled}`",
    },
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
Gradient accumulation, an optimizer update once every `k` backward passes, where the loss
given to `backward()` is never divided by `k`:

- a `.backward()` on every batch and the update under `if (i + 1) % k == 0:` (or `if not
  i % k:`, with `or` the last batch), in the same loop or the same per-batch function;
- a `for micro_step in range(k):` loop of backward passes (its counter or `k` named as
  accumulation: `accum...`, `micro...`, `subdivisions`) followed by one update.

Only a loss whose making is visible is reported: a loss function's result
(`criterion(out, y)`, `F.cross_entropy(...)`, `compute_loss(...)`, `outputs.loss`,
`outputs["loss"]`) or a sum of such. Not reported: a loss divided or multiplied as a whole on
the way (`loss = loss / k`, `loss /= k`, `(loss / k).backward()`, `scaler.scale(loss / k)`,
`loss.div_(k)`, `loss * scale`), a loss function given `k`, a function that divides a loss by
`k` anywhere, `accelerator.backward(loss)` (Accelerate, DeepSpeed and the like divide for you),
a loss that comes from an opaque call or a parameter, loops that also update an optimizer on
every batch or clear the gradients on every batch (no accumulation then), a function that sums
its losses on purpose (`reduction="sum"`, `size_average=False`, or a comment saying it uses
reduction sum: a sum over the window is then the sum over the larger batch), and an optimizer
that divides the gradient by a running measure of its own size when nothing else sees the
scale: one built in the function or on `self` as Adam, AdamW, Adamax, NAdam, RAdam, Adagrad,
Adadelta or RMSprop, with no weight decay added to the gradient (AdamW's is decoupled from
it) and no gradient clipping in the loop (stylegan-xl's StyleMC: the summed gradient gives
the step of the mean there, epsilon aside).

## Why is this bad?
Gradients add up over backward passes. A loss that is a mean over one batch, summed over `k`
batches, gives a gradient `k` times that of the mean over the large batch that accumulation
stands for. With SGD the step is `k` times too large (the learning rate tuned for one batch
no longer fits); gradient clipping clips `k` times more; changing `k` changes the training.
Adam mostly hides the scale, but not its epsilon, weight decay ratio or clipping.

## Symptoms
Training diverges or gets noisier as soon as accumulation is turned on, a loss that becomes
NaN with a larger `k`, results that change with `k` at the same effective batch size.

## Fix safety
The fix divides the loss given to `backward()` by `k`. It is unsafe: it changes the updates,
which is its purpose. If the learning rate was tuned for the summed gradient, divide the
learning rate by `k` as well; if the sum is meant, keep it and add `# noqa: TD213`.

## Known problems
A loss scaled inside a function of another file, or a learning rate divided by `k` instead,
is not seen, and the code is reported. Not caught: windows counted without a remainder
(`if ni - last_opt_step >= accumulate:`), losses made by an opaque call, and the last, partial
window of an epoch. On 112 real projects (timm, transformers, Lightning, ignite, espnet,
torchrl, cleanrl, fairseq and others) it reports one place, a true one (PyTorch-YOLOv3's
darknet `subdivisions`); the other nine accumulation windows found there divide their loss.
""",
        "zh": """
## What it catches
梯度累积（每 `k` 次反向传播才更新一次优化器），而传给 `backward()` 的 loss 从未除以 `k`：

- 每个 batch 都调用 `.backward()`，更新写在 `if (i + 1) % k == 0:`（或 `if not i % k:`，
  可带 `or` 最后一个 batch）之下，且二者在同一个循环或同一个按 batch 调用的函数里；
- 一个 `for micro_step in range(k):` 循环做多次反向传播（循环变量或 `k` 的名字表明是累积：
  `accum...`、`micro...`、`subdivisions`），循环之后更新一次。

只报告能看清 loss 来历的情况：loss 函数的结果（`criterion(out, y)`、`F.cross_entropy(...)`、
`compute_loss(...)`、`outputs.loss`、`outputs["loss"]`）或它们的和。以下不报告：loss 在途中被整体
除或乘过（`loss = loss / k`、`loss /= k`、`(loss / k).backward()`、`scaler.scale(loss / k)`、
`loss.div_(k)`、`loss * scale`）；loss 函数接收了 `k`；函数里任何地方把 loss 除以 `k`；
`accelerator.backward(loss)`（Accelerate、DeepSpeed 等会替你除）；loss 来自看不透的调用或参数；
循环里还有每个 batch 都更新的优化器或每个 batch 都清零梯度（那就没有累积）；函数有意对 loss 求和
（`reduction="sum"`、`size_average=False`，或注释说明用的是 sum 归约：窗口内求和就等于对大 batch 求和）；
优化器按梯度自身大小的滑动估计来缩放梯度、而别处也不受这个倍数影响时：在函数中或 `self` 上构建的 Adam、
AdamW、Adamax、NAdam、RAdam、Adagrad、Adadelta 或 RMSprop，没有加到梯度上的权重衰减（AdamW 的衰减与梯度
无关），循环里也没有梯度裁剪（stylegan-xl 的 StyleMC：这时累加梯度得到的步长与平均梯度相同，只差 epsilon）。

## Why is this bad?
多次反向传播的梯度是相加的。每个 batch 的 loss 是该 batch 上的平均，`k` 个 batch 相加后，
梯度是累积所代表的大 batch 平均梯度的 `k` 倍。对 SGD 来说步长大了 `k` 倍（为单个 batch 调好的
学习率不再合适）；梯度裁剪的力度也大了 `k` 倍；改变 `k` 就改变了训练。Adam 大体能掩盖这个倍数，
但 epsilon、权重衰减的比例和梯度裁剪仍受影响。

## Symptoms
一打开梯度累积训练就发散或更抖，`k` 变大后 loss 变成 NaN，等效 batch 相同而 `k` 不同时结果不同。

## Fix safety
修复把传给 `backward()` 的 loss 除以 `k`。它是不安全的：它本来就会改变更新量。如果学习率是按相加的
梯度调好的，请把学习率也除以 `k`；如果确实有意相加，就保留原样并加上 `# noqa: TD213`。

## Known problems
在另一个文件的函数里缩放的 loss，或者改为把学习率除以 `k` 的写法，看不到，仍会被报告。
以下情况查不出：不用取余、而用计数判断的累积窗口（`if ni - last_opt_step >= accumulate:`），
来自看不透的调用的 loss，以及每个 epoch 最后一个不完整的窗口。在 112 个真实项目（timm、
transformers、Lightning、ignite、espnet、torchrl、cleanrl、fairseq 等）上它只报告一处，且属实
（PyTorch-YOLOv3 的 darknet `subdivisions`）；找到的其余九个累积窗口都除过 loss。
""",
    },
    example="""
import torch
import torch.nn.functional as F

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation_steps = 4
for i in range(100):
    x, y = torch.randn(8, 10), torch.randn(8, 1)
    loss = F.mse_loss(model(x), y)
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
    use_instead="""
import torch
import torch.nn.functional as F

model = torch.nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
accumulation_steps = 4
for i in range(100):
    x, y = torch.randn(8, 10), torch.randn(8, 1)
    loss = F.mse_loss(model(x), y) / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
""",
)

# Names that say a counted loop accumulates (`for micro_step in range(grad_accum):`).
_ACCUMULATION_WORDS = ("accum", "micro", "subdivision")
# Methods that scale a tensor in place or return it scaled.
_SCALING_METHODS = frozenset({"div", "div_", "mul", "mul_", "true_divide", "true_divide_"})
# Methods that keep a loss's scale (`criterion(out, y).mean()`).
_SCALE_KEEPING_METHODS = frozenset({"mean", "sum", "squeeze", "float", "clone", "contiguous"})
_MAX_DEPTH = 4
# A loss summed over its samples, said in code or a comment (`reduction="sum"`, "we use
# reduction==sum"): summing it over the window is summing over the larger batch, as meant.
_SUMMED_ON_PURPOSE = re.compile(r"reduction\W{0,4}sum\b|size_average\s*=\s*False")
_READ_NODES = 24
# Expressions that need no parentheses as an operand of `/`.
_ATOMS = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.Constant)
# Loss functions whose names do not say "loss" (the others are read by their name).
_FUNCTIONAL_LOSSES = frozenset(
    f"torch.nn.functional.{name}"
    for name in (
        "cross_entropy",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
    )
)


@PITFALL.static(ast.Expr, names={"step"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    optimizer = stepped_optimizer(node.value, ctx)
    if optimizer is None:
        return
    window = _guarded_window(node, ctx) or _micro_step_window(node, ctx)
    if window is None:
        return
    backwards, k = window
    scope = ctx.enclosing_function() or ctx.tree
    # The function, or at module level the statement holding the loop.
    region = ctx.ancestors[1] if scope is ctx.tree and len(ctx.ancestors) > 1 else scope
    if region is not ctx.tree and _SUMMED_ON_PURPOSE.search(ctx.text(region)):
        return
    if _scale_free(optimizer, ctx) and "clip_grad" not in ctx.text(region):
        return  # AdamW divides the summed gradient by its own size: the step is the same
    losses = [_backward_loss(call) for call in backwards]
    if not all(_unscaled_backward(ctx, loss, k, scope) for loss in losses):
        return
    divisions = _loss_divisions(ctx, scope)
    first = min((divisions[key] for key in _keys(k) if key in divisions), default=None)
    if first is not None and first < (backwards[0].lineno, backwards[0].col_offset):
        return  # a loss divided by `k` before its backward: scaled in a way not followed
    call, loss = backwards[0], losses[0]
    scaled = f"{_operand(loss, ctx)} / {_operand(k, ctx)}"
    if isinstance(loss, _ATOMS) and loss is call.func.value:
        scaled = f"({scaled})"  # `loss.backward()`; `(a + b).backward()` has its parentheses
    title = {lang: text.format(scaled=scaled) for lang, text in PITFALL.fix_title.items()}
    fix = ctx.fix(PITFALL, "unsafe", ctx.replace(loss, scaled), title=title)
    yield ctx.finding(
        PITFALL,
        call,
        fix=fix,
        backward=ctx.text(call),
        loss=ctx.text(loss),
        k=ctx.text(k),
    )


# Optimizers whose step divides the gradient by a running measure of its own size: a gradient k
# times larger gives the same step (but for epsilon, and L2 decay added to the gradient).
_SCALE_FREE = frozenset(
    f"torch.optim.{name}"
    for name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta", "RMSprop")
)


def _scale_free(optimizer: ast.AST, ctx: Context) -> bool:
    """The optimizer is built only as one of _SCALE_FREE with no weight decay added to the
    gradient (AdamW's decay is decoupled from it): `opt = torch.optim.AdamW([w], lr=0.05)`."""
    if isinstance(optimizer, ast.Name):
        found = bindings(ctx, scope_of(optimizer.id, ctx), optimizer.id) or ()
        made = [b.value for b in found]
    elif is_self_attribute(optimizer) and ctx.enclosing_class() is not None:
        made = list(attribute_values(ctx, ctx.enclosing_class(), optimizer.attr))  # type: ignore[arg-type, attr-defined]
    else:
        return False
    return bool(made) and all(
        isinstance(value, ast.Call)
        and ctx.qualname(value.func) in _SCALE_FREE
        and (ctx.qualname(value.func) == "torch.optim.AdamW" or not _decays(value))
        for value in made
    )


def _decays(call: ast.Call) -> bool:
    """Given a weight decay other than a literal zero (added to the gradient by Adam)."""
    decay = next((k.value for k in call.keywords if k.arg == "weight_decay"), None)
    return decay is not None and not (isinstance(decay, ast.Constant) and decay.value == 0)


def _operand(expr: ast.AST, ctx: Context) -> str:
    return ctx.text(expr) if isinstance(expr, _ATOMS) else f"({ctx.text(expr)})"


# ---- the accumulation window: which backward passes one update takes -------------------------


def _guarded_window(node: ast.Expr, ctx: Context) -> tuple[list[ast.Call], ast.AST] | None:
    """`if (i + 1) % k == 0: optimizer.step()` in a loop (or a per-batch function) whose
    backward passes run outside that `if`: the backward calls and `k`."""
    branch, remainder, owner = None, None, None
    child: ast.AST = node
    for ancestor in reversed(ctx.ancestors):
        if isinstance(ancestor, LOOPS + SCOPES):
            owner = ancestor
            break
        located = ctx.block_position(child, ancestor) if isinstance(ancestor, ast.If) else None
        if branch is None and located is not None and located[0] is ancestor.body:
            remainder = _multiple_test(ancestor.test)
            if remainder is not None:
                branch = ancestor
        child = ancestor
    if branch is None or remainder is None or owner is None or isinstance(owner, ast.ClassDef):
        return None
    if block_steps(ctx, branch)[0] is not node or not _counts(remainder.right):
        return None  # one finding per `if`; `% 1` never accumulates
    found = index_of(ctx, owner)
    steps = block_steps(ctx, owner)
    if len(steps) != len(block_steps(ctx, branch)):
        return None  # another update on every batch: the backward passes may be its own
    start, end = found.span(branch)
    backwards = [
        call for call in _backward_calls(ctx, owner) if not start <= found.number[call] < end
    ]
    if not backwards or _clears_every_batch(ctx, owner):
        return None
    return backwards, remainder.right


def _multiple_test(test: ast.AST) -> ast.BinOp | None:
    """The remainder of `x % k == 0`, `0 == x % k` or `not x % k`, alone or in `and`/`or`."""
    operands = test.values if isinstance(test, ast.BoolOp) else [test]
    for operand in operands:
        if isinstance(operand, ast.UnaryOp) and isinstance(operand.op, ast.Not):
            candidate = operand.operand
        elif (
            isinstance(operand, ast.Compare)
            and len(operand.ops) == 1
            and isinstance(operand.ops[0], ast.Eq)
        ):
            sides = (operand.left, operand.comparators[0])
            zero = [s for s in sides if isinstance(s, ast.Constant) and s.value == 0]
            candidate = next((s for s in sides if s not in zero), None) if zero else None
        else:
            continue
        if (
            isinstance(candidate, ast.BinOp)
            and isinstance(candidate.op, ast.Mod)
            and not isinstance(candidate.left, (ast.Constant, ast.JoinedStr))
            and not mentions_epochs(candidate.left)
        ):
            return candidate
    return None


def _counts(k: ast.AST) -> bool:
    """`k` may be more than 1: a name, or a literal integer above 1."""
    if isinstance(k, ast.Constant):
        return isinstance(k.value, int) and not isinstance(k.value, bool) and k.value > 1
    return True


def _micro_step_window(node: ast.Expr, ctx: Context) -> tuple[list[ast.Call], ast.AST] | None:
    """`for micro_step in range(k): ... loss.backward()` right before the update: the backward
    calls of that loop and `k`."""
    located = ctx.block_position(node, ctx.ancestors[-1]) if ctx.ancestors else None
    if located is None:
        return None
    block, at = located
    for statement in reversed(block[max(0, at - 4) : at]):
        if isinstance(statement, ast.Expr) and stepped_optimizer(statement.value, ctx):
            return None  # the loop's update is an earlier one
        if isinstance(statement, LOOPS):
            break
    else:
        return None
    k = _accumulation_range(statement)
    if k is None or block_steps(ctx, statement) or _clears_every_batch(ctx, statement):
        return None
    backwards = _backward_calls(ctx, statement)
    return (backwards, k) if backwards else None


def _accumulation_range(loop: ast.AST) -> ast.AST | None:
    """`k` of `for <counter> in range(k):` when the counter or `k` is named as accumulation."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call):
        return None
    call = loop.iter
    if not (isinstance(call.func, ast.Name) and call.func.id == "range") or len(call.args) != 1:
        return None
    k = call.args[0]
    if not _counts(k):
        return None
    named = {n.id for n in subtree(loop.target) if isinstance(n, ast.Name)}
    named |= {last_identifier(n) or "" for n in subtree(k) if isinstance(n, ast.Attribute)}
    named |= {n.id for n in subtree(k) if isinstance(n, ast.Name)}
    words = {word for name in named for word in name_words(name)}
    return k if any(w.startswith(_ACCUMULATION_WORDS) for w in words) else None


@per_file
def _backward_calls(ctx: Context, owner: ast.AST) -> list[ast.Call]:
    """The `x.backward()` calls of a loop or function (`accelerator.backward(loss)`, which
    scales for you, is not one)."""
    found = index_of(ctx, owner)
    return [
        call
        for call in found.calls_named(owner, ("backward",), local=True)
        if isinstance(call.func, ast.Attribute) and not call.args
    ]


@per_file
def _clears_every_batch(ctx: Context, owner: ast.AST) -> bool:
    """A `zero_grad()` (or `grad = None`) outside any `if` of the loop: nothing accumulates."""
    found = index_of(ctx, owner)
    for call in found.calls_named(owner, ("zero_grad",), local=True):
        parent = found.parents.get(call)
        while parent is not None and parent is not owner and not isinstance(parent, ast.If):
            parent = found.parents.get(parent)
        if parent is owner:
            return True
    return False


# ---- the loss: made where it can be read, and never scaled ------------------------------------


def _backward_loss(call: ast.Call) -> ast.AST:
    """`loss` of `loss.backward()` and of `scaler.scale(loss).backward()`."""
    receiver = call.func.value
    if (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
        and len(receiver.args) == 1
    ):
        return receiver.args[0]
    return receiver


def _unscaled_loss(
    expr: ast.AST,
    k: ast.AST,
    scope: ast.AST,
    ctx: Context,
    whole: bool = True,
    depth: int = 0,
    resolving: frozenset[str] = frozenset(),
) -> bool:
    """`expr` is certainly a loss function's result (or a sum of them) that nothing divides
    or multiplies as a whole; False when it is scaled or its making is not seen. `resolving`:
    the names whose bindings are being read (`loss = loss + aux` reads `loss` once)."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, ast.Name):
        if expr.id in resolving:
            return True  # its other bindings are read where it was first met
        return _unscaled_name(expr.id, k, scope, ctx, whole, depth, resolving | {expr.id})
    if isinstance(expr, ast.Attribute):
        return expr.attr == "loss" and isinstance(expr.value, ast.Name)
    if isinstance(expr, ast.Subscript):
        key = expr.slice
        return isinstance(key, ast.Constant) and key.value == "loss"
    if isinstance(expr, ast.BinOp):
        if isinstance(expr.op, (ast.Add, ast.Sub)):  # a loss plus terms that keep its scale
            sides = (expr.left, expr.right)
            return not any(_mentions(side, k) for side in sides) and any(
                _unscaled_loss(side, k, scope, ctx, False, depth + 1, resolving) for side in sides
            )
        if isinstance(expr.op, ast.Mult) and not whole:  # a weighted term of a sum
            weights = [s for s in (expr.left, expr.right) if not _mentions(s, k)]
            return len(weights) == 2 and any(
                _unscaled_loss(side, k, scope, ctx, False, depth + 1, resolving) for side in weights
            )
        return False
    if isinstance(expr, ast.Call):
        if isinstance(expr.func, ast.Attribute) and expr.func.attr in _SCALE_KEEPING_METHODS:
            receiver = expr.func.value
            return not expr.args and _unscaled_loss(
                receiver, k, scope, ctx, whole, depth, resolving
            )
        return _is_loss_call(expr, ctx) and not any(
            _mentions(arg, k) for arg in (*expr.args, *(kw.value for kw in expr.keywords))
        )
    return False


def _unscaled_backward(ctx: Context, loss: ast.AST, k: ast.AST, scope: ast.AST) -> bool:
    """`_unscaled_loss` of what one backward pass takes; a name's answer is read once for each
    window (`loss.backward()` many times in one loop)."""
    if isinstance(loss, ast.Name):
        return _unscaled_named_loss(ctx, loss.id, k, scope)
    return _unscaled_loss(loss, k, scope, ctx)


@per_file
def _unscaled_named_loss(ctx: Context, name: str, k: ast.AST, scope: ast.AST) -> bool:
    return _unscaled_name(name, k, scope, ctx, True, 0, frozenset({name}))


def _is_loss_call(call: ast.Call, ctx: Context) -> bool:
    """`criterion(out, y)`, `compute_loss(...)`, `F.cross_entropy(...)`: one loss value."""
    if computes_a_loss(call):
        return True
    if ctx.call_qualname(call) not in _FUNCTIONAL_LOSSES:
        return False
    return all(
        keyword.arg != "reduction"
        or (isinstance(keyword.value, ast.Constant) and keyword.value.value != "none")
        for keyword in call.keywords
    )


def _unscaled_name(
    name: str,
    k: ast.AST,
    scope: ast.AST,
    ctx: Context,
    whole: bool,
    depth: int,
    resolving: frozenset[str],
) -> bool:
    found = bindings(ctx, scope, name)
    if not found or _scaled_in_place(ctx, scope, name):
        return False
    found_index = index_of(ctx, scope)
    for binding in found:
        value = binding.value
        if binding.augmented:
            if not isinstance(binding.node.op, (ast.Add, ast.Sub)):
                return False  # `loss /= k`, `loss *= scale`
        elif value is None:
            value = _unpacked_from(binding.node, found_index)
            if value is None or not computes_a_loss(value):
                return False  # a parameter, a loop target, a `with ... as`: not followed
            continue
        if not _starts_a_sum(value) and not _unscaled_loss(
            value, k, scope, ctx, whole, depth + 1, resolving
        ):
            return False
    return True


def _unpacked_from(node: ast.AST, found) -> ast.AST | None:
    """The value of `loss, parts = value` for the name `loss` in it."""
    parent = found.parents.get(node)
    if isinstance(parent, ast.Tuple):
        statement = found.parents.get(parent)
        if isinstance(statement, ast.Assign) and parent in statement.targets:
            return statement.value
    return None


def _starts_a_sum(value: ast.AST) -> bool:
    """`loss = 0` before `loss += criterion(...)`: no scaling of its own."""
    return isinstance(value, ast.Constant) and isinstance(value.value, (int, float))


def _mentions(expr: ast.AST, k: ast.AST) -> bool:
    """`expr` reads the accumulation count `k` (by its last name)."""
    wanted = last_identifier(k)
    if wanted is None:
        return isinstance(k, ast.Constant) and any(
            isinstance(n, ast.Constant) and n.value == k.value for n in subtree(expr)
        )
    return any(
        last_identifier(n) == wanted
        for n in subtree(expr)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


@per_file
def _scaled_in_place(ctx: Context, scope: ast.AST, name: str) -> bool:
    """`name.div_(k)`, `name.mul_(s)` somewhere in the scope."""
    found = index_of(ctx, scope)
    return any(
        isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
        for call in found.calls_named(scope, _SCALING_METHODS)
    )


@per_file
def _loss_divisions(ctx: Context, scope: ast.AST) -> dict[str, tuple[int, int]]:
    """Where a loss-named value is first divided by each name or literal in the scope
    (`loss / accum`, `total_loss / self.grad_accum`, `loss /= k`), read once."""
    first: dict[str, tuple[int, int]] = {}
    for node in index_of(ctx, scope).under(scope, ast.BinOp, ast.AugAssign):
        if not isinstance(node.op, ast.Div):
            continue
        dividend = node.target if isinstance(node, ast.AugAssign) else node.left
        divisor = node.value if isinstance(node, ast.AugAssign) else node.right
        if not _names_a_loss(dividend):
            continue
        at = (node.lineno, node.col_offset)
        for key in _keys(divisor):
            first[key] = min(first.get(key, at), at)
    return first


def _keys(expr: ast.AST) -> set[str]:
    """The last names and the literals in `expr`: `args.accum * 2` -> {"accum", "2"}."""
    keys = set()
    for part in _first_nodes(expr):
        if isinstance(part, (ast.Name, ast.Attribute)):
            keys.add(last_identifier(part) or "")
        elif isinstance(part, ast.Constant):
            keys.add(repr(part.value))
    return keys


def _names_a_loss(expr: ast.AST) -> bool:
    return any(
        "loss" in name_words(last_identifier(n) or "")
        for n in _first_nodes(expr)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


def _first_nodes(expr: ast.AST) -> Iterator[ast.AST]:
    """The first nodes of `expr` (a divisor or a dividend is short; a long chain of divisions
    is not read again at each of its levels)."""
    return islice(ast.walk(expr), _READ_NODES)
