"""TD204 weight-decay-on-frozen-params: an optimizer with weight decay holds frozen parameters."""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from typing import Iterator

from torchdoctor.catalog.sdk import (
    Context,
    Finding,
    Monitor,
    Pitfall,
    argument,
    index_of,
    per_file,
)
from torchdoctor.catalog.training._loops import (
    LOOPS,
    SCOPES,
    block_steps,
    last_identifier,
    local_nodes,
    position,
)

PITFALL = Pitfall(
    code="TD204",
    name="weight-decay-on-frozen-params",
    title={
        "en": "Optimizer with weight decay built over frozen parameters",
        "zh": "带权重衰减的优化器包含了被冻结的参数",
    },
    messages={
        "runtime": {
            "en": "`{param}`{more} is not learning (it is {why}) but `{optimizer}.step()` "
            "still changed it by up to {delta:.3g} (weight decay or momentum): give the "
            "optimizer only trainable parameters, or set their `.grad` to None",
            "zh": "`{param}`{more_zh} 并没有在学习（{why_zh}），但 `{optimizer}.step()` 仍把它改动了"
            "最多 {delta:.3g}（权重衰减或动量）：只把可训练参数交给优化器，或把它们的 `.grad` "
            "设为 None",
        },
        "rows": {
            "en": "rows {rows} of `{param}` ({count} of {total}) never learn (their gradient was "
            "exactly zero at each of {samples} sampled steps: unused classes or tokens?) but "
            "`{optimizer}.step()` still changed them by up to {delta:.3g} (weight decay or "
            "momentum): they shrink towards zero; put `{param}` in a parameter group with "
            "weight_decay=0, or drop the unused rows",
            "zh": "`{param}` 的第 {rows} 行（共 {total} 行中的 {count} 行）从不学习（在 {samples} 个抽样步中"
            "梯度都恰好为零：没用到的类别或词？），但 `{optimizer}.step()` 仍把它们改动了最多 "
            "{delta:.3g}（权重衰减或动量）：它们会缩小到零；把 `{param}` 放进 weight_decay=0 的参数组，"
            "或去掉不用的行",
        },
        "": {
            "en": "`{optimizer}` applies weight_decay={decay} to all of `{model}.parameters()`, "
            "including the ones frozen here: they stay put only while their `.grad` is None",
            "zh": "`{optimizer}` 对 `{model}.parameters()` 的全部参数施加 weight_decay={decay}，"
            "其中包括这里冻结的参数：只有当它们的 `.grad` 为 None 时才不会被改动",
        },
        "later": {
            "en": "parameters of `{model}` are frozen after `{optimizer}` (weight_decay={decay}) was "
            "built over all of them: a frozen parameter that still has a gradient, even a zero "
            "one, keeps being decayed and moved by the optimizer",
            "zh": "`{model}` 的参数在 `{optimizer}`（weight_decay={decay}）按全部参数创建之后才被冻结："
            "冻结的参数只要还带着梯度（哪怕是全零梯度），就仍会被优化器衰减和移动",
        },
    },
    fix_title={
        "en": "Give the optimizer only trainable parameters",
        "zh": "只把可训练的参数交给优化器",
    },
    fix_applicability="unsafe",
    default=False,
    docs={
        "en": """
## What it catches
An optimizer with weight decay (`weight_decay > 0`, or `AdamW`, whose default is 0.01) built
over all of `model.parameters()`, in a function that also freezes some of those parameters
(`p.requires_grad = False`, `model.backbone.requires_grad_(False)`).

Two cases are told apart. Freezing *after* the optimizer was built, once training has run
(progressive freezing, a second training stage), is the one that bites today. Freezing *before*
building the optimizer is reported as a risk. A function that also unfreezes parameters, or
that sets `p.grad = None` itself, is not reported.

At run time (`torchdoctor run`), an optimizer step that changes a frozen parameter holding a
gradient, or a parameter whose gradient is all zero, and also *rows* (slices along dim 0) of a
parameter whose gradient is exactly zero at every sampled step (every 10th step) while weight
decay or momentum still moves them: the unused rows of an embedding (tokens never seen in
training), of an output layer (classes with no sample), reported as "rows 7..9 of
`embed.weight`".

## Why is this bad?
Weight decay does not need a gradient to move a weight: `AdamW` shrinks every weight it holds
by `lr * weight_decay` per step, `SGD` adds `weight_decay * w` to the gradient, and momentum
keeps pushing in the last direction. `requires_grad = False` only stops new gradients.

Current PyTorch skips a parameter whose `.grad` is `None`, so a parameter frozen from the
start, which never gets a gradient, is not decayed. It *is* decayed and moved when its `.grad`
is a tensor, even an all-zero one: it was trained before being frozen and its gradient was
kept, or it was zeroed with `zero_grad(set_to_none=False)` (the default before PyTorch 2.0).
Measured with PyTorch 2.13: `AdamW(lr=0.1)` moved a layer frozen after one training step by
about 0.2 in four more steps under `zero_grad(set_to_none=False)`, and not at all under
`zero_grad()`. The layer you meant to keep slowly shrinks towards zero,
and it shows only when you use it again.

## Fix safety
The fix passes `filter(lambda p: p.requires_grad, model.parameters())` to the optimizer. It is
offered only when the freezing comes first and nothing in the function unfreezes. It is unsafe:
parameters unfrozen later, elsewhere, are then never trained, and the optimizer's state dict
no longer matches checkpoints saved with all parameters.

## Known problems
Off by default: when the frozen parameters never get a gradient (frozen from the start, and
`zero_grad()` sets gradients to `None`, as it does by default since PyTorch 2.0), nothing is
decayed and the finding is only a warning about a fragile setup. Freezing done in another
function (the model's `__init__`, a callback) is not seen.

At run time, rows are checked only on the sampled steps (every 10th), only in parameter groups
with weight decay or momentum, and reported after three sampled steps (step 21): a shorter run
is not judged. Rows whose gradient is zero only by accident at those steps (units of a ReLU
that is dead from the start) are reported too. A cross-entropy classifier's unused classes are
*not* such rows: softmax gives them a small nonzero gradient (it pushes their logits down), so
only exactly-zero gradients (embeddings, masked outputs, sparse inputs) count.
""",
        "zh": """
## What it catches
带权重衰减（`weight_decay > 0`，或默认值为 0.01 的 `AdamW`）的优化器按 `model.parameters()` 的全部参数
创建，而同一个函数里又冻结了其中一部分参数（`p.requires_grad = False`、`model.backbone.requires_grad_(False)`）。

分两种情况：在优化器创建之后、训练已经进行过之后才冻结（逐步冻结、第二阶段训练），这是当前版本里
真正会出问题的情况；在创建优化器之前就冻结，作为隐患报告。函数里如果又解冻了参数，或者自己把
`p.grad` 设为 `None`，则不报告。

运行时（`torchdoctor run`）：优化器的某一步改动了带着梯度的冻结参数或梯度全为零的参数；也包括参数的某些*行*
（沿第 0 维的切片）：它们的梯度在每个抽样步（每 10 步一次）都恰好为零，权重衰减或动量却仍在改动它们，
例如嵌入层中训练时从未出现的词所对应的行、输出层中没有样本的类别所对应的行，报告为
“`embed.weight` 的第 7..9 行”。

## Why is this bad?
权重衰减不需要梯度也能改变权重：`AdamW` 每一步都把它持有的权重缩小 `lr * weight_decay`，
`SGD` 把 `weight_decay * w` 加到梯度上，动量也会沿着上一次的方向继续推动。
`requires_grad = False` 只是不再产生新的梯度。

当前版本的 PyTorch 会跳过 `.grad` 为 `None` 的参数，因此从一开始就冻结、从未得到梯度的参数不会被衰减。
但只要它的 `.grad` 是一个张量，哪怕全为零，它就会被衰减和移动：例如冻结前训练过、梯度被保留了下来，
或者用 `zero_grad(set_to_none=False)` 清零（PyTorch 2.0 之前的默认行为）。在 PyTorch 2.13 上实测：
一个训练一步后被冻结的层，在 `AdamW(lr=0.1)` 和 `zero_grad(set_to_none=False)` 下又过四步就移动了约 0.2，
而用 `zero_grad()` 时完全不动。
本想保留的那一层会慢慢缩小到接近零，直到再次用到它时才会发现输出异常。

## Fix safety
修复会把 `filter(lambda p: p.requires_grad, model.parameters())` 交给优化器。只有在冻结发生在前、
且函数中没有解冻操作时才提供。它是不安全的：之后在别处解冻的参数将永远不会被训练，
优化器的 state dict 也与按全部参数保存的检查点不再对应。

## Known problems
默认关闭：如果被冻结的参数从未得到梯度（从一开始就冻结，并且 `zero_grad()` 把梯度设为 `None`，
这是 PyTorch 2.0 起的默认行为），就不会有任何衰减，此时的报告只是提醒这种写法很脆弱。
在其他函数中完成的冻结（模型的 `__init__`、回调函数）看不到。

运行时只在抽样步（每 10 步一次）检查行，只检查带权重衰减或动量的参数组，并在三个抽样步之后（第 21 步）才报告：
更短的训练不做判断。只是在这些步上碰巧梯度为零的行（一开始就死掉的 ReLU 单元）也会被报告。
交叉熵分类器中没有样本的类别*不*属于这种行：softmax 会给它们一个很小但非零的梯度（把它们的 logit 往下压），
所以只有恰好为零的梯度（嵌入层、被屏蔽的输出、稀疏输入）才算数。
""",
    },
    example="""
import torch
from torchvision.models import resnet50

model = resnet50()
for p in model.layer4.parameters():
    p.requires_grad = False
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
""",
    use_instead="""
import torch
from torchvision.models import resnet50

model = resnet50()
for p in model.layer4.parameters():
    p.requires_grad = False
optimizer = torch.optim.AdamW(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)
""",
)

