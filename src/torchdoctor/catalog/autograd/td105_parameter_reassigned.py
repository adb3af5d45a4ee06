"""TD105 parameter-reassigned: a parameter or submodule replaced or converted behind the optimizer."""

from __future__ import annotations

import ast
from bisect import bisect_left
from functools import partial

from torchdoctor.catalog.sdk import (
    root_name,
    dotted_name,
    is_self_attribute,
    Context,
    Finding,
    Kind,
    Monitor,
    Pitfall,
    in_other_branches,
    index_of,
    nested_statements,
    per_file,
    shorten,
    statements,
)

# Messages quote at most 50 characters of source.
_short = partial(shorten, limit=50)

PITFALL = Pitfall(
    code="TD105",
    name="parameter-reassigned",
    title={
        "en": "Parameter or submodule replaced or converted after it was registered",
        "zh": "已注册的参数或子模块被替换或转换",
    },
    messages={
        "runtime": {
            "en": "`{optimizer}` no longer holds `{param}` of `{model}`: the parameter was "
            "replaced after the optimizer was built (the optimizer holds {orphans} "
            "tensor(s) that belong to no model, e.g. one of shape {shape}), so it is "
            "never updated; build the optimizer after changing the model, or copy into "
            "the existing parameter",
            "zh": "`{optimizer}` 中已经没有 `{model}` 的 `{param}`：该参数在优化器创建之后被替换了"
            "（优化器持有 {orphans} 个不属于任何模型的张量，例如形状为 {shape} 的那个），"
            "因此它永远不会被更新；请在修改模型之后再创建优化器，或把值拷贝进原参数",
        },
        "": {
            "en": "`{target} = {value}` in `forward` converts the registered {what} `{source}` on "
            "every call: where conversion makes new parameters (XLA, sharded DeepSpeed/FSDP "
            "parameters, `overwrite_module_params_on_conversion`) the optimizer keeps "
            "training the old ones; convert once in `__init__`, or convert the values "
            "used, e.g. `F.linear(x, self.fc.weight.float())`",
            "zh": "在 `forward` 中 `{target} = {value}` 每次调用都会转换已注册的{what_zh} `{source}`："
            "当转换会生成新参数时（XLA、DeepSpeed/FSDP 的分片参数、"
            "`overwrite_module_params_on_conversion`），优化器仍在训练旧参数；"
            "请在 `__init__` 中转换一次，或只转换参与计算的值，例如 "
            "`F.linear(x, self.fc.weight.float())`",
        },
        "new-parameter": {
            "en": "`forward` replaces `{target}` with a new `nn.Parameter` on every call: the "
            "optimizer keeps updating the old one, and the new one starts from scratch",
            "zh": "`forward` 每次调用都用新的 `nn.Parameter` 替换 `{target}`：优化器仍在更新旧参数，"
            "而新参数每次都从头开始",
        },
        "after-optimizer": {
            "en": "`{target}` is replaced by a new `nn.Parameter` after the optimizer was built "
            "over `{model}.parameters()`: the optimizer keeps updating the old tensor; "
            "copy into the existing parameter under `torch.no_grad()` or build the "
            "optimizer afterwards",
            "zh": "优化器基于 `{model}.parameters()` 创建之后，`{target}` 被替换成了新的 `nn.Parameter`："
            "优化器仍在更新旧张量；请在 `torch.no_grad()` 下把值拷贝进原参数，或之后再创建优化器",
        },
    },
    docs={
        "en": """
## What it catches
- In the `forward` of an `nn.Module`, an assignment that converts a registered parameter or
  submodule and stores it back: `self.fc = self.fc.float()`, `self.weight =
  self.weight.to(x.dtype)`.
- In `forward`, an unconditional `self.<attr> = nn.Parameter(...)`.
- Anywhere, `model.fc.weight = nn.Parameter(...)` after an optimizer was built over
  `model.parameters()` in the same function (or at the top level of the same script), unless
  an optimizer is built again afterwards where it can run after the assignment (one built in
  another branch of the same `if`, as a script building its optimizer per mode does, cannot).

## Why is this bad?
An optimizer holds references to the parameter tensors it was given when it was built.
Replacing a parameter with a new `nn.Parameter` registers the new tensor in the model, but
the optimizer keeps stepping the old one: the new weights are used in `forward` and never
trained, and a new parameter created in `forward` is even re-initialised on every call.

Converting in `forward` is the subtle variant. `Module.float()` or `.to(dtype)` changes the
module's parameters in place (it swaps their `.data`), on every call: optimizer states keep the
old dtype, mixed-precision and sharded training (DeepSpeed, FSDP) keep updating their own copy
of the weights, so the module you run is no longer the one being trained. On a parameter,
`self.weight = self.weight.float()` is a no-op when nothing changes and a `TypeError` when the
dtype or device differs, because a plain tensor cannot replace a registered parameter. What
you want is a converted value for this computation only: `F.linear(x, self.fc.weight.float(),
self.fc.bias)`, or `self.fc(x.float())` after converting the module once, outside `forward`.

## Symptoms
No error, but weights that never change (loss stuck, the layer's values identical after
training); or `TypeError: cannot assign 'torch.cuda.FloatTensor' as parameter 'weight'
(torch.nn.Parameter or None expected)`.

## Known problems
The optimizer is matched only within one function or script body; a parameter created in
`forward` under a condition (lazy initialisation before the optimizer exists) is not reported.
Converting a submodule in `forward` keeps training in plain eager PyTorch on CPU/CUDA, where
`Module.to()` swaps each parameter's `.data` and keeps the Parameter objects; it is still
reported, because it silently stops training wherever conversion makes new parameters, and it
converts the weights on every call; but not when `forward` converts it back before it returns
(`self.layer = self.layer.to(x.device)`, then `.to(home)`): an offload for one call.

## References
- https://github.com/microsoft/DeepSpeed/pull/5156 (a router converting its gate in `forward`)
""",
        "zh": """
## What it catches
- 在 `nn.Module` 的 `forward` 里，把已注册的参数或子模块转换后再存回去：`self.fc = self.fc.float()`、
  `self.weight = self.weight.to(x.dtype)`。
- 在 `forward` 里无条件地执行 `self.<attr> = nn.Parameter(...)`。
- 在同一个函数（或同一个脚本的顶层）中，优化器基于 `model.parameters()` 创建之后，又执行
  `model.fc.weight = nn.Parameter(...)`，且之后没有在可能于这次赋值之后运行的地方
  重新创建优化器（同一个 `if` 的另一个分支里创建的不算，例如按运行模式分别创建优化器的脚本）。

## Why is this bad?
优化器在创建时保存了它拿到的那些参数张量的引用。用新的 `nn.Parameter` 替换参数后，新张量注册到了
模型里，但优化器仍然在更新旧的：`forward` 用的是新权重，它却永远得不到训练；在 `forward`
里创建的新参数甚至每次调用都会被重新初始化。

在 `forward` 中做转换是更隐蔽的情形。`Module.float()` 或 `.to(dtype)` 会原地修改模块的参数
（替换它们的 `.data`），而且每次调用都会做一遍：优化器状态还是旧的 dtype，混合精度和分片训练
（DeepSpeed、FSDP）继续更新它们自己保存的那份权重，于是实际运行的模块已经不是被训练的那个了。
对参数本身，`self.weight = self.weight.float()` 在什么都不变时等于没做，在 dtype 或设备不同时则会抛出
`TypeError`，因为普通张量不能替换已注册的参数。你真正需要的只是本次计算用的转换后的值：
`F.linear(x, self.fc.weight.float(), self.fc.bias)`，或者在 `forward` 之外把模块转换一次，再调用 `self.fc(x.float())`。

## Symptoms
不报错，但权重始终不变（loss 不下降，训练后该层的值和初始时一模一样）；或者
`TypeError: cannot assign 'torch.cuda.FloatTensor' as parameter 'weight'
(torch.nn.Parameter or None expected)`。

## Known problems
只在同一个函数或同一个脚本体内匹配优化器；在 `forward` 中带条件创建的参数（优化器创建之前的延迟初始化）
不会报告。在普通 eager 模式的 CPU/CUDA 上，在 `forward` 中转换子模块仍能正常训练：`Module.to()` 只替换
每个参数的 `.data`，参数对象不变；但仍会报告，因为只要转换会生成新参数，训练就会悄悄停止，而且每次调用都要转换一遍权重；
`forward` 返回前又把它转换回去时（`self.layer = self.layer.to(x.device)`，之后 `.to(home)`）
不报告：这是只为一次调用做的卸载。

## References
- https://github.com/microsoft/DeepSpeed/pull/5156（一个在 `forward` 中转换门控层的路由模块）
""",
    },
    example="""
import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, dim, experts):
        super().__init__()
        self.wg = nn.Linear(dim, experts, bias=False)

    def forward(self, x):
        self.wg = self.wg.float()
        return self.wg(x.float())


model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.weight = nn.Parameter(torch.zeros(2, 4))
""",
    use_instead="""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Gate(nn.Module):
    def __init__(self, dim, experts):
        super().__init__()
        self.wg = nn.Linear(dim, experts, bias=False)

    def forward(self, x):
        return F.linear(x.float(), self.wg.weight.float())


model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
with torch.no_grad():
    model.weight.copy_(torch.zeros(2, 4))
""",
)

PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Conversions: in place on a module (it returns itself), a new tensor on a parameter.
CONVERSIONS = frozenset("float half double bfloat16 to cuda cpu type".split())
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_WHAT = {Kind.MODULE: ("submodule", "子模块"), Kind.TENSOR: ("parameter", "参数")}


@PITFALL.static(ast.Assign)
def check(node: ast.Assign, ctx: Context) -> list[Finding] | None:
    value = node.value
    if (
        len(node.targets) != 1
        or type(node.targets[0]) is not ast.Attribute
        or type(value) is not ast.Call
    ):
        return None
    called = _called_name(value)
    if called == "Parameter" and ctx.qualname(value.func) in PARAMETER:
        return _new_parameter(node, ctx)
    if called in CONVERSIONS:
        return _converted_in_forward(node, ctx)
    return None


# ---- in forward ----------------------------------------------------------------------------


def _module_forward(ctx: Context) -> ast.ClassDef | None:
    """The module class when the node being visited is in its `forward`."""
    function = ctx.enclosing_function()
    if function is None or function.name != "forward":
        return None
    index = ctx.ancestors.index(function)
    cls = ctx.ancestors[index - 1]
    if not isinstance(cls, ast.ClassDef) or not ctx.is_module_class(cls):
        return None
    return cls


