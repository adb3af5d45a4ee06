"""TD206 train-mode-not-restored: `model.eval()` inside a training loop, never undone."""

from __future__ import annotations

import ast
import builtins
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    bindings,
    MODULE_SELF_METHODS,
    Context,
    FileIndex,
    Finding,
    Monitor,
    Pitfall,
    index,
    index_of,
    lineage,
    per_file,
    shorten,
    top_level_functions,
)
from torchdoctor.catalog.training._loops import enclosing_loops
from torchdoctor.catalog.training._modes import (
    TRAINING_DEPENDENT_WORDS,
    ModeFreeModels,
    last_name,
    unwrap_self_methods,
)

# Messages quote at most 50 characters of source.
_short = partial(shorten, limit=50)

PITFALL = Pitfall(
    code="TD206",
    name="train-mode-not-restored",
    title={
        "en": "`model.eval()` in the training loop without `model.train()` after it",
        "zh": "训练循环中调用了 `model.eval()`，之后却没有恢复 `model.train()`",
    },
    messages={
        "runtime": {
            "en": "`{optimizer}.step()` trains `{model}` while it is in eval mode: {layers} "
            "do not train as they should (BatchNorm keeps its running statistics frozen, "
            "Dropout is off); call `model.train()` after evaluating",
            "zh": "`{optimizer}.step()` 在训练处于评估模式的 `{model}`：{layers} 没有按训练方式工作"
            "（BatchNorm 的 running 统计量不再更新，Dropout 被关闭）；评估之后请调用 "
            "`model.train()`",
        },
        "": {
            "en": "`{call}` switches `{model}` to eval mode inside the training loop and nothing "
            "in the loop switches it back: every later batch trains in eval mode",
            "zh": "`{call}` 在训练循环中把 `{model}` 切换到了评估模式，而循环里没有任何地方切换回来："
            "之后的每个 batch 都在评估模式下训练",
        },
        "callee": {
            "en": "`{call}` leaves `{model}` in eval mode (it calls `.eval()` and never "
            "`.train()`), and nothing in this training loop switches it back: every later "
            "batch trains in eval mode",
            "zh": "`{call}` 会让 `{model}` 停留在评估模式（它调用了 `.eval()` 却没有调用 `.train()`），"
            "而这个训练循环里没有任何地方切换回来：之后的每个 batch 都在评估模式下训练",
        },
    },
    fix_title={
        "en": "Switch back before training: `{model}.train()`",
        "zh": "训练前切换回训练模式：`{model}.train()`",
    },
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
A training loop (one that calls `.backward()`) that switches the trained model to evaluation
mode, with `model.eval()` or `model.train(False)` or by calling a function of the same file
that does so and never switches back, while nothing in the loop calls `model.train()` again.
The usual shape: `model.train()` once before the epoch loop, then a validation pass with
`model.eval()` at the end of every epoch.

A model counts as trained when the file calls `model.train()` on it or passes its
`parameters()` to an optimizer or gradient clipping; a frozen teacher that stays in eval mode
is fine. An eval that is followed by `break`/`return`, or that only runs in one particular
iteration (`if epoch == last:`), is not reported; neither is a bare `model.eval()` that opens
every iteration before the training part, a deliberate way to fine-tune with frozen BatchNorm.
A model the file builds only from layers that compute and train the same in both modes (no
Dropout, BatchNorm, Transformer or recurrent layer: `nn.Sequential(nn.Linear(...), nn.ReLU(),
...)`) is not reported either: left in evaluation mode, it trains exactly as before. A
recurrent layer counts: cuDNN refuses an LSTM's backward in evaluation mode.

## Why is this bad?
`model.eval()` is a switch, not a scope: it stays on until `model.train()` is called. From the
second epoch on, the model trains in evaluation mode: Dropout is off (no regularisation, more
overfitting) and BatchNorm normalises with its frozen running statistics instead of batch
statistics and stops updating them. Nothing fails; the model just trains differently than in
the first epoch and usually ends up worse, which is very hard to notice.

## Symptoms
Training loss that behaves differently after the first validation pass (a jump, then slower
progress); BatchNorm running statistics that stop changing after epoch 1; a model that
overfits although it has Dropout.

## Fix safety
The fix inserts `model.train()` right before the training part of the loop body. It is unsafe:
it also switches back every submodule that was deliberately left in eval mode (for example
BatchNorm layers frozen with `m.eval()` after an earlier `model.train()`); re-freeze those
after the call if you rely on it.

## Known problems
Only one level of calls in the same file is followed. A call the doctor cannot read (a function
from another file that receives the model, or a method named like `*train*`) is assumed to
restore the mode, so such loops are not reported.
""",
        "zh": """
## What it catches
训练循环（调用了 `.backward()` 的循环）把正在训练的模型切换到评估模式：调用 `model.eval()` 或
`model.train(False)`，或者调用同一文件中会这么做且不切换回来的函数；而循环里再也没有调用 `model.train()`。
典型写法是在 epoch 循环之前调用一次 `model.train()`，然后每个 epoch 结尾用 `model.eval()` 做一次验证。

当文件对这个模型调用过 `model.train()`，或者把它的 `parameters()` 交给了优化器或梯度裁剪时，才认为它
是被训练的模型；一直保持评估模式的冻结 teacher 模型没有问题。之后紧跟 `break`/`return` 的 eval，或只在某一次
迭代执行的 eval（`if epoch == last:`），不会报告；在每次迭代开头、训练部分之前无条件调用的 `model.eval()`
也不报告，这是冻结 BatchNorm 做微调的一种有意写法。
如果文件构建这个模型只用了在两种模式下计算和训练都完全相同的层（没有 Dropout、BatchNorm、Transformer
或循环层，例如 `nn.Sequential(nn.Linear(...), nn.ReLU(), ...)`），也不报告：留在评估模式下，它的训练
和之前一模一样。循环层算在内：cuDNN 不允许在评估模式下对 LSTM 做反向传播。

## Why is this bad?
`model.eval()` 是一个开关，而不是一个作用域：它会一直生效，直到调用 `model.train()`。从第二个 epoch
开始，模型在评估模式下训练：Dropout 被关闭（失去正则化，更容易过拟合），BatchNorm 用冻结的 running
统计量而不是当前 batch 的统计量做归一化，也不再更新这些统计量。程序不会报错，只是训练方式和第一个 epoch
不同，结果通常更差，而且非常难以察觉。

## Symptoms
第一次验证之后训练 loss 的表现发生变化（先跳一下，然后下降变慢）；BatchNorm 的 running 统计量在第 1 个
epoch 之后不再变化；模型明明有 Dropout 却严重过拟合。

## Fix safety
修复会在循环体中训练部分之前插入 `model.train()`。它是不安全的：这也会把那些被有意保持在评估模式的子模块
切换回训练模式（例如在之前的 `model.train()` 之后用 `m.eval()` 冻结的 BatchNorm 层）；如果依赖这种冻结，
需要在调用之后重新冻结。

## Known problems
只跟踪同一文件中的一层函数调用。无法读取的调用（来自其他文件、接收了该模型的函数，或名字类似 `*train*`
的方法）会被认为可能恢复了训练模式，因此这类循环不会报告。
""",
    },
    example="""
import torch
import torch.nn as nn


def fit(model, optimizer, train_loader, val_loader, epochs):
    model.train()
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(nn.functional.cross_entropy(model(x), y).item() for x, y in val_loader)
        print(epoch, val_loss)
""",
    use_instead="""
import torch
import torch.nn as nn


def fit(model, optimizer, train_loader, val_loader, epochs):
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(nn.functional.cross_entropy(model(x), y).item() for x, y in val_loader)
        print(epoch, val_loss)
""",
)

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# Calls that may give a model's parameters to something that trains them.
TRAINING_USES = ("torch.optim.", "torch.nn.utils.clip_grad")
# Statements after which the loop does not go on training.
EXITS = (ast.Break, ast.Return, ast.Raise)
BUILTINS = frozenset(dir(builtins))


@PITFALL.static(ast.Expr, names={"backward"})
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    loops = enclosing_loops(ctx)
    if not loops or _first_backward(ctx, loops[-1]) is not node:
        return  # one report per nest of training loops
    local = _local_functions(ctx, ctx.enclosing_class())
    for loop in loops:
        switches = [
            s
            for s in _eval_switches(ctx, loop, local)
            if _trained(s.model, ctx) and not _mode_free(ctx, s.model)
        ]
        if not switches:
            continue
        if _restores_train(ctx, loop, local):
            return
        tree_parents = index_of(ctx, loop).parents
        switches = [
            s
            for s in switches
            if not _guarded(s.call, loop, tree_parents, ctx)
            and not _before_training_on_purpose(s, loop, node, tree_parents, ctx)
            and not _passed_away(s.model, loop, local, ctx)
        ]
        where = _training_start(loop, switches, node, tree_parents, ctx)
        for switch in switches:
            model = ctx.text(switch.model)
            yield ctx.finding(
                PITFALL,
                switch.call,
                switch.variant,
                fix=_train_fix(model, where, ctx),
                model=_short(model),
                call=_short(ctx.text(switch.call)),
            )
        return


def _mode_free(ctx: Context, model: ast.AST) -> bool:
    """Every model the file builds under this name computes and trains the same in both modes
    (no Dropout, BatchNorm or recurrent layer): left in eval mode, it trains as it would."""
    name = last_name(model)
    if name is None:
        return False
    found = index(ctx)
    values = [
        statement.value
        for attribute in (False, True)
        for statement in found.assignments(ctx.tree, name, attribute)
    ]
    # `model = model.cuda()` moves the model it names; it builds none.
    built = [value for value in values if not _moves_itself(value, name)]
    return _models(ctx).all_mode_free(built)


def _moves_itself(value: ast.AST, name: str) -> bool:
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    receiver = unwrap_self_methods(value.func.value)
    return value.func.attr in MODULE_SELF_METHODS and last_name(receiver) == name


@per_file
def _models(ctx: Context) -> ModeFreeModels:
    found = index(ctx)
    # Of two classes of one name, the one a walk popping the last node first meets last.
    classes = {c.name: c for c in sorted(found.everywhere(ast.ClassDef), key=found.walk_order)}
    return ModeFreeModels(classes, ctx.qualname, TRAINING_DEPENDENT_WORDS, ctx.project)


class _Switch:
    """A call that leaves `model` in eval mode: `model.eval()` or a local function doing it."""

    def __init__(self, call: ast.Call, model: ast.AST, variant: str) -> None:
        self.call, self.model, self.variant = call, model, variant


@per_file
def _first_backward(ctx: Context, loop: ast.AST) -> ast.Expr | None:
    found = index_of(ctx, loop)
    statements = [
        found.parents[call]
        for call in found.calls_in_block(loop.body, ["backward"], local=True)
        if _method(call) == "backward"
    ]
    return min(
        (s for s in statements if type(s) is ast.Expr),
        key=lambda n: (n.lineno, n.col_offset),
        default=None,
    )


class _LocalFunctions:
    """Functions of this file a call can be resolved to: top-level ones and methods of `self`."""

    def __init__(self, functions: dict[str, ast.AST], cls: ast.ClassDef | None) -> None:
        self.functions = functions
        self.methods = {s.name: s for s in cls.body if isinstance(s, FUNCTIONS)} if cls else {}

    def names(self) -> set[str]:
        """The names of the calls `resolve` may resolve."""
        return {*self.functions, *self.methods}

    def resolve(self, call: ast.Call) -> ast.AST | None:
        func = call.func
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        if isinstance(func, ast.Attribute) and _is_self(func.value):
            return self.methods.get(func.attr)
        return None


@per_file
def _local_functions(ctx: Context, cls: ast.ClassDef | None) -> _LocalFunctions:
    return _LocalFunctions(top_level_functions(ctx), cls)


@per_file
def _eval_switches(ctx: Context, loop: ast.AST, local: _LocalFunctions) -> list[_Switch]:
    switches = []
    for node in _body_calls(ctx, loop, {"eval", "train", *local.names()}):
        receiver = _eval_receiver(node)
        if receiver is not None:
            switches.append(_Switch(node, receiver, ""))
            continue
        callee = local.resolve(node)
        if callee is not None and not _restores_in(ctx, callee):
            model = _model_left_in_eval(ctx, callee, node)
            if model is not None:
                switches.append(_Switch(node, model, "callee"))
    return switches


def _eval_receiver(call: ast.Call) -> ast.AST | None:
    """`model` for `model.eval()` and `model.train(False)`."""
    method = _method(call)
    if method == "eval" and not call.args and not call.keywords:
        return call.func.value
    if method == "train" and _is_false(call):
        return call.func.value
    return None


def _model_left_in_eval(ctx: Context, callee: ast.AST, call: ast.Call) -> ast.AST | None:
    """The caller's expression for the model `callee` switches to eval mode, if it is mapped."""
    params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
    for receiver in _eval_receivers(ctx, callee):
        if _is_self_attribute(receiver) and isinstance(call.func, ast.Attribute):
            return receiver  # `self.model.eval()` in a method of the same class
        if isinstance(receiver, ast.Name) and receiver.id in params:
            is_method = isinstance(call.func, ast.Attribute)
            return _argument(call, params, receiver.id, is_method)
    return None


def _argument(call: ast.Call, params: list[str], name: str, is_method: bool) -> ast.AST | None:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    index = params.index(name) - (1 if is_method else 0)
    if 0 <= index < len(call.args) and not isinstance(call.args[index], ast.Starred):
        return call.args[index]
    return None


@per_file
def _eval_receivers(ctx: Context, function: ast.AST) -> list[ast.AST]:
    """The models `function` itself switches to eval mode, in the order of a walk."""
    found = index_of(ctx, function)
    calls = sorted(found.in_block(function.body, ast.Call, local=True), key=found.walk_order)
    return [receiver for receiver in map(_eval_receiver, calls) if receiver is not None]


@per_file
def _restores_train(ctx: Context, loop: ast.AST, local: _LocalFunctions) -> bool:
    """True when something in the loop may switch back to training mode."""
    for node in _body_calls(
        ctx, loop, {*_training_names(ctx, index_of(ctx, loop)), *local.names()}
    ):
        if _may_train(node):
            return True
        callee = local.resolve(node)
        if callee is not None and _restores_in(ctx, callee):
            return True
    return False


@per_file
def _restores_in(ctx: Context, function: ast.AST) -> bool:
    names = _training_names(ctx, index_of(ctx, function))
    return any(
        _may_train(n) or _restores_saved_mode(ctx, function, n)
        for n in _body_calls(ctx, function, names)
    )


def _restores_saved_mode(ctx: Context, function: ast.AST, call: ast.Call) -> bool:
    """`net.train(was_training)` where the function saved `was_training = net.training`: the
    mode the caller had is given back (a training loop's: training)."""
    if _method(call) != "train" or len(call.args) != 1 or call.keywords:
        return False
    flag = call.args[0]
    if not isinstance(flag, ast.Name):
        return False
    saved = bindings(ctx, function, flag.id) or ()
    model = ast.dump(call.func.value)
    return bool(saved) and all(
        isinstance(b.value, ast.Attribute)
        and b.value.attr == "training"
        and ast.dump(b.value.value) == model
        for b in saved
    )


@per_file
def _training_names(ctx: Context, found: FileIndex) -> frozenset[str]:
    """The names of the calls in an index that `_may_train` may accept."""
    return frozenset(name for name in found.calls if name is not None and "train" in name.lower())


def _may_train(call: ast.Call) -> bool:
    """`model.train()`, and anything named like it (`self.train_one_epoch()`, `set_train(m)`)."""
    method = _method(call)
    name = method or (call.func.id if isinstance(call.func, ast.Name) else "")
    if "train" not in name.lower():
        return False
    return not (method == "train" and _is_false(call))


def _trained(model: ast.AST, ctx: Context) -> bool:
    """True when the file trains this model: `model.train()`, or an optimizer gets its
    parameters."""
    return ast.dump(model) in _trained_models(ctx)


@per_file
def _trained_models(ctx: Context) -> frozenset[str]:
    """The models the file trains, as `ast.dump`s: read from the calls of `train`,
    `parameters` and `named_parameters` in the file's index."""
    found = index(ctx)
    models = set()
    for call in found.calls_named(ctx.tree, ["train"]):
        if _method(call) == "train" and not _is_false(call):
            models.add(ast.dump(call.func.value))
    given: dict[int, bool] = {}
    for call in found.calls_named(ctx.tree, ["parameters", "named_parameters"]):
        if _method(call) in ("parameters", "named_parameters") and _given_to_training(
            ctx, found, call, given
        ):
            models.add(ast.dump(call.func.value))
    return frozenset(models)


def _given_to_training(
    ctx: Context, found: FileIndex, node: ast.AST, given: dict[int, bool]
) -> bool:
    """`node` is in (or is) a call that may train what it is given (see TRAINING_USES), in its
    statement. `given` remembers the answer for each node on the way up, so that the calls of
    one statement are each looked at once."""
    at, path, answer = found.number[node], [], False
    while at >= 0:
        if at in given:
            answer = given[at]
            break
        node = found.nodes[at]
        if isinstance(node, ast.stmt):
            break
        path.append(at)
        if type(node) is ast.Call and (ctx.qualname(node.func) or "").startswith(TRAINING_USES):
            answer = True
            break
        at = found.above[at]
    for at in path:
        given[at] = answer
    return answer


def _guarded(call: ast.Call, loop: ast.AST, parents: dict, ctx: Context) -> bool:
    """True when the switch only runs once: before leaving the loop, or in one iteration."""
    for node, child in lineage(call, parents):
        if node is loop:
            break
        if isinstance(node, ast.If) and child is not node.test:
            located = ctx.block_position(child, node)
            branch = "body" if located is not None and located[0] is node.body else "orelse"
            if _exits(ctx, node, branch) or _one_iteration(node.test):
                return True
    return False


def _before_training_on_purpose(
    switch: _Switch, loop: ast.AST, backward: ast.Expr, parents: dict, ctx: Context
) -> bool:
    """True for a bare `model.eval()` that opens every iteration before the training part: a
    deliberate choice (fine-tuning with frozen BatchNorm), unlike a periodic evaluation."""
    if switch.variant or any(isinstance(p, ast.If) for p in _path(switch.call, loop, parents)):
        return False
    switched = _body_index(loop, switch.call, parents, ctx)
    training = _body_index(loop, backward, parents, ctx)
    return training is not None and switched is not None and switched < training


def _path(node: ast.AST, loop: ast.AST, parents: dict) -> Iterator[ast.AST]:
    """The nodes between `loop` and `node`, innermost first."""
    node = parents[node]
    while node is not loop:
        yield node
        node = parents[node]


@per_file
def _exits(ctx: Context, branch: ast.If, block: str) -> bool:
    """A `break`, `return` or `raise` in one branch of an `if`, found once."""
    return any(isinstance(n, EXITS) for s in getattr(branch, block) for n in ast.walk(s))


def _one_iteration(test: ast.AST) -> bool:
    """`epoch == last` holds once; `step % 100 == 0` holds again and again."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.ops[0], (ast.Eq, ast.Is))
        and not (isinstance(test.left, ast.BinOp) and isinstance(test.left.op, ast.Mod))
    )


def _passed_away(model: ast.AST, loop: ast.AST, local: _LocalFunctions, ctx: Context) -> bool:
    """True when the loop hands the model to a function this file does not show (it may train)."""
    key = ast.dump(model)
    return any(
        ast.dump(arg) == key for arg in _handed_over(ctx, loop, local).get(_sketch(model), ())
    )


@per_file
def _handed_over(ctx: Context, loop: ast.AST, local: _LocalFunctions) -> dict[tuple, list[ast.AST]]:
    """What the loop passes to functions this file does not show, by `_sketch`."""
    found: dict[tuple, list[ast.AST]] = {}
    for node in _body_nodes(ctx, loop, ast.Call):
        if not node.args and not node.keywords:
            continue  # hands nothing over (most calls of a loop: `opt.step()`, `x.float()`)
        if local.resolve(node) is not None:
            continue
        if isinstance(node.func, ast.Name) and node.func.id in BUILTINS:
            continue
        if (ctx.qualname(node.func) or "").startswith("torch."):
            continue
        for arg in (*node.args, *(k.value for k in node.keywords)):
            found.setdefault(_sketch(arg), []).append(arg)
    return found


def _sketch(expr: ast.AST) -> tuple:
    """What two equal expressions share, cheap to compute: only those alike are compared."""
    kind = type(expr)
    return kind, expr.id if kind is ast.Name else expr.attr if kind is ast.Attribute else None


def _training_start(
    loop: ast.AST, switches: list[_Switch], backward: ast.Expr, parents: dict, ctx: Context
) -> ast.stmt | None:
    """The statement of the loop body before which `model.train()` restores training mode:
    right after the last switch when the switches come before the training part, else the top
    of the body (the next iteration); None when both share one statement."""
    training = _body_index(loop, backward, parents, ctx)
    if not switches or training is None:
        return None  # a `backward()` in the loop's `else:` block
    switched = max(_body_index(loop, s.call, parents, ctx) for s in switches)
    if switched < training:
        return loop.body[switched + 1]
    return loop.body[0] if switched > training else None


def _body_index(loop: ast.AST, node: ast.AST, parents: dict, ctx: Context) -> int | None:
    """The position in the loop's body of the statement holding `node`; None when that
    statement is in the loop's `else:` block."""
    while parents[node] is not loop:
        node = parents[node]
    located = ctx.block_position(node, loop)
    return located[1] if located is not None and located[0] is loop.body else None


def _train_fix(model: str, where: ast.stmt | None, ctx: Context):
    """Insert `model.train()` on its own line before `where`, at the same indentation."""
    if where is None or "\n" in model:
        return None
    start = ctx.offset(where.lineno, 0)
    indent = ctx.source[start : ctx.offset(where.lineno, where.col_offset)]
    if indent.strip():
        return None  # `for ...: stmt` on one line
    title = {lang: text.format(model=model) for lang, text in PITFALL.fix_title.items()}
    edit = ctx.edit(start, start, f"{indent}{model}.train()\n")
    return ctx.fix(PITFALL, "unsafe", edit, title=title)


@per_file
def _body_nodes(ctx: Context, scope: ast.AST, kind: type) -> list[ast.AST]:
    """The nodes of a class in a function or loop body (see `FileIndex.in_block` for nested
    scopes)."""
    return index_of(ctx, scope).in_block(scope.body, kind, local=True)


def _body_calls(ctx: Context, scope: ast.AST, names: set[str] | frozenset[str]) -> list[ast.Call]:
    """The calls of these names in a function or loop body, as `_body_nodes` reads it."""
    return index_of(ctx, scope).calls_in_block(scope.body, names, local=True)


def _method(call: ast.AST) -> str | None:
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _is_false(call: ast.Call) -> bool:
    """`train(False)`, `train(mode=flag)`: anything but a literal True may mean eval."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return bool(values) and not all(isinstance(v, ast.Constant) and v.value is True for v in values)


def _is_self(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Name) and expr.id == "self"


def _is_self_attribute(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Attribute) and _is_self(expr.value)


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class TrainedInEvalMode(Monitor):
    """An optimizer step trains a model that is in eval mode (`model.training` is False) and
    has Dropout, or BatchNorm layers with trained parameters. Freezing on purpose is left
    alone: BatchNorm in eval mode with frozen parameters, or only some layers put in eval mode
    while the model itself is in training mode."""

    def setup(self) -> None:
        self._layers: dict[int, list] = {}

    def on_step(self, optimizer) -> None:
        held = None
        for model in self.session.models:
            if model.training:
                continue
            if held is None:
                held = {id(p) for group in optimizer.param_groups for p in group["params"]}
            if not any(id(p) in held for p in model.parameters()):
                continue
            from torchdoctor.catalog.sdk import is_frozen, mode_dependent_layers

            layers = self._layers.get(id(model))
            if layers is None:
                layers = self._layers[id(model)] = mode_dependent_layers(model)
            stuck = [
                name
                for name, layer in layers
                if not layer.training and not (not hasattr(layer, "p") and is_frozen(layer))
            ]
            if stuck:
                shown = ", ".join(f"`{name}`" for name in stuck[:3])
                more = f" (+{len(stuck) - 3})" if len(stuck) > 3 else ""
                self.report(
                    id(model),
                    "runtime",
                    module=stuck[0],
                    optimizer=type(optimizer).__name__,
                    model=type(model).__name__,
                    layers=shown + more,
                )