# Optimizers with weight decay: position of `weight_decay` in the call, and its default.
WEIGHT_DECAY = {
    "SGD": (4, 0),
    "Adam": (4, 0),
    "AdamW": (4, 0.01),
    "RMSprop": (4, 0),
    "Adagrad": (3, 0),
    "Adadelta": (4, 0),
    "Adamax": (4, 0),
    "NAdam": (4, 0),
    "RAdam": (4, 0),
    "ASGD": (5, 0),
    "Adafactor": (5, 0),
}
PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})
MODULE_ITERATORS = frozenset({"children", "modules", "named_children", "named_modules"})
# Calls that pass an iterable through: `list(model.parameters())`, `enumerate(...)`.
_PASS_THROUGH = frozenset({"list", "tuple", "enumerate", "iter", "reversed", "sorted", "filter"})
_TRAINING_CALLS = frozenset({"backward", "step", "fit", "train_one_epoch", "train_epoch"})


@PITFALL.static(ast.Call, names=WEIGHT_DECAY)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    qualname = ctx.call_qualname(call) or ""
    head, _, name = qualname.rpartition(".")
    if not head.startswith("torch.optim"):
        return
    decay = _weight_decay(call, name)
    model = _all_parameters_of(call)
    if not decay or model is None:
        return
    root = _dotted(model)
    scope = ctx.enclosing_function() or ctx.tree
    if root is None or _unfreezes_or_clears(ctx, scope, root):
        return
    freezes = sorted(_freezes(ctx, scope, root), key=position)
    if not freezes:
        return
    fields = {"optimizer": name, "model": root, "decay": decay}
    later = [
        f for f in freezes if position(f) > position(call) and _trained_before(f, call, scope, ctx)
    ]
    if later:
        yield ctx.finding(PITFALL, later[0], "later", **fields)
    elif all(position(f) < position(call) for f in freezes):
        argument = (
            call.args[0] if call.args else next(k.value for k in call.keywords if k.arg == "params")
        )
        fix = ctx.fix(
            PITFALL,
            "unsafe",
            ctx.replace(argument, f"filter(lambda p: p.requires_grad, {ctx.text(argument)})"),
        )
        yield ctx.finding(PITFALL, call, fix=fix, **fields)