def _converted_in_forward(node: ast.Assign, ctx: Context) -> list[Finding] | None:
    target = node.targets[0]
    if not is_self_attribute(target):
        return None
    source = _converted_attribute(node.value)
    if source is None:
        return None
    cls = _module_forward(ctx)
    if cls is None:
        return None
    what = _registered_kind(source, cls, ctx)
    # Converting a copy of a parameter under another name leaves the parameter alone.
    if what is None or (what is Kind.TENSOR and source.attr != target.attr):
        return None
    if what is Kind.MODULE and _converted_back(target, ctx):
        return None
    en, zh = _WHAT[what]
    return [
        ctx.finding(
            PITFALL,
            node,
            target=ctx.text(target),
            value=_short(ctx.text(node.value)),
            source=ctx.text(source),
            what=en,
            what_zh=zh,
        )
    ]


def _converted_back(target: ast.Attribute, ctx: Context) -> bool:
    """`forward` converts the submodule twice, there and back (`self.layer =
    self.layer.to(x.device)`, run, `self.layer = self.layer.to(layer_device)`): an offload for
    one call, which leaves the module where it was (brevitas' error-corrected layers)."""
    function = ctx.enclosing_function()
    return function is not None and _self_conversions(ctx, function).get(target.attr, 0) > 1


@per_file
def _self_conversions(ctx: Context, function: ast.AST) -> dict[str, int]:
    """How many statements of `function` convert each `self.<attr>` into itself; counted once
    per function, however many conversions ask."""
    counts: dict[str, int] = {}
    for statement in index_of(ctx, function).under(function, ast.Assign):
        targets = statement.targets  # type: ignore[attr-defined]
        value = statement.value  # type: ignore[attr-defined]
        if (
            len(targets) != 1
            or type(targets[0]) is not ast.Attribute
            or type(value) is not ast.Call
        ):
            continue
        attr = targets[0].attr
        source = _converted_attribute(value)
        if source is not None and source.attr == attr and is_self_attribute(targets[0]):
            counts[attr] = counts.get(attr, 0) + 1
    return counts


def _converted_attribute(value: ast.Call) -> ast.Attribute | None:
    """`self.fc` in `self.fc.float()` or `self.fc.to(device).half()`."""
    expr = value
    while isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        if expr.func.attr not in CONVERSIONS:
            return None
        expr = expr.func.value
    return expr if is_self_attribute(expr) else None


