"""TD102 accumulated-loss-graph: `total += loss` across iterations keeps every graph alive."""

from __future__ import annotations

import ast
import re
import weakref
from bisect import bisect_right

from torchdoctor.catalog.sdk import (
    parameter_default,
    is_name,
    ACCUMULATES,
    ACCUMULATING_UPDATE,
    CALLED_WITHOUT_GRAD,
    attribute_values,
    computes_a_loss,
    is_self_attribute,
    Kind,
    index,
    lineage,
    runs_without_gradients,
    turns_recording_off,
    DETACHED_FROM,
    Context,
    constant_range,
    Finding,
    Monitor,
    Pitfall,
    bindings,
    dotted_name,
    index_of,
    methods_defined_once,
    nested_statements,
    per_file,
    scope_of,
    shorten,
    top_level_classes,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD102",
    name="accumulated-loss-graph",
    title={
        "en": "Loss tensor accumulated across iterations with its autograd graph",
        "zh": "跨迭代累加带计算图的损失张量",
    },
    messages={
        "": {
            "en": "`{total}` collects the loss tensor `{loss}` of every iteration, and with it each "
            "iteration's autograd graph: accumulate `{loss}.item()` (or `{loss}.detach()`)",
            "zh": "`{total}` 收集了每次迭代的损失张量 `{loss}`，也就留住了每次迭代的计算图："
            "请累加 `{loss}.item()`（或 `{loss}.detach()`）",
        },
        "evaluation": {
            "en": "`{total}` collects the loss tensor `{loss}` of every evaluation step, and with "
            "it each step's autograd graph (nothing here turns recording off): accumulate "
            "`{loss}.item()`, and evaluate under `torch.no_grad()`",
            "zh": "`{total}` 收集了每个评估步骤的损失张量 `{loss}`，也就留住了每一步的计算图"
            "（这里没有任何地方关闭梯度记录）：请累加 `{loss}.item()`，并在 `torch.no_grad()` 下评估",
        },
        "container": {
            "en": "`{total}` keeps `{loss}` of every iteration, which holds the loss `{part}` "
            "backward ran on, and with it each iteration's autograd graph: keep "
            "`{part}.item()` (or a detached copy) instead",
            "zh": "`{total}` 保存了每次迭代的 `{loss}`，其中的 `{part}` 正是做过反向传播的损失，"
            "也就留住了每次迭代的计算图：请改为保存 `{part}.item()`（或 detach 之后的副本）",
        },
        "attribute": {
            "en": "`{total}` keeps the loss tensor `{loss}` of every call of `{function}()`, and "
            "with it each call's autograd graph, for as long as the object lives: append "
            "`{loss}.item()` (or `{loss}.detach()`)",
            "zh": "`{total}` 保存了每次调用 `{function}()` 得到的损失张量 `{loss}`，也就在对象存活期间"
            "一直留住了每次调用的计算图：请改为追加 `{loss}.item()`（或 `{loss}.detach()`）",
        },
        "table": {
            "en": "`{total}` keeps the loss tensor `{loss}` of every iteration, and with it each "
            "iteration's autograd graph, for as long as the object lives: append its `.item()` "
            "(or its `.detach()`)",
            "zh": "`{total}` 保存了每次迭代的损失张量 `{loss}`，也就在对象存活期间一直留住了每次迭代的计算图："
            "请改为追加它的 `.item()`（或 `.detach()`）",
        },
        "meter": {
            "en": "`{total}.update(...)` adds the loss tensor `{loss}` of every iteration to the "
            "meter's running sum, and with it each iteration's autograd graph: pass "
            "`{loss}.item()`",
            "zh": "`{total}.update(...)` 把每次迭代的损失张量 `{loss}` 加进了计量器的累计和，"
            "也就留住了每次迭代的计算图：请传入 `{loss}.item()`",
        },
        "runtime": {
            "en": "the autograd graphs of the losses of {count} earlier steps (steps {first} to "
            "{last}) are still alive after their optimizer steps: something keeps those loss "
            "tensors (`total_loss += loss`, `losses.append(loss)`), and memory grows every "
            "step; keep `loss.item()` or `loss.detach()` instead",
            "zh": "之前 {count} 步（第 {first} 步到第 {last} 步）的损失的计算图在各自的优化器更新之后仍然存活："
            "有代码留住了这些损失张量（`total_loss += loss`、`losses.append(loss)`），内存每一步都在增长；"
            "请改为保存 `loss.item()` 或 `loss.detach()`",
        },
    },
    fix_title={"en": "Accumulate `{loss}.item()`", "zh": "改为累加 `{loss}.item()`"},
    fix_applicability="unsafe",
    fix_hint={
        "en": "Accumulate numbers, not graphs: `total_loss += loss.item()` (or "
        "`loss.detach()` to stay on the GPU), and `losses.append(loss.item())`.",
        "zh": "累加数值而不是计算图：`total_loss += loss.item()`（想留在 GPU 上就用 "
        "`loss.detach()`），以及 `losses.append(loss.item())`。",
    },
    docs={
        "en": """
## What it catches
Inside a loop that calls `loss.backward()` (or `scaler.scale(loss).backward()`,
`accelerator.backward(loss)`, ...), the same `loss` tensor added to a running total or
appended to a list that was created before the loop: `total_loss += loss`,
`total_loss = total_loss + loss`, `losses.append(loss)`, a running mean (`mloss = (mloss * i +
loss) / (i + 1)`); also a term of that loss
(`total_loss += clf_loss` after `loss = clf_loss + 0.25 * mmd_loss`; not the divisor of `loss /
steps`, a number), which carries the same
graph, and a sum that loss is added to (`final_loss += reg_loss` after `reg_loss.backward()`,
then `losses.update(final_loss)`); the item of a dict that is back-propagated, summed or appended
as it is (`vae_loss_sum += losses["total"]` after `losses["total"].backward()`); not a value the
loss is computed from (REINFORCE's discounted return, `R = r + gamma * R`,
then `loss = -torch.log(prob) * R`); and a dict or list appended
whole after backward ran on one of its items
(`outputs.append(output)` after `output["loss"].backward()`). The same through a method that
keeps the graph (`loss_f += loss.float()`), or handed to a meter's `update` (`losses =
AverageMeter()`, then `losses.update(loss)`) whose `update` adds its value to a running sum
(`self.sum += val * n`), in a class of the file or, for a class of another module, when a
module of the project has such an `update`. Also the very call the backpropagated loss was
made by, made again to be logged (`loss_val += criterion(output, y)` after `loss_train =
criterion(output, y)`): a new loss on the same graph. A loss handed back by a function
of the file that ran its backward (`batch_loss = train_step(...)`, whose every `return` gives
the `loss` it called `loss.backward()` on), or by a method of the class around
(`loss = self.update(batch)`), counts as backpropagated in the loop; so does one unpacked from
the place of a tuple every `return` fills with such a loss (`task_loss, accuracy =
self.train_task(task)`, cnaps).

Summing several loss terms before one backward (`loss = loss + aux_loss`, or a total that is
reset inside the loop) is fine and not reported, nor is a loss kept on one iteration only (under
`if step == 0:`, a test of the loop's own variable) or rebound to a number first (`loss =
loss.item()`, `loss = loss.data[0]`, or `loss = scalar(loss)` with a function of the project
every `return` of which takes the value out of the graph: `.item()`, `.tolist()`, `.numpy()`).
An evaluation loop that records gradients counts too: a function that neither backpropagates
nor steps anything, named to evaluate (`validate`, `epochVal`, `test_epoch`) or looping over
data named so, sums or keeps the losses of a model's outputs (`losstensorMean += loss(model(x),
y)`) with no `torch.no_grad()` around the loop, around a call of the function in the file, nor,
by the project's facts, around a call of its name in another file (CheXNet's validation, whose
`Variable(input, volatile=True)` has recorded gradients since PyTorch 0.4): every batch's graph
stays alive until the loop ends.
Nor is a total made anew for each batch of a loop over the data and added to in rounds of
`for _ in range(n_critic)` inside it (a discriminator's rounds, melgan): it keeps one batch's
graphs. A total set back to 0 only under an `if` (when it is
printed every 20 batches) is reported: it links the graphs of the iterations in between.
A loss computed in a training loop and appended to a list of a table the object holds
(`self.loss['l1'].append(self.L1_loss(out, y))`, the table made as `{'l1': [], ...}` and not
made again within the loops around) keeps every iteration's graph as long as the object lives.

## Why is this bad?
A loss tensor carries its `grad_fn`: the graph of the step that produced it. Adding it to a
total that lives across iterations links each step's graph to the next one, and a list of
losses holds every one of them. `backward()` frees the activations each graph saved, so what
stays is every step's graph nodes and loss values: memory grows a little with every step (more
for a large model, and without end over a long run), and the total becomes a tensor whose
history spans the whole epoch, which a later `backward()` through it cannot run. Where a loss
is kept before its backward, or a step runs none (`retain_graph=True`, an evaluation step
without `torch.no_grad()`), its activations stay too, and the GPU runs out of memory. What you
wanted is the number: `loss.item()` (or `loss.detach()` to stay on the GPU without a sync).

## Symptoms
GPU memory that grows with every iteration, then
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...` (older versions:
`RuntimeError: CUDA out of memory`) long after the first steps ran fine.

## Fix safety
The fix accumulates `loss.item()`, a Python float, instead of the tensor. It is unsafe because
the type changes: code that later treats the total or the list as tensors (`torch.stack(losses)`,
`total_loss.cpu()`) must be adapted. `.item()` also waits for the GPU at every step; use
`loss.detach()` instead if that matters.

## Known problems
Only losses on which `backward` is called in the same loop are recognised: a loss summed without
a backward in the loop (for example in an evaluation loop run without `torch.no_grad()`) is not
reported, because a total that is itself backpropagated after the loop looks the same. Nor is
a loop of at most 10 fixed iterations (`for _ in range(5)`): it keeps a few small graphs, and
nothing grows. Nor a sum made under `torch.no_grad()` (`with torch.no_grad(): total += loss`):
the new total records no graph (a list appended to there still keeps each loss's).
""",
        "zh": """
## What it catches
在调用了 `loss.backward()`（或 `scaler.scale(loss).backward()`、`accelerator.backward(loss)` 等）
的循环里，把同一个 `loss` 张量累加到循环之前就创建好的总和上，或追加到循环之前创建的列表里：
`total_loss += loss`、`total_loss = total_loss + loss`、`losses.append(loss)`、滑动平均
（`mloss = (mloss * i + loss) / (i + 1)`）；也包括这个损失的
某一项（`loss = clf_loss + 0.25 * mmd_loss` 之后的 `total_loss += clf_loss`；`loss / steps` 的除数不算，
它是个数），它带着同一张计算图；以及这个损失被加进去的和（`reg_loss.backward()` 之后 `final_loss += reg_loss`，
再 `losses.update(final_loss)`）；被反向传播的字典条目原样累加或追加（`losses["total"].backward()` 之后
`vae_loss_sum += losses["total"]`）也一样；但计算损失所用的值不算（REINFORCE 的折扣回报 `R = r + gamma * R`，
随后 `loss = -torch.log(prob) * R`）；
以及对其中某一项做了反向传播之后，被整个追加到列表里的字典或列表（`output["loss"].backward()` 之后的
`outputs.append(output)`）。经过保留计算图的方法（`loss_f += loss.float()`）也一样；交给计量器的
`update` 也一样（`losses = AverageMeter()` 之后 `losses.update(loss)`），只要它的 `update` 把值加进
累计和（`self.sum += val * n`）：计量器类在本文件中，或在另一个模块中且项目里有这样的 `update`。
为了记录而把做过反向传播的损失的那次调用再做一遍（`loss_train = criterion(output, y)` 之后
`loss_val += criterion(output, y)`）也一样：它是同一张计算图上的新损失。
本文件中做过反向传播、再把该损失返回的函数（`batch_loss = train_step(...)`，
它的每个 `return` 都返回调用过 `loss.backward()` 的 `loss`）给出的损失，也算在循环里做过反向传播；
从元组中解包出来、且每个 `return` 在该位置都放着这种损失的名字也一样（cnaps 的
`task_loss, accuracy = self.train_task(task)`）。

在一次反向传播之前把几项损失加在一起（`loss = loss + aux_loss`，或者在循环内部重新置零的总和）
是正常用法，不会报告；只在某一次迭代中保留的损失（在 `if step == 0:` 这类对循环变量本身的判断之下），
或先被重新赋值为数值（`loss = loss.item()`、`loss = loss.data[0]`，或者 `loss = scalar(loss)`，
其中 `scalar` 是项目中每个 `return` 都把值从计算图中取出的函数：`.item()`、`.tolist()`、`.numpy()`）的损失，
也不会报告。
记录梯度的评估循环也算：一个既不做反向传播、也不 step 任何东西的函数，名字表明它在评估（`validate`、`epochVal`、
`test_epoch`）或遍历名字如此的数据，把模型输出的损失累加或保存下来（`losstensorMean += loss(model(x), y)`），
而循环外、本文件中对该函数的调用外，以及（根据项目事实）其他文件中对这个名字的调用外，都没有 `torch.no_grad()`
（CheXNet 的验证：它的 `Variable(input, volatile=True)` 自 PyTorch 0.4 起仍会记录梯度）：
每个 batch 的计算图都会一直存活到循环结束。
在遍历数据的循环里每个 batch 都重新创建、再在其中的 `for _ in range(n_critic)` 多轮里累加的总和
（判别器的多轮更新，melgan）也不报告：它只保留一个 batch 的计算图。
只在某个 `if` 之下才置零的总和（例如每 20 个 batch 打印一次后置零）仍会报告：它把两次置零之间各次迭代的计算图连在一起。
在训练循环中算出的损失被追加到对象所持有的表中的某个列表里（`self.loss['l1'].append(self.L1_loss(out, y))`，
表由 `{'l1': [], ...}` 构造，且在外层循环中没有重新构造）时，也会报告：对象存活多久，每次迭代的计算图就保留多久。

## Why is this bad?
损失张量带着它的 `grad_fn`，也就是产生它的那一步的计算图。把它加到跨迭代存在的总和上，
会把每一步的计算图和下一步串起来；保存损失的列表则把每一步都留住。`backward()` 会释放每个计算图
保存的激活值，留下的是每一步的图节点和损失值：内存每一步都涨一点（模型越大涨得越多，长时间训练
会一直涨下去），而这个总和也成了历史贯穿整个 epoch 的张量，之后无法再对它 `backward()`。如果损失
在反向传播之前就被留住，或者某一步根本不做反向传播（`retain_graph=True`、没有 `torch.no_grad()`
的评估步骤），它的激活值也会被留住，显存最终耗尽。你真正想要的只是那个数：`loss.item()`
（如果想留在 GPU 上、避免同步，用 `loss.detach()`）。

## Symptoms
显存随着迭代不断增长，之后出现
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`（旧版本为
`RuntimeError: CUDA out of memory`），而最初的若干步都运行正常。

## Fix safety
修复后累加的是 `loss.item()`（Python 浮点数）而不是张量。它是不安全的，因为类型变了：
之后把总和或列表当作张量使用的代码（`torch.stack(losses)`、`total_loss.cpu()`）需要相应修改。
另外 `.item()` 每一步都会等待 GPU；如果在意这一点，请改用 `loss.detach()`。

## Known problems
只识别在同一个循环里调用了 `backward` 的损失：循环里没有反向传播的累加（例如没有包在
`torch.no_grad()` 里的验证循环）不会报告，因为“循环结束后对总和做反向传播”的写法看起来完全一样。
固定至多 10 次迭代的循环（`for _ in range(5)`）也不报告：它只留住几个小计算图，内存不会持续增长。
在 `torch.no_grad()` 下做的累加（`with torch.no_grad(): total += loss`）也不报告：新的总和不记录计算图
（在那里追加到列表的损失仍然带着各自的计算图）。
""",
    },
    example="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def train_epoch(model, loader, optimizer):
    total_loss = 0.0
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        total_loss += loss
    return total_loss / len(loader)
""",
    use_instead="""
import torch.nn as nn

criterion = nn.CrossEntropyLoss()


def train_epoch(model, loader, optimizer):
    total_loss = 0.0
    for images, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(images), labels)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    return total_loss / len(loader)