def _weight_decay(call: ast.Call, name: str) -> float | None:
    """The weight decay as a positive number; None when zero or not a plain number."""
    index, default = WEIGHT_DECAY[name]
    value: ast.AST | None = None
    for keyword in call.keywords:
        if keyword.arg == "weight_decay":
            value = keyword.value
        elif keyword.arg is None:
            return None  # **kwargs may set it
    if value is None and len(call.args) > index:
        value = call.args[index]
    if value is None:
        return default or None
    if isinstance(value, ast.Constant) and type(value.value) in (int, float) and value.value > 0:
        return value.value
    return None


def _all_parameters_of(call: ast.Call) -> ast.AST | None:
    """`model` in `SGD(model.parameters(), ...)`."""
    params = argument(call, 0, "params")
    if (
        isinstance(params, ast.Call)
        and isinstance(params.func, ast.Attribute)
        and params.func.attr == "parameters"
        and not params.args
    ):
        return params.func.value
    return None


def _dotted(expr: ast.AST) -> str | None:
    """`self.model.layers[0]` -> "self.model.layers" (indices do not change the owner)."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        base = _dotted(expr.value)
        return f"{base}.{expr.attr}" if base else None
    if isinstance(expr, ast.Subscript):
        return _dotted(expr.value)
    return None


def _owned_by(expr: ast.AST, roots: set[str]) -> bool:
    dotted = _dotted(expr)
    return dotted is not None and any(dotted == r or dotted.startswith(r + ".") for r in roots)


def _iterated(source: ast.AST, methods: frozenset[str], roots: set[str]) -> bool:
    """`source` iterates `methods` of a module under `roots`: `model.layer4.parameters()`."""
    while isinstance(source, ast.Subscript) or (
        isinstance(source, ast.Call)
        and source.args
        and last_identifier(source.func) in _PASS_THROUGH
    ):
        source = source.value if isinstance(source, ast.Subscript) else source.args[-1]
    return (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr in methods
        and _owned_by(source.func.value, roots)
    )


def _requires_grad_set(node: ast.AST, owners: set[str], value: bool) -> bool:
    """`x.requires_grad = value` or `x.requires_grad_(value)` for an `x` under `owners`."""
    if isinstance(node, ast.Assign):
        return (
            isinstance(node.value, ast.Constant)
            and node.value.value is value
            and any(
                isinstance(t, ast.Attribute)
                and t.attr == "requires_grad"
                and _owned_by(t.value, owners)
                for t in node.targets
            )
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "requires_grad_"
        and _owned_by(node.func.value, owners)
    ):
        arguments = [*node.args, *(k.value for k in node.keywords)]
        if not arguments:
            return value is True
        return isinstance(arguments[0], ast.Constant) and arguments[0].value is value
    return False


def _settings(nodes: list[ast.AST], owners: set[str], value: bool) -> list[ast.AST]:
    """Where `requires_grad` of parameters under `owners` is set to `value`: directly
    (`model.fc.requires_grad_(False)`) or through loops over their parameters or submodules."""
    found = [node for node in nodes if _requires_grad_set(node, owners, value)]
    for source, name, body in _loops(nodes):
        if _iterated(source, PARAMETER_ITERATORS, owners):
            found += [node for node in body if _requires_grad_set(node, {name}, value)]
        elif _iterated(source, MODULE_ITERATORS, owners):
            found += _settings(body, {name}, value)
    return found


def _loops(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str, list[ast.AST]]]:
    """(iterated expression, loop variable, nodes of the body) of the loops and comprehensions;
    for `for name, p in model.named_parameters()` the variable is `p`."""
    for node in nodes:
        found = _loop_parts(node)
        if found is not None:
            source, name, body = found
            yield source, name, body()


def _loop_parts(node: ast.AST):
    """(iterated expression, loop variable, a function giving the nodes of the body) of a loop
    or comprehension; None for other nodes."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        source, target, body = node.iter, node.target, lambda: local_nodes(node.body)
    elif (
        isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp))
        and len(node.generators) == 1
    ):
        source, target, body = (
            node.generators[0].iter,
            node.generators[0].target,
            lambda: local_nodes([node.elt]),
        )
    else:
        return None
    if isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[-1]
    return (source, target.id, body) if isinstance(target, ast.Name) else None