def _registered_kind(attribute: ast.Attribute, cls: ast.ClassDef, ctx: Context) -> Kind | None:
    """MODULE for a submodule, TENSOR for a registered parameter, None otherwise."""
    if ctx.kind_of(attribute) is Kind.MODULE:
        return Kind.MODULE
    return Kind.TENSOR if attribute.attr in _parameters_of(ctx, cls) else None


@per_file
def _parameters_of(ctx: Context, cls: ast.ClassDef) -> frozenset[str]:
    """Attributes the class registers as parameters: `self.w = nn.Parameter(...)`,
    `self.register_parameter("w", ...)`."""
    names = set()
    for node in index_of(ctx, cls).under(cls, ast.Assign, ast.Call):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if ctx.qualname(node.value.func) in PARAMETER:
                names.update(t.attr for t in node.targets if is_self_attribute(t))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "register_parameter"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return frozenset(names)


def _new_parameter(node: ast.Assign, ctx: Context) -> list[Finding] | None:
    target = node.targets[0]
    root = root_name(target)
    if root is None:
        return None
    if root == "self" and _module_forward(ctx) is not None:
        if _is_conditional(ctx):  # lazy initialisation on the first call
            return None
        return [ctx.finding(PITFALL, node, "new-parameter", target=ctx.text(target))]
    model = _optimized_prefix(node, dotted_name(target), ctx)
    if model is None:
        return None
    return [ctx.finding(PITFALL, node, "after-optimizer", target=ctx.text(target), model=model)]


def _is_conditional(ctx: Context) -> bool:
    function = ctx.enclosing_function()
    inner = ctx.ancestors[ctx.ancestors.index(function) + 1 :]
    return any(isinstance(node, (ast.If, ast.Try, ast.Match)) for node in inner)


# ---- after an optimizer was built ----------------------------------------------------------


def _optimized_prefix(node: ast.Assign, path: str | None, ctx: Context) -> str | None:
    """The model whose `.parameters()` an optimizer built earlier in this scope holds, when
    `path` lies inside it and no optimizer is built again after `node` (of the optimizers built
    earlier over models around `path`, the one read last)."""
    if path is None:
        return None
    scope = ctx.enclosing_function() or ctx.tree
    built = _optimizers_by_model(ctx, scope)
    if not built:  # most files: no optimizer, and no index of the file to build for one
        return None
    parents = index_of(ctx, scope).parents
    parts = path.split(".")
    latest, before = -1, None
    for model in ("", *(".".join(parts[:end]) for end in range(1, len(parts)))):
        lines, last_read, made = built.get(model, ((), (), ()))
        later = made[bisect_left(lines, node.lineno + 1) :]
        # Rebuilt or extended afterwards, on a path that can follow `node` (past a few later
        # optimizers, assumed so: the branches are not read for each of many).
        if len(later) > _BRANCHES_READ or any(
            not in_other_branches(node, other, parents) for other in later
        ):
            return None
        earlier = bisect_left(lines, node.lineno)
        if model and earlier and last_read[earlier - 1] > latest:
            latest, before = last_read[earlier - 1], model
    return before


@per_file
def _optimizers_by_model(
    ctx: Context, scope: ast.AST
) -> dict[str, tuple[list[int], list[int], list[ast.stmt]]]:
    """Per model ("" for `add_param_group`): the lines of the optimizers built over it, sorted;
    for each line the highest position in `_optimizers_in`'s order among the optimizers built
    on it or on an earlier line; and their statements, in the same order."""
    entries: dict[str, list[tuple[int, int, ast.stmt]]] = {}
    for order, (model, statement) in enumerate(_optimizers_in(ctx, scope)):
        entries.setdefault(model, []).append((statement.lineno, order, statement))
    table = {}
    for model, found in entries.items():
        found.sort(key=lambda entry: entry[:2])
        last_read, latest = [], -1
        for _, order, _ in found:
            latest = max(latest, order)
            last_read.append(latest)
        table[model] = ([line for line, _, _ in found], last_read, [s for _, _, s in found])
    return table


_BRANCHES_READ = 8