""",
)

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# Methods and functions whose result no longer carries the graph.
DETACHING_METHODS = frozenset({"item", "detach", "tolist", "numpy"})
DETACHING_FUNCTIONS = frozenset({"float", "int"})
# Calls that run backward on their first argument.
BACKWARD_FUNCTIONS = frozenset({"torch.autograd.backward"})
BACKWARD_RUNNERS = frozenset({"accelerate.Accelerator"})  # accelerator.backward(loss)
# Methods that return their argument scaled for backward: scaler.scale(loss).backward().
LOSS_WRAPPERS = frozenset({"scale"})


@PITFALL.static(ast.AugAssign)
def check_augmented(node: ast.AugAssign, ctx: Context) -> list[Finding] | None:
    if type(node.op) is not ast.Add or type(node.target) is not ast.Name:
        return None
    if runs_without_gradients(ctx):
        return None  # the sum is made with recording off: no graph (TrajectoryPredict)
    if type(node.value) is ast.Subscript:
        return _check_part(node, node.target.id, node.value, ctx)
    return _check(node, node.target.id, node.value, ctx)


def _check_part(
    statement: ast.stmt, total: str, part: ast.Subscript, ctx: Context, appended: bool = False
) -> list[Finding] | None:
    """`vae_loss_sum += losses["total"]` after `losses["total"].backward()` in the same loop
    (disentanglement-pytorch's VAE trainer), or `train_loss.append(losses["nll"])` before it
    (gradient-boosted-normalizing-flows): the item back-propagated, kept as it is."""
    if type(part.value) is not ast.Name:
        return None
    loops = _loops_repeating(statement, ctx)
    if loops is None:
        return None
    loop = loops[0]
    backpropagated = _backpropagated_parts(ctx, loop).get(part.value.id)
    if backpropagated is None or ast.dump(backpropagated) != ast.dump(part):
        return None
    if not _kept_across_steps(ctx, total, loops, appended):
        return None
    text = ctx.text(part)
    fix = _item_fix(part, text, text, ctx)
    return [ctx.finding(PITFALL, statement, fix=fix, total=total, loss=text)]


@PITFALL.static(ast.Assign)
def check_sum(node: ast.Assign, ctx: Context) -> list[Finding] | None:
    """`total = total + loss`; a running mean or average (`mloss = (mloss * i + loss) / (i +
    1)`: yingbiaoluo's OCR trainer, after YOLOv5's, which detaches its loss items first)."""
    value = node.value
    if type(value) is not ast.BinOp or len(node.targets) != 1:
        return None
    target = node.targets[0]
    if type(target) is not ast.Name or runs_without_gradients(ctx):
        return None
    if type(value.op) is ast.Add:
        if is_name(value.left, target.id):
            return _check(node, target.id, value.right, ctx)
        if is_name(value.right, target.id):
            return _check(node, target.id, value.left, ctx)
    if _adds_to_itself(value, target.id) and not _discounts_a_term(node, target.id, ctx):
        return _check(node, target.id, value, ctx)
    return None


def _discounts_a_term(statement: ast.stmt, name: str, ctx: Context) -> bool:
    """`R = r + gamma * R` where the loop back-propagates a loss computed from `R` (REINFORCE's
    discounted return, `loss = -torch.log(prob) * R`): a value the loss is made of, not a sum of
    losses."""
    loops = _loops_repeating(statement, ctx)
    return loops is not None and name in _backward_reading(ctx, loops[0])[0]


def _adds_to_itself(value: ast.BinOp, name: str) -> bool:
    """`(name * i + x) / (i + 1)`, `name * 0.9 + x * 0.1`: a sum with `name` itself as a bare
    operand (scaled or not) on one side of an addition."""
    if type(value.op) in (ast.Div, ast.Mult):
        return any(
            type(side) is ast.BinOp and _adds_to_itself(side, name)
            for side in (value.left, value.right)
        )
    return type(value.op) is ast.Add and any(
        is_name(operand, name)
        for side in (value.left, value.right)
        for operand in _bare_operands(side, through_methods=False)
    )


@PITFALL.static(ast.Expr, names={"append"})
def check_append(node: ast.Expr, ctx: Context) -> list[Finding] | None:
    call = node.value
    if not isinstance(call.func, ast.Attribute) or len(call.args) != 1 or call.keywords:
        return None
    owner = call.func.value
    if type(owner) is ast.Name and type(call.args[0]) is ast.Subscript:
        return _check_part(node, owner.id, call.args[0], ctx, appended=True)
    if type(owner) is ast.Name:
        return _check(node, owner.id, call.args[0], ctx, appended=True)
    if is_self_attribute(owner) and type(call.args[0]) is ast.Name:
        return _kept_on_self(node, owner.attr, call.args[0], ctx)  # type: ignore[attr-defined]
    if type(owner) is ast.Subscript and is_self_attribute(owner.value):
        return _kept_in_self_table(node, owner, call.args[0], ctx)
    return None


def _kept_in_self_table(
    statement: ast.stmt, owner: ast.Subscript, added: ast.expr, ctx: Context
) -> list[Finding] | None:
    """`self.loss['translation_loss_L1'].append(self.L1_loss(out, y))` in a training loop: a
    loss computed there, on the loop's graph, kept in a list of a table of lists the object
    holds, which the loop never empties (in2364-adl4cv's solver)."""
    table = owner.value.attr  # type: ignore[attr-defined]
    key = owner.slice
    if type(key) is not ast.Constant or type(key.value) is not str or not computes_a_loss(added):
        return None
    function, cls = ctx.enclosing_function(), ctx.enclosing_class()
    loops = _loops_repeating(statement, ctx)
    if function is None or cls is None or loops is None or runs_without_gradients(ctx):
        return None
    loop = loops[0]
    if not index_of(ctx, loop).calls_named(loop, ["backward"]):
        return None  # no graph is built for training here
    made = attribute_values(ctx, cls, table)
    if not made or not all(_table_of_empty_lists(value) for value in made):
        return None
    outer = loops[-1]  # emptied now and then (each epoch): left alone, as for names
    if any(_inside(value, outer) for value in made) or _resets_in(ctx, cls, table, outer):
        return None
    shown = {"total": shorten(ctx.text(owner)), "loss": shorten(ctx.text(added))}
    return [ctx.finding(PITFALL, statement, "table", **shown)]


def _an_empty_list(value: ast.expr, cls: ast.ClassDef, ctx: Context) -> bool:
    """`[]`, `list()`, or a parameter of the class's `__init__` given one as its default
    (deep_rl's `def __init__(self, ..., q_losses=list()): self.q_losses = q_losses`)."""
    if type(value) is ast.Name:
        init = methods_defined_once(ctx, cls).get("__init__")
        default = parameter_default(init, value.id) if init is not None else None
        return default is not None and _an_empty_list(default, cls, ctx)
    if type(value) is ast.Call:
        return is_name(value.func, "list") and not value.args and not value.keywords
    return type(value) is ast.List and not value.elts


def _table_of_empty_lists(value: ast.expr) -> bool:
    """`{'l1': [], 'l2': []}`: a dict display whose every value is an empty list."""
    return (
        type(value) is ast.Dict
        and bool(value.values)
        and all(type(v) is ast.List and not v.elts for v in value.values)
    )


def _resets_in(ctx: Context, cls: ast.ClassDef, attribute: str, loop: ast.stmt) -> bool:
    """The loop calls a method of the class that assigns `self.<attribute>` (`self._reset()`)."""
    methods = methods_defined_once(ctx, cls)
    names = [
        name
        for name, method in methods.items()
        if any(_inside(value, method) for value in attribute_values(ctx, cls, attribute))
    ]
    return bool(names) and any(
        type(call.func) is ast.Attribute and is_self_attribute(call.func)
        for call in index_of(ctx, loop).calls_named(loop, names)
    )


def _kept_on_self(
    statement: ast.stmt, attribute: str, loss: ast.Name, ctx: Context
) -> list[Finding] | None:
    """`self.cost_his.append(loss)` in a method that ran `loss.backward()`, the list made empty
    elsewhere in the class and never here: it keeps every call's graph as long as the object
    lives (a DQN's `learn()`, called each step)."""
    function, cls = ctx.enclosing_function(), ctx.enclosing_class()
    if function is None or cls is None or loss.id not in _backward_roots(ctx, function):
        return None
    made = attribute_values(ctx, cls, attribute)
    if not made or any(
        not _an_empty_list(value, cls, ctx) or _inside(value, function) for value in made
    ):
        return None
    if (
        _always_a_number(ctx, function, loss.id)
        or _just_made_a_number(ctx, statement, loss.id)
        or _detached_in(ctx, function, loss.id, function)
    ):
        return None
    fix = _item_fix(loss, loss.id, loss.id, ctx)
    shown = {"total": f"self.{attribute}", "loss": loss.id, "function": function.name}
    return [ctx.finding(PITFALL, statement, "attribute", fix=fix, **shown)]


@PITFALL.static(ast.Expr, names={"update"})
def check_meter(node: ast.Expr, ctx: Context) -> list[Finding] | None:
    """`losses.update(loss)` with `losses = AverageMeter()`, whose `update` adds its value to a
    running sum (`self.sum += val * n`): the sum holds every iteration's graph."""
    call = node.value
    func = call.func
    if type(func) is not ast.Attribute or type(func.value) is not ast.Name or not call.args:
        return None
    if not _makes_meters(ctx):  # most files (and `dict.update`): no meter made at all
        return None
    meter = func.value.id
    if not _accumulating_meter(ctx, scope_of(meter, ctx), meter):
        return None
    return _check(node, meter, call.args[0], ctx, appended=True, variant="meter")


@per_file
def _makes_meters(ctx: Context) -> bool:
    return "Meter(" in ctx.source  # `AverageMeter()`, `AvgMeter()` (read once per file)


@per_file
def _accumulating_meter(ctx: Context, scope: ast.AST, name: str) -> bool:
    """`name` is only bound to a new object of a class named as a meter (`AverageMeter()`)
    whose `update` adds its value to an attribute: the class of this file, or one of another
    module when some module of the project has such an `update`."""
    found = bindings(ctx, scope, name)
    classes = {
        (dotted_name(b.value.func) or "") if type(b.value) is ast.Call else "" for b in found or ()
    }
    if len(classes) != 1:
        return False
    cls = classes.pop().rpartition(".")[2]
    if "meter" not in cls.lower():
        return False
    own = top_level_classes(ctx).get(cls)
    if own is None:
        return ctx.project.has(ACCUMULATES + cls)
    return any(
        ACCUMULATING_UPDATE.search(ctx.text(method).encode()) is not None
        for method in own.body
        if isinstance(method, ast.FunctionDef) and method.name == "update"
    )


def _check(
    statement: ast.stmt,
    total: str,
    added: ast.expr,
    ctx: Context,
    appended: bool = False,
    variant: str = "",
) -> list[Finding] | None:
    operands = [name for name in _bare_operands(added) if name.id != total]
    if not operands:
        if type(added) is ast.Call and not variant:
            return _recomputed_loss(statement, total, added, ctx, appended)
        return None
    loops = _loops_repeating(statement, ctx)
    if loops is None:
        return None
    loop = loops[0]
    backpropagated = _backward_roots(ctx, loop)
    losses = [
        name
        for name in operands
        if name.id in backpropagated
        and not _always_a_number(ctx, scope_of(name.id, ctx), name.id)
        and not _just_made_a_number(ctx, statement, name.id)
    ]
    losses = [name for name in losses if not _item_of_the_loop(name.id, loop)]
    meter = variant == "meter"
    if not losses and not backpropagated and not meter:
        losses = _evaluation_losses_kept(operands, loop, ctx)
        variant = "evaluation"
    if not losses:
        if appended and not meter:  # `outputs.append(output)` after `output["loss"].backward()`
            kept = _container_kept(statement, total, operands, loop, ctx)
            return [kept] if kept is not None else None
        return None
    if not _kept_across_steps(ctx, total, loops, appended):
        return None
    loss = losses[0]
    if _detached_in(ctx, scope_of(loss.id, ctx), loss.id, loop):
        return None
    terms = _backward_reading(ctx, loop)[0]
    if all(
        name.id not in terms and _summed_by_a_training_loop(name.id, loop, ctx) for name in losses
    ):
        return None  # `loss_arr.append(epoch_loss)`: reported where `epoch_loss += loss` sums them
    fix = None
    if any(name is loss for name in _bare_operands(added, through_methods=False)):
        fix = _item_fix(loss, loss.id, loss.id, ctx)
    return [ctx.finding(PITFALL, statement, variant, fix=fix, total=total, loss=loss.id)]


def _kept_across_steps(ctx: Context, total: str, loops: list[ast.stmt], appended: bool) -> bool:
    """`total`, added to in `loops[0]`, holds values of more than one optimizer step: it
    outlives an iteration, and is not made anew for each step of the loop around (nor is the
    loop one step's gradient accumulation)."""
    scope = scope_of(total, ctx)
    loop = loops[0]
    if not _outlives_iteration(ctx, scope, total, loop, appended):
        return False
    if len(loops) > 1:
        return not _reset_each_step(ctx, scope, total, loop, loops[1])
    return not _one_step_accumulated(ctx, scope, total, loop)


def _item_of_the_loop(name: str, loop: ast.stmt) -> bool:
    """`name` is what the loop takes from a collection it is given (`for aux_loss in
    aux_list:`, compressai's `compute_aux_loss`): the graphs were all made before the loop, and
    summing them keeps none the collection does not already hold."""
    if type(loop) is not ast.For or not is_name(loop.target, name):
        return False
    collection = loop.iter
    if (
        type(collection) is ast.Call
        and type(collection.func) is ast.Attribute
        and not collection.args
    ):
        if collection.func.attr != "values":
            return False
        collection = collection.func.value  # `for loss in losses.values():`
    return type(collection) in (ast.Name, ast.Attribute)


def _loops_repeating(statement: ast.stmt, ctx: Context) -> list[ast.stmt] | None:
    """The loops around `statement`, innermost first, when the innermost runs it round after
    round (not a loop of a few rounds, nor only once in it)."""
    loops = _loops_around(ctx)
    if not loops or _few_iterations(loops[0]) or _once_in_the_loop(statement, ctx):
        return None
    return loops


def _item_fix(loss: ast.AST, text: str, shown: str, ctx: Context):
    """Replace the loss `text` at `loss` by its `.item()`, the title showing it as `shown`."""
    title = {lang: t.format(loss=shown) for lang, t in PITFALL.fix_title.items()}
    return ctx.fix(PITFALL, "unsafe", ctx.replace(loss, f"{text}.item()"), title=title)


def _recomputed_loss(
    statement: ast.stmt, total: str, added: ast.Call, ctx: Context, appended: bool
) -> list[Finding] | None:
    """`loss_val += criterion(output, y)`: the very call the loop's backpropagated loss is bound
    to (`loss_train = criterion(output, y)`, then `loss_train.backward()`), made again to be
    logged: a new loss on the same graph (Toy-GCN)."""
    loops = _loops_repeating(statement, ctx)
    if loops is None:
        return None
    loop = loops[0]
    backpropagated = _backward_roots(ctx, loop)
    if not backpropagated:
        return None
    text = ctx.text(added)
    if not any(
        len(s.targets) == 1
        and type(s.targets[0]) is ast.Name
        and s.targets[0].id in backpropagated
        and type(s.value) is ast.Call
        and ctx.text(s.value) == text
        for s in index_of(ctx, loop).in_block(loop.body, ast.Assign)  # type: ignore[attr-defined]
    ):
        return None
    if not _outlives_iteration(ctx, scope_of(total, ctx), total, loop, appended):
        return None
    shown = shorten(text)
    fix = _item_fix(added, text, shown, ctx)
    return [ctx.finding(PITFALL, statement, fix=fix, total=total, loss=shown)]


# ---- an evaluation loop that records gradients -------------------------------------------------

# Words of a function, or of what a loop iterates, that evaluates.
_EVALUATION_WORDS = frozenset(
    "val valid validate validation eval evaluate evaluation test testing".split()
)
_WORD = re.compile(r"[a-z]+|[A-Z][a-z]*")
_TRAINING_WORDS = (
    ".backward(",
    ".step(",
    "enable_grad",
    "set_grad_enabled",
    "autograd.grad(",
    "requires_grad",
)


def _evaluation_losses_kept(
    operands: list[ast.Name], loop: ast.stmt, ctx: Context
) -> list[ast.Name]:
    """The operands that are losses of a model's outputs made in an evaluation loop that records
    gradients: its function neither backpropagates nor steps anything, is named to evaluate or
    loops over data named so, and no `no_grad` is around it, nor around a call of it in the file,
    nor (by the project's facts) around a call of its name in another file. CheXNet's `epochVal`:
    `losstensorMean += losstensor` with inputs wrapped in `Variable(..., volatile=True)`, which
    has recorded gradients since PyTorch 0.4: every batch's graph is kept."""
    function = ctx.enclosing_function()
    if function is None or not _evaluates(ctx, function, loop) or runs_without_gradients(ctx):
        return []
    if _called_without_gradients(ctx, function):
        return []
    return [name for name in operands if _loss_of_a_model_run(ctx, function, loop, name.id)]


@per_file
def _evaluates(ctx: Context, function: ast.AST, loop: ast.stmt) -> bool:
    source = "\n".join(ctx.lines[function.lineno - 1 : function.end_lineno])  # type: ignore[attr-defined]
    if any(word in source for word in _TRAINING_WORDS):
        return False  # trains, or sets recording itself: not this variant's to judge
    iterated = ctx.text(loop.iter) if type(loop) in (ast.For, ast.AsyncFor) else ""  # type: ignore[attr-defined]
    words = {w.lower() for w in _WORD.findall(function.name + " " + iterated)}  # type: ignore[attr-defined]
    return bool(words & _EVALUATION_WORDS)


@per_file
def _called_without_gradients(ctx: Context, function: ast.AST) -> bool:
    """Some call of `function`'s name in the file runs with recording off, or one in another
    file of the project does (`with torch.no_grad(): validate(...)`)."""
    name = function.name  # type: ignore[attr-defined]
    if ctx.project.has(CALLED_WITHOUT_GRAD + name):
        return True
    found = index(ctx)
    for at in found.calls.get(name, ()):
        for node, _ in lineage(found.nodes[at], found.parents):
            if turns_recording_off(node, ctx, maybe=True):
                return True
    return False


def _loss_of_a_model_run(ctx: Context, function: ast.AST, loop: ast.stmt, name: str) -> bool:
    """Every binding of `name` in the loop is a call of a loss (a name that says `loss` or
    `crit`) given a model's output: the model called right there, or a name the loop binds to
    such a call (`varOutput = model(varInput)`, then `losstensor = loss(varOutput, target)`)."""
    found = [b for b in bindings(ctx, function, name) or () if _inside(b.node, loop)]
    return bool(found) and all(_loss_call_of_outputs(ctx, function, loop, b.value) for b in found)


def _loss_call_of_outputs(
    ctx: Context, function: ast.AST, loop: ast.stmt, value: ast.AST | None
) -> bool:
    if type(value) is not ast.Call or not any(
        w in _last_word(value.func) for w in ("loss", "crit")
    ):
        return False
    if type(value.func) is ast.Attribute and _is_a_model(value.func.value, ctx):
        return True  # `model.batchNLLLoss(src, tgt)`: the model runs itself to give its loss
    for argument in value.args:
        if type(argument) is ast.Call and _runs_a_model(argument, ctx):
            return True
        if type(argument) is ast.Name:
            made = [b for b in bindings(ctx, function, argument.id) or () if _inside(b.node, loop)]
            if made and all(
                type(b.value) is ast.Call and _runs_a_model(b.value, ctx) for b in made
            ):
                return True
    return False


def _runs_a_model(call: ast.Call, ctx: Context) -> bool:
    """`model(x)`, `self.net(x)`, `model.forward(x)`: a model by its name or its kind."""
    func = call.func
    if type(func) is ast.Attribute and func.attr == "forward":
        func = func.value
    return _is_a_model(func, ctx)


def _is_a_model(func: ast.AST, ctx: Context) -> bool:
    """`model`, `self.net`, `encoder_model`: a model by its name or its kind."""
    word = _last_word(func)
    return (
        word in ("model", "net", "network")
        or word.endswith(("model", "net"))
        or (type(func) in (ast.Name, ast.Attribute) and ctx.kind_of(func) is Kind.MODULE)
    )


def _last_word(expr: ast.AST) -> str:
    if type(expr) is ast.Attribute:
        return expr.attr.lower()
    return expr.id.lower() if type(expr) is ast.Name else ""


# A loop of at most this many iterations (`for _ in range(5)`, a test's mini training run) keeps
# at most that many small graphs: nothing grows.
FEW_ITERATIONS = 10


@per_file
def _always_a_number(ctx: Context, scope: ast.AST, name: str) -> bool:
    """Every binding of `name` makes a Python number (`num_remember = max(int(round(n * r)), 1)`,
    a factor of the loss that `backward` runs on, not a loss: InsightFace_Pytorch's co-teaching)."""
    found = bindings(ctx, scope, name)
    return bool(found) and all(_makes_a_number(b.value) for b in found)


_NUMBER_FUNCTIONS = frozenset({"int", "float", "len"})
# How far back in its block a statement's rebinding of a name is looked for.
_REBINDING_REACH = 16


def _just_made_a_number(ctx: Context, statement: ast.stmt, name: str) -> bool:
    """An earlier statement of the statement's block rebinds `name` to a Python number made of
    `.item()` (an LR finder's `loss = smoothing * loss.item() + (1 - smoothing) * losses[-1]`,
    then `losses.append(loss)`): the tensor that was backpropagated is not what is kept."""
    owner = ctx.parent()
    place = ctx.block_position(statement, owner) if owner is not None else None
    if place is None:
        return False
    block, index = place
    for earlier in reversed(block[max(0, index - _REBINDING_REACH) : index]):
        if type(earlier) is ast.Assign and any(
            type(t) is ast.Name and t.id == name for t in earlier.targets
        ):
            return _number_of_items(earlier.value)
        if type(earlier) in (ast.AugAssign, ast.AnnAssign) and is_name(earlier.target, name):
            return False
    return False


def _number_of_items(value: ast.AST) -> bool:
    """Arithmetic of `.item()` results with constants, names and items of lists: a float."""
    found_item = False
    todo = [value]
    while todo:
        node = todo.pop()
        if type(node) is ast.BinOp:
            todo += (node.left, node.right)
        elif type(node) is ast.UnaryOp:
            todo.append(node.operand)
        elif type(node) is ast.Call:
            func = node.func
            if type(func) is ast.Attribute and func.attr == "item" and not node.args:
                found_item = True
            elif not (type(func) is ast.Name and func.id in _NUMBER_FUNCTIONS):
                return False
        elif type(node) not in (ast.Constant, ast.Name, ast.Subscript, ast.Attribute):
            return False
    return found_item


def _makes_a_number(value: ast.AST | None) -> bool:
    if isinstance(value, ast.Constant):
        return type(value.value) in (int, float)
    if isinstance(value, ast.BinOp):
        return _makes_a_number(value.left) and _makes_a_number(value.right)
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    if value.func.id in _NUMBER_FUNCTIONS:
        return True
    # `max(int(...), 1)`: a number when its arguments are (of tensors, it is a tensor).
    return value.func.id in ("max", "min", "round") and all(_makes_a_number(a) for a in value.args)


def _few_iterations(loop: ast.stmt) -> bool:
    count = constant_range(loop)
    return count is not None and count <= FEW_ITERATIONS


def _once_in_the_loop(statement: ast.stmt, ctx: Context) -> bool:
    """The statement runs under `if step == 0:`, an `==` test of the variable of a loop around
    it (in its function): on one turn of that loop only, so nothing keeps growing (apex's
    buffers kept for a CUDA graph's capture)."""
    counters: set[str] = set()
    line = statement.lineno
    for node in ctx.ancestors:
        if isinstance(node, _FUNCTIONS):
            counters = set()  # the loops of an enclosing function run it whole each time
        elif isinstance(node, _LOOPS) and getattr(node, "target", None) is not None:
            counters.update(n.id for n in ast.walk(node.target) if type(n) is ast.Name)
        elif type(node) is ast.If and node.body[0].lineno <= line <= node.body[-1].end_lineno:
            test = node.test
            if (
                type(test) is ast.Compare
                and len(test.ops) == 1
                and type(test.ops[0]) is ast.Eq
                and any(
                    type(side) is ast.Name and side.id in counters
                    for side in (test.left, *test.comparators)
                )
            ):
                return True
    return False


def _bare_operands(expr: ast.expr, through_methods: bool = True) -> list[ast.Name]:
    """Names used as they are in a sum or product: `loss` in `loss * n`, not in `loss.item()`;
    also, with `through_methods`, in `loss.float()` (a tensor method that keeps the graph)."""
    if type(expr) is ast.Name:
        return [expr]
    if type(expr) is ast.BinOp and isinstance(expr.op, _ARITHMETIC):
        return _bare_operands(expr.left, through_methods) + _bare_operands(
            expr.right, through_methods
        )
    if type(expr) is ast.UnaryOp and isinstance(expr.op, ast.USub):
        return _bare_operands(expr.operand, through_methods)
    if (
        through_methods
        and type(expr) is ast.Call
        and type(expr.func) is ast.Attribute
        and expr.func.attr in _GRAPH_KEEPING
    ):
        return _bare_operands(expr.func.value)  # `loss_f += loss.float()` (pytorch-segnet)
    return []


# Tensor methods whose result stays in the autograd graph of their receiver.
_GRAPH_KEEPING = frozenset(
    "float double half cpu cuda to sum mean squeeze view reshape clone contiguous".split()
)


def _loops_around(ctx: Context) -> list[ast.stmt]:
    """The loops around the current statement in its function, innermost first."""
    loops = []
    for node in reversed(ctx.ancestors):
        if isinstance(node, _FUNCTIONS):
            break
        if isinstance(node, _LOOPS):
            loops.append(node)
    return loops


def _backward_roots(ctx: Context, owner: ast.stmt) -> frozenset[str]:
    """Names whose value `backward` is run on in the body of `owner`, a loop (its `else` too) or a
    function, the terms it is computed from and the sums it is added to."""
    return _backward_reading(ctx, owner)[1]


@per_file
def _backward_reading(ctx: Context, owner: ast.stmt) -> tuple[frozenset[str], frozenset[str]]:
    """The names whose value `backward` is run on in the body of `owner` with the terms they are
    computed from; and those with the sums they are added to as well. Backward returns nothing,
    so only expression statements are looked at: far cheaper than every expression of the
    body."""
    roots: set[str] = set()
    terms: dict[str, set[str]] = {}  # `loss = clf_loss + 0.25 * mmd_loss`: loss -> its terms
    sums: dict[str, set[str]] = {}  # `final_loss += reg_loss`: reg_loss -> {final_loss}
    detached: set[str] = set()  # `loss = loss.item()` somewhere in the body
    for statement in nested_statements([*owner.body, *getattr(owner, "orelse", ())]):
        kind = type(statement)
        if kind is ast.Expr and type(statement.value) is ast.Call:
            roots.update(_backward_target_names(statement.value, ctx))
        elif kind is ast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is ast.Name and _is_detaching(statement.value, ctx):
                detached.add(target.id)
            if type(target) is ast.Name and type(statement.value) is ast.BinOp:
                terms.setdefault(target.id, set()).update(_root_names(statement.value))
            elif type(target) is ast.Name and _returns_its_backpropagated_loss(
                statement.value, ctx
            ):
                roots.add(target.id)  # `batch_loss = train_step(...)`, which ran its backward
            elif type(target) is ast.Tuple:
                # `task_loss, accuracy = self.train_task(task)`, which ran `task_loss.backward()`
                roots.update(_backpropagated_items(target, statement.value, ctx))
        elif (
            kind is ast.AugAssign
            and type(statement.op) is ast.Add
            and type(statement.target) is ast.Name
        ):
            for term in _bare_operands(statement.value):
                sums.setdefault(term.id, set()).add(statement.target.id)
    # The terms summed into a backpropagated loss carry its graph too (DDC's `total_loss +=
    # clf_loss` after `loss = clf_loss + 0.25 * mmd_loss; loss.backward()`).
    todo = list(roots)
    while todo:
        for term in terms.pop(todo.pop(), ()):
            if term not in roots:
                roots.add(term)
                todo.append(term)
    terms_too = frozenset(roots)
    # So does a sum a backpropagated loss is added to as it is (dynamic_gesture_recognition's
    # `final_loss += reg_loss` after `reg_loss.backward()`, then `losses.update(final_loss)`).
    todo = list(roots - detached)  # a loss made a number first adds no graph to a sum
    while todo:
        for total in sums.pop(todo.pop(), ()):
            if total not in roots:
                roots.add(total)
                todo.append(total)
    return terms_too, frozenset(roots)


def _returns_its_backpropagated_loss(value: ast.expr, ctx: Context) -> bool:
    """`value` calls a function of the file, or a method of the class around (`self.update(...)`,
    TR-DBS's encoder), that runs `loss.backward()` and returns `loss`."""
    function = _function_called(value, ctx)
    return function is not None and _BARE in _backpropagated_returns(ctx, function)


def _backpropagated_items(target: ast.Tuple, value: ast.expr, ctx: Context) -> list[str]:
    """The names of `target` unpacked from the places of the tuple every `return` of the called
    function fills with a name it ran `backward` on (cnaps' `train_task`: `task_loss.backward()`,
    then `return task_loss, task_accuracy`)."""
    function = _function_called(value, ctx)
    if function is None:
        return []
    places = _backpropagated_returns(ctx, function)
    return [
        item.id
        for place, item in enumerate(target.elts)
        if place in places and type(item) is ast.Name
    ]


def _runs_a_backward(value: ast.expr, ctx: Context) -> bool:
    """`value` calls a function of the file, or a method of the class around, that runs a
    backward (StackGAN's `self.train_Gnet(count)`)."""
    function = _function_called(value, ctx)
    return function is not None and _backpropagates(ctx, function)


@per_file
def _backpropagates(ctx: Context, function: ast.FunctionDef) -> bool:
    return any(
        type(s) is ast.Expr and type(s.value) is ast.Call and _backward_target_names(s.value, ctx)
        for s in nested_statements(function.body)
    )


def _function_called(value: ast.expr, ctx: Context) -> ast.FunctionDef | None:
    """The function of the file, or method of the class around (`self.f(...)`), `value` calls."""
    if type(value) is not ast.Call:
        return None
    func = value.func
    if type(func) is ast.Name:
        return top_level_functions(ctx).get(func.id)  # type: ignore[return-value]
    if type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self":
        cls = ctx.enclosing_class()
        return methods_defined_once(ctx, cls).get(func.attr) if cls is not None else None
    return None


# In what `_backpropagated_returns` gives: the value returned is itself the name.
_BARE = -1


@per_file
def _backpropagated_returns(ctx: Context, function: ast.AST) -> frozenset[int]:
    """Where every `return` of the function hands back a name it ran `backward` on: `_BARE` for
    the whole value (UNet's `train_step`: `loss.backward(); optimizer.step(); return loss`), or
    the places of a tuple (`return loss, accuracy`: 0)."""
    backpropagated: set[str] = set()
    returned: list[frozenset[int]] = []
    statements = sorted(
        nested_statements(function.body),  # type: ignore[attr-defined]
        key=lambda s: (s.lineno, s.col_offset),
    )
    for statement in statements:  # in source order: a rebinding after the backward counts
        if type(statement) is ast.Expr and type(statement.value) is ast.Call:
            backpropagated.update(_backward_target_names(statement.value, ctx))
        elif type(statement) is ast.Assign:
            # `loss = loss.item()` after the backward: what is returned is a number now (NCF).
            backpropagated.difference_update(t.id for t in statement.targets if type(t) is ast.Name)
        elif type(statement) is ast.Return:
            value = statement.value
            if type(value) is ast.Name:
                returned.append(frozenset({_BARE}) if value.id in backpropagated else frozenset())
            elif type(value) is ast.Tuple:
                returned.append(
                    frozenset(
                        place
                        for place, item in enumerate(value.elts)
                        if type(item) is ast.Name and item.id in backpropagated
                    )
                )
            else:
                return frozenset()
    return frozenset.intersection(*returned) if returned else frozenset()


def _container_kept(
    statement: ast.stmt, total: str, operands: list[ast.Name], loop: ast.stmt, ctx: Context
) -> Finding | None:
    """`outputs.append(output)` in a loop that runs `output["loss"].backward()`: the dict (or
    list) kept holds the loss with its graph (packnet-sfm's trainer)."""
    parts = _backpropagated_parts(ctx, loop)
    kept = [name for name in operands if name.id in parts]
    if not kept or not _outlives_iteration(ctx, scope_of(total, ctx), total, loop, True):
        return None
    container = kept[0]
    found = bindings(ctx, scope_of(container.id, ctx), container.id) or ()
    if sum(_inside(b.node, loop) for b in found) != 1:
        return None  # rebound in the loop (`output = {k: v.detach() ...}`): not followed
    part = ctx.text(parts[container.id])
    return ctx.finding(PITFALL, statement, "container", total=total, loss=container.id, part=part)


@per_file
def _backpropagated_parts(ctx: Context, loop: ast.stmt) -> dict[str, ast.Subscript]:
    """The containers whose item backward is run on in the loop: `output` -> `output["loss"]`
    of `output["loss"].backward()` (also `.mean().backward()` of it)."""
    parts: dict[str, ast.Subscript] = {}
    for statement in nested_statements([*loop.body, *loop.orelse]):
        if type(statement) is not ast.Expr or type(statement.value) is not ast.Call:
            continue
        func = statement.value.func
        if not (isinstance(func, ast.Attribute) and func.attr == "backward"):
            continue
        target = func.value
        while type(target) is ast.Call and isinstance(target.func, ast.Attribute):
            target = target.func.value  # `output["loss"].mean()`
        if type(target) is ast.Subscript and type(target.value) is ast.Name:
            parts.setdefault(target.value.id, target)
    return parts


def _backward_target_names(call: ast.Call, ctx: Context) -> set[str]:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "backward":
        names = _root_names(func.value)
        if call.args and _is_backward_runner(func.value, ctx):
            names |= _root_names(call.args[0])
        return names
    if isinstance(func, ast.Attribute) and func.attr == "manual_backward" and call.args:
        return _root_names(call.args[0])  # Lightning's self.manual_backward(loss)
    if call.args and ctx.qualname(func) in BACKWARD_FUNCTIONS:
        return _root_names(call.args[0])
    return set()


def _root_names(expr: ast.expr) -> set[str]:
    """The names a backward target is computed from: `loss` in `scaler.scale(loss / k)`."""
    kind = type(expr)
    if kind is ast.Name:
        return {expr.id}
    if kind is ast.BinOp:
        if type(expr.op) in (ast.Div, ast.FloorDiv):
            return _root_names(expr.left)  # `loss / accumulation_steps`: a scale, no term
        return _root_names(expr.left) | _root_names(expr.right)
    if kind is ast.UnaryOp:
        return _root_names(expr.operand)
    if kind is ast.Call and isinstance(expr.func, ast.Attribute):
        names = _root_names(expr.func.value)  # loss.mean()
        if expr.func.attr in LOSS_WRAPPERS and expr.args:
            names |= _root_names(expr.args[0])
        return names
    return set()  # criterion(out, y).backward(): the arguments are inputs, not losses


def _is_backward_runner(expr: ast.expr, ctx: Context) -> bool:
    """`accelerator` in `accelerator.backward(loss)`: made by Accelerator(), not a tensor."""
    return isinstance(expr, ast.Name) and _made_by_runner(ctx, scope_of(expr.id, ctx), expr.id)


# Asked once per name (and loop), not once per use: a name bound in many places and used in
# as many would cost their product.


@per_file
def _made_by_runner(ctx: Context, scope: ast.AST, name: str) -> bool:
    found = bindings(ctx, scope, name)
    return bool(found) and all(
        isinstance(b.value, ast.Call) and ctx.qualname(b.value.func) in BACKWARD_RUNNERS
        for b in found
    )


@per_file
def _outlives_iteration(
    ctx: Context, scope: ast.AST, total: str, loop: ast.stmt, appended: bool
) -> bool:
    """Bound before the loop and, inside it, only updated by accumulation."""
    found = bindings(ctx, scope, total)
    if not found or not any(b.node.lineno < loop.lineno for b in found):
        return False
    for binding in found:
        if not _inside(binding.node, loop):
            continue
        if _reset_now_and_then(binding.node, loop, ctx):
            continue  # set to 0 or [] when it is logged: it spans the iterations in between
        if appended or binding.value is None:  # a list made anew, a loop variable...
            return False
        if not binding.augmented and not _is_accumulation(binding.value, total):
            return False
    return True


def _reset_now_and_then(statement: ast.AST, loop: ast.stmt, ctx: Context) -> bool:
    """`total_loss = 0` (or `losses = []`) under an `if` of the loop's body (`if (i + 1) % 20
    == 0:` after printing it), not in a loop nested in it: a reset some iterations only."""
    if not isinstance(statement, ast.Assign):
        return False
    value = statement.value
    if not (
        isinstance(value, ast.Constant)
        and type(value.value) in (int, float)
        or type(value) is ast.List
        and not value.elts
    ):
        return False
    parents = index_of(ctx, loop).parents
    above = parents.get(statement)
    while above is not None and above is not loop:
        if isinstance(above, (ast.For, ast.AsyncFor, ast.While)):
            return False
        if isinstance(above, ast.If):
            return True
        above = parents.get(above)
    return False


def _reset_each_step(
    ctx: Context, scope: ast.AST, total: str, loop: ast.stmt, outer: ast.stmt
) -> bool:
    """The total is made anew at each turn of `outer`, the loop around `loop`, which steps an
    optimizer after it while `loop` steps none: `loop` goes over the micro-batches of one step,
    and the total keeps the graphs of that step only (hysts' `losses = []` per batch, appended
    per chunk of it), as gradient accumulation does."""
    repeats_a_batch = _repeats(loop) and _over_data(outer)
    if _step_lines(ctx, loop) and not repeats_a_batch:
        return False
    made = [
        b
        for b in bindings(ctx, scope, total) or ()
        if _inside(b.node, outer) and b.node.lineno < loop.lineno
    ]
    if not made or any(b.value is None or b.augmented for b in made):
        return False
    if repeats_a_batch:
        # `for _ in range(n_critic)` inside the loop over the data, the total made anew for
        # each batch: it keeps the graphs of one batch's rounds (melgan's `loss_d_sum`).
        return True
    after = _step_lines(ctx, outer)
    if bisect_right(after, loop.end_lineno) < len(after):
        return True
    # ... or calls, after it, a function or method that backpropagates and steps (StackGAN's
    # `errD_total += self.train_Dnet(i)` over the discriminators, then `self.train_Gnet()`).
    return any(
        s.lineno > loop.end_lineno and _runs_a_backward(s.value, ctx)  # type: ignore[attr-defined]
        for s in index_of(ctx, outer).in_block(outer.body, ast.Assign, ast.Expr)  # type: ignore[attr-defined]
    )


def _one_step_accumulated(ctx: Context, scope: ast.AST, total: str, loop: ast.stmt) -> bool:
    """`total_loss = 0`, then `for _ in range(accumulate_every): ... total_loss += loss;
    loss.backward()`, then the optimizer's step after the loop, in one function (big-sleep's and
    deep-daze's `train_step`): the total holds the micro-batches of one step and is made anew at
    each call."""
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _repeats(loop):
        return False
    if _step_lines(ctx, loop):
        return False  # a step inside: the rounds are steps of their own
    made = [b for b in bindings(ctx, scope, total) or () if not _inside(b.node, loop)]
    if not made or any(b.value is None or b.augmented or b.node.lineno > loop.lineno for b in made):
        return False
    return any(line > (loop.end_lineno or loop.lineno) for line in _step_lines(ctx, scope))


def _repeats(loop: ast.stmt) -> bool:
    """`for _ in range(...)`: rounds of the same work, its counter unused (not a loop over the
    data, nor one indexing it)."""
    return (
        type(loop) is ast.For
        and type(loop.target) is ast.Name
        and loop.target.id == "_"
        and _over_a_range(loop)
    )


def _over_data(loop: ast.stmt) -> bool:
    """A loop over something other than a `range(...)` (a loader, batches, samples), or a
    `while` drawing them."""
    return type(loop) in _LOOPS and not _over_a_range(loop)


def _over_a_range(loop: ast.stmt) -> bool:
    iterated = getattr(loop, "iter", None)
    return (
        type(iterated) is ast.Call
        and type(iterated.func) is ast.Name
        and iterated.func.id == "range"
    )


def _summed_by_a_training_loop(name: str, loop: ast.stmt, ctx: Context) -> bool:
    """`name` is added to (`epoch_loss += loss`) in a loop inside `loop` that steps an optimizer:
    that sum is reported itself (KD_Lib's `epoch_loss`, then `loss_arr.append(epoch_loss)`)."""
    found = index_of(ctx, loop)
    for node in found.under(loop, ast.AugAssign):
        if not is_name(node.target, name):  # type: ignore[attr-defined]
            continue
        for inner, _ in lineage(node, found.parents):
            if inner is loop:
                break
            if isinstance(inner, _LOOPS) and _step_lines(ctx, inner):
                return True
    return False


@per_file
def _step_lines(ctx: Context, loop: ast.stmt) -> list[int]:
    """The lines of the `x.step(...)` calls in the loop, in order; read once per loop."""
    return [
        call.lineno
        for call in index_of(ctx, loop).calls_named(loop, ["step"])
        if isinstance(call.func, ast.Attribute)
    ]


def _is_accumulation(value: ast.expr, total: str) -> bool:
    """`total + x`, or a running mean of `total` (see `_adds_to_itself`)."""
    return type(value) is ast.BinOp and _adds_to_itself(value, total)


@per_file
def _detached_in(ctx: Context, scope: ast.AST, loss: str, loop: ast.stmt) -> bool:
    """Whether the loss is rebound inside the loop to something without a graph."""
    return any(
        _inside(b.node, loop) and _is_detaching(b.value, ctx)
        for b in bindings(ctx, scope, loss) or ()
    )


def _is_detaching(value: ast.expr | None, ctx: Context) -> bool:
    """The value has no graph: `loss.detach()`, `loss.item()`, `loss.data`, also further down a
    chain (`loss.detach().cpu()`), or what a function of the project that only returns such
    values makes (`loss = scalar(loss)`, `utils.to_np(loss)`)."""
    while value is not None:
        if not isinstance(value, ast.Call):
            if isinstance(value, ast.Attribute) and value.attr == "data":
                return True
            # `loss.data[0]` (MCD_DA): a part of what the chain holds
            value = value.value if isinstance(value, (ast.Attribute, ast.Subscript)) else None
            continue
        func = value.func
        if isinstance(func, ast.Name):
            return func.id in DETACHING_FUNCTIONS or ctx.project.has(DETACHED_FROM + func.id)
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in DETACHING_METHODS:
            return True
        if type(func.value) is ast.Name and ctx.project.has(DETACHED_FROM + func.attr):
            return True  # `utils.scalar(loss)`
        value = func.value
    return False


def _inside(node: ast.AST, loop: ast.stmt) -> bool:
    return loop.lineno <= node.lineno <= loop.end_lineno


# ---- at run time -------------------------------------------------------------------------------


class _GraphTag:
    """Stored in a loss's `grad_fn.metadata`: it lives exactly as long as that graph node."""

    __slots__ = ("__weakref__",)


_TAG_KEY = "torchdoctor.loss-step"


@PITFALL.monitor
class LossGraphsKeptAlive(Monitor):
    """Graphs of the losses of several earlier steps still alive after their optimizer steps.

    Autograd nodes cannot be weakly referenced, but an object in `grad_fn.metadata` lives as
    long as the node: each loss (what a loss function returns, and what backward is called on)
    gets a tag there, and a weak reference to it says whether anything still holds the graph.
    After each step of the first optimizer, the distinct earlier steps whose losses are alive
    are counted: a `total += loss` or a list of losses keeps one more every step, while
    `loss.item()`, `loss.detach()` and the micro-batches of gradient accumulation (all of the
    current step) keep none. One loss kept from the step before (`previous = loss`) is fine."""

    THRESHOLD = 3  # earlier steps with a live graph

    def setup(self) -> None:
        self._tags: list[tuple[weakref.ref, int]] = []
        self._done = False

    def on_loss_result(self, name: str, loss) -> None:
        self._tag(loss)

    def on_backward(self, tensor) -> None:
        self._tag(tensor)

    def _tag(self, tensor) -> None:
        node = getattr(tensor, "grad_fn", None)
        if self._done or node is None:
            return
        metadata = node.metadata
        if _TAG_KEY not in metadata:
            tag = _GraphTag()
            metadata[_TAG_KEY] = tag
            self._tags.append((weakref.ref(tag), self.session.step))

    def after_step(self, optimizer) -> None:
        if self._done or optimizer is not self.session.optimizers[0]:
            return
        step = self.session.step
        self._tags = [(ref, born) for ref, born in self._tags if ref() is not None]
        earlier = sorted({born for _, born in self._tags if born < step})
        if len(earlier) >= self.THRESHOLD:
            self._done, self._tags = True, []
            self.report("graphs", "runtime", count=len(earlier), first=earlier[0], last=earlier[-1])