class _ScopeSettings:
    """Where one scope sets `requires_grad`, read once: per owner (`model`, `model.fc`...) and
    value, the direct settings on it or under it, and the loops over its parameters or
    submodules. A question about one model then looks at its own settings only."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        self.direct: dict[tuple[str, bool], list[ast.AST]] = {}
        self.loops: dict[str, list[tuple[ast.AST, str, object]]] = {}
        # `p.grad = None`: code that drops the gradients it freezes.
        self.clears_grads = False
        for node in nodes:
            for owner, value in _direct_settings(node):
                for prefix in _prefixes(owner):
                    found = self.direct.setdefault((prefix, value), [])
                    if not found or found[-1] is not node:
                        found.append(node)
            self.clears_grads = self.clears_grads or (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value is None
                and any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)
            )
            parts = _loop_parts(node)
            owner = _iterated_owner(parts[0]) if parts is not None else None
            for prefix in _prefixes(owner) if owner is not None else ():
                self.loops.setdefault(prefix, []).append(parts)


def _direct_settings(node: ast.AST) -> list[tuple[str, bool]]:
    """(owner, value) of `owner.requires_grad = value` and `owner.requires_grad_(value)`."""
    if isinstance(node, ast.Assign):
        value = node.value.value if isinstance(node.value, ast.Constant) else None
        if value is not True and value is not False:
            return []
        owners = (
            _dotted(t.value)
            for t in node.targets
            if isinstance(t, ast.Attribute) and t.attr == "requires_grad"
        )
        return [(owner, value) for owner in owners if owner is not None]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "requires_grad_"
    ):
        owner = _dotted(node.func.value)
        arguments = [*node.args, *(k.value for k in node.keywords)]
        value = (
            True
            if not arguments
            else (arguments[0].value if isinstance(arguments[0], ast.Constant) else None)
        )
        if owner is not None and (value is True or value is False):
            return [(owner, value)]
    return []


def _iterated_owner(source: ast.AST) -> str | None:
    """The module whose parameters or submodules `source` iterates: `model.layer4` for
    `model.layer4.parameters()`; None when it iterates something else."""
    while isinstance(source, ast.Subscript) or (
        isinstance(source, ast.Call)
        and source.args
        and last_identifier(source.func) in _PASS_THROUGH
    ):
        source = source.value if isinstance(source, ast.Subscript) else source.args[-1]
    if (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr in PARAMETER_ITERATORS | MODULE_ITERATORS
    ):
        return _dotted(source.func.value)
    return None


def _prefixes(dotted: str) -> list[str]:
    """`a.b.c` -> `a`, `a.b`, `a.b.c`: the owners it lies under."""
    parts = dotted.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts) + 1)]


@per_file
def _scope_settings(ctx: Context, scope: ast.AST) -> _ScopeSettings:
    """The settings of the scope, from the nodes that can hold one (`_ScopeSettings` finds
    nothing in the others): assignments to a `requires_grad` or `grad` attribute, calls of
    `requires_grad_`, and loops."""
    found = index_of(ctx, scope)
    nodes = [
        *found.local(scope, *_LOOP_NODES),
        *found.calls_named(scope, ["requires_grad_"], local=True),
        *(
            node
            for attribute in ("requires_grad", "grad")
            for node in found.assignments(scope, attribute, attribute=True)
            if found.is_local(scope, node)
        ),
    ]
    unique = {found.number[node]: node for node in nodes}
    return _ScopeSettings([unique[at] for at in sorted(unique)])


_LOOP_NODES = (ast.For, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.GeneratorExp)


@per_file
def _settings_under(ctx: Context, scope: ast.AST, root: str, value: bool) -> list[ast.AST]:
    """`_settings(<the scope's nodes>, {root}, value)`, from the scope's index."""
    settings = _scope_settings(ctx, scope)
    found = list(settings.direct.get((root, value), ()))
    for source, name, body in settings.loops.get(root, ()):
        if _iterated(source, PARAMETER_ITERATORS, {root}):
            found += [node for node in body() if _requires_grad_set(node, {name}, value)]
        elif _iterated(source, MODULE_ITERATORS, {root}):
            found += _settings(body(), {name}, value)
    return found