@per_file
def _optimizers_in(ctx: Context, scope: ast.AST) -> tuple[tuple[str, ast.stmt], ...]:
    """(model, statement) for each optimizer assigned from `Optimizer(model.parameters(), ...)` in
    the scope, and for each `add_param_group` call (model "": it may add anything). Only
    statements are looked at: an optimizer is assigned, `add_param_group` is a statement."""
    if not _may_build_optimizers(ctx):
        return ()  # no statement of the file can: its scopes' calls are not read
    found = []
    index = index_of(ctx, scope)
    # The statements that can build an optimizer (its `.parameters()` in them) or add to one.
    wanted = {
        id(index.statement_of(call))
        for call in index.calls_named(scope, ["parameters", "named_parameters", "add_param_group"])
    }
    for statement in nested_statements(scope.body):
        if id(statement) not in wanted:  # most statements
            continue
        value = getattr(statement, "value", None)
        if type(value) is not ast.Call:
            continue
        if type(statement) is ast.Expr and _called_name(value) == "add_param_group":
            found.append(("", statement))
        elif type(statement) in (ast.Assign, ast.AnnAssign):
            found.extend((model, statement) for model in _optimized_models(value, ctx))
    return tuple(found)


@per_file
def _may_build_optimizers(ctx: Context) -> bool:
    """Some statement of the file may be one `_optimizers_in` keeps: `x.add_param_group(...)`,
    or an assignment of a call that is not a lowercase method and holds a `.parameters()` or
    `.named_parameters()` call. Read from the statements alone."""
    if not (ctx.may_name("parameters") or ctx.may_name("add_param_group")):
        return False
    for statement in statements(ctx, ast.Expr, ast.Assign, ast.AnnAssign):
        value = statement.value
        if type(value) is not ast.Call:
            continue
        if type(statement) is ast.Expr:
            if _called_name(value) == "add_param_group":
                return True
            continue
        func = value.func
        if type(func) is ast.Attribute and not func.attr[:1].isupper():
            continue  # as `_optimized_models` answers it
        if any(
            type(part) is ast.Call and _called_name(part) in ("parameters", "named_parameters")
            for part in ast.walk(value)
        ):
            return True
    return False


def _optimized_models(call: ast.Call, ctx: Context) -> list[str]:
    if isinstance(call.func, ast.Attribute) and not call.func.attr[:1].isupper():
        return []  # the common case, answered before resolving the name
    qualname = ctx.qualname(call.func) or ""
    head, _, last = qualname.rpartition(".")
    if not head.startswith("torch.optim") or "lr_scheduler" in head or not last[:1].isupper():
        return []
    models = []
    for part in ast.walk(call):
        if isinstance(part, ast.Call) and _called_name(part) in ("parameters", "named_parameters"):
            model = dotted_name(part.func.value)
            if model is not None:
                models.append(model)
    return models


# ---- small helpers -------------------------------------------------------------------------


def _called_name(call: ast.Call) -> str | None:
    """`f` in `f(...)` and in `obj.f(...)`."""
    func = call.func
    return func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None


# ---- at run time -------------------------------------------------------------------------------


@PITFALL.monitor
class OptimizerHoldsStaleParameters(Monitor):
    """A model parameter that gets gradients but is in no optimizer, while an optimizer holds
    tensors that belong to no model and get no gradient: the signature of a parameter (or a
    layer) replaced after the optimizer was built. Either half alone is normal (a head-only
    optimizer; a parameter outside any module). Checked at steps 1, 2, 4, 8, ... and every
    64th, when a replacement would have happened by then."""

    def on_step(self, optimizer) -> None:
        step = self.session.step
        if step & (step - 1) and step % 64:
            return
        models = self.session.models
        if not models:
            return
        owned = {id(p) for model in models for p in model.parameters()}
        orphans = [
            p
            for group in optimizer.param_groups
            for p in group["params"]
            if id(p) not in owned and p.grad is None
        ]
        if not orphans:
            return
        held = {
            id(p)
            for opt in self.session.optimizers
            for group in opt.param_groups
            for p in group["params"]
        }
        for model in models:
            for name, param in model.named_parameters():
                if id(param) not in held and param.requires_grad and param.grad is not None:
                    self.session.rename(model)
                    self.report(
                        id(param),
                        "runtime",
                        module=name.rpartition(".")[0] or None,
                        optimizer=type(optimizer).__name__,
                        model=type(model).__name__,
                        param=name,
                        orphans=len(orphans),
                        shape=tuple(orphans[0].shape),
                    )
                    return