def _freezes(ctx: Context, scope: ast.AST, root: str) -> list[ast.AST]:
    unique = {id(node): node for node in _settings_under(ctx, scope, root, False)}
    return list(unique.values())


def _unfreezes_or_clears(ctx: Context, scope: ast.AST, root: str) -> bool:
    """Staged training that unfreezes again, or code that drops the gradients it freezes."""
    return bool(_settings_under(ctx, scope, root, True)) or _scope_settings(ctx, scope).clears_grads


def _trained_before(freeze: ast.AST, call: ast.Call, scope: ast.AST, ctx: Context) -> bool:
    """Training ran between building the optimizer and freezing, or the freezing sits in the
    training loop: the frozen parameters may already hold gradients."""
    starts = _training_calls(ctx, scope)
    start, end = position(call), position(freeze)
    if bisect_left(starts, end) > bisect_right(starts, start):
        return True
    tree_parents = index_of(ctx, freeze).parents
    node = tree_parents.get(freeze)
    while node is not None and not isinstance(node, SCOPES):
        if isinstance(node, LOOPS) and block_steps(ctx, node):
            return True
        node = tree_parents.get(node)
    return False


@per_file
def _training_calls(ctx: Context, scope: ast.AST) -> list[tuple[int, int]]:
    """Where the scope calls `backward`, `step`, `fit`... in order."""
    calls = index_of(ctx, scope).calls_named(scope, {*_TRAINING_CALLS, None}, local=True)
    return sorted(position(node) for node in calls if last_identifier(node.func) in _TRAINING_CALLS)


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset


# ---- at run time -------------------------------------------------------------------------------

_WHY_ZH = {
    "frozen (requires_grad=False) with a stale gradient": "已冻结（requires_grad=False）却仍带着旧梯度",
    "given an all-zero gradient": "它的梯度全为零",
}


@PITFALL.monitor
class FrozenParametersMoved(Monitor):
    """An optimizer step changes parameters that do not learn: frozen ones
    (requires_grad=False) that still hold a gradient, every step, and ones whose gradient is
    exactly zero, on the steps whose gradient norms are computed anyway. torch.optim skips
    parameters whose `.grad` is None, so those are never suspects. The values are copied
    before the step only for suspects, and compared after it.

    Slices too: on the same sampled steps, the rows (slices along dim 0) of a parameter in a
    group with weight decay or momentum whose gradient is exactly zero are kept in a bool
    vector per parameter, ANDed step after step by one vectorised reduction (unused rows of an
    embedding or of an output layer). Rows still zero after `ROW_SAMPLES` sampled steps are
    copied before that step and compared after it."""

    ROW_SAMPLES = 3

    def setup(self) -> None:
        self._before: list[tuple] = []
        self._done: set[int] = set()
        # id(param) -> (weak reference, rows zero at every sampled step so far, samples)
        self._rows: dict[int, tuple] = {}
        self._rows_before: list[tuple] = []

    def on_step(self, optimizer) -> None:
        session = self.session
        suspects = [
            (p, "frozen (requires_grad=False) with a stale gradient")
            for group in optimizer.param_groups
            for p in group["params"]
            if not p.requires_grad and p.grad is not None and id(p) not in self._done
        ]
        self._rows_before = []
        if session.metrics is not None and session.metrics.wants_grad_norms(session.step):
            norms = session.grad_norms(optimizer)
            suspects += [
                (p, "given an all-zero gradient")
                for p, norm in norms
                if norm == 0.0 and p.requires_grad and id(p) not in self._done
            ]
            self._rows_before = self._zero_rows(optimizer, {id(p) for p, n in norms if n == 0})
        self._before = [(p, why, p.detach().clone()) for p, why in suspects]

    def _zero_rows(self, optimizer, all_zero: set[int]) -> list[tuple]:
        """Update the rows whose gradient stayed exactly zero; (param, rows, their values) of
        the parameters to compare after this step."""
        import weakref

        compare = []
        for group in optimizer.param_groups:
            if not (group.get("weight_decay") or group.get("momentum")):
                continue
            for param in group["params"]:
                key = id(param)
                grad = param.grad
                if (
                    grad is None
                    or param.ndim == 0
                    or key in all_zero  # a whole parameter: reported as such
                    or key in self._done
                    or not param.requires_grad
                    or grad.is_sparse
                ):
                    continue
                entry = self._rows.get(key)
                if entry is not None and entry[0]() is not param:
                    entry = None
                if entry is not None and entry[1] is None:
                    continue  # no row left to suspect
                zero = (grad.abs().flatten(1).amax(1) if grad.ndim > 1 else grad.abs()) == 0
                rows = zero if entry is None else entry[1] & zero
                samples = 1 if entry is None else entry[2] + 1
                if not bool(rows.any()):
                    self._rows[key] = (weakref.ref(param), None, samples)
                    continue
                self._rows[key] = (weakref.ref(param), rows, samples)
                if samples >= self.ROW_SAMPLES:
                    compare.append((param, rows, param.detach()[rows].clone()))
        return compare

    def after_step(self, optimizer) -> None:
        self._after_rows(optimizer)
        before, self._before = self._before, []
        moved = []
        for param, why, value in before:
            delta = float((param.detach() - value).abs().max()) if param.numel() else 0.0
            if delta > 0:
                self._done.add(id(param))
                moved.append((param, why, delta))
        if not moved:
            return
        param, why, delta = moved[0]
        name = self.session.param_name(param) or f"tensor of shape {tuple(param.shape)}"
        others = len(moved) - 1
        self.report(
            (id(optimizer), why),
            "runtime",
            module=name.rpartition(".")[0] or None,
            param=name,
            more=f" (and {others} more)" if others else "",
            more_zh=f"（以及另外 {others} 个）" if others else "",
            why=why,
            why_zh=_WHY_ZH[why],
            delta=max(d for _, _, d in moved),
            optimizer=type(optimizer).__name__,
        )

    def _after_rows(self, optimizer) -> None:
        before, self._rows_before = self._rows_before, []
        for param, rows, value in before:
            moved = (param.detach()[rows] - value).abs()
            delta = float(moved.max()) if moved.numel() else 0.0
            if delta <= 0:
                continue
            self._done.add(id(param))
            self._rows.pop(id(param), None)
            indices = rows.nonzero().flatten().tolist()
            name = self.session.param_name(param) or f"tensor of shape {tuple(param.shape)}"
            self.report(
                (id(optimizer), "rows", id(param)),
                "rows",
                module=name.rpartition(".")[0] or None,
                rows=_ranges(indices),
                count=len(indices),
                total=param.shape[0],
                param=name,
                delta=delta,
                optimizer=type(optimizer).__name__,
                samples=self.ROW_SAMPLES,
            )


def _ranges(indices: list[int], most: int = 4) -> str:
    """[7, 8, 9, 12] -> "7..9, 12"; more than `most` runs end with "..."."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    text = [f"{a}..{b}" if b > a else str(a) for a, b in runs[:most]]
    return ", ".join(text) + (", ..." if len(runs) > most else "")
