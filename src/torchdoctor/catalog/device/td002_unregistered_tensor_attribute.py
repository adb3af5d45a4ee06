"""TD002 unregistered-tensor-attribute: a plain tensor attribute of an nn.Module stays behind."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchdoctor.catalog.sdk import (
    is_self_attribute,
    VARIABLE_QUALNAMES,
    Clue,
    Context,
    Finding,
    Pitfall,
    index_of,
    lazy_compile,
    per_file,
    top_level_classes,
)

PITFALL = Pitfall(
    code="TD002",
    name="unregistered-tensor-attribute",
    # Off by default: right on none of 14 findings in 87 untuned corpora (docs/precision.md):
    # constants a module only copies, 0-dim scalars, tensors moved by helpers it cannot follow.
    default=False,
    title={
        "en": "Tensor stored as a plain attribute of an nn.Module",
        "zh": "张量作为普通属性挂在 nn.Module 上",
    },
    messages={
        "": {
            "en": "`self.{attr}` is a plain tensor, not a buffer: it stays where it was on "
            "`model.to(device)`/`.cuda()` and is missing from `state_dict()`",
            "zh": "`self.{attr}` 是普通张量而不是 buffer：`model.to(device)`/`.cuda()` 时它不会跟着迁移，"
            "`state_dict()` 里也没有它",
        },
        "requires-grad": {
            "en": "`self.{attr}` requires grad but is not an `nn.Parameter`: `model.parameters()` "
            "does not list it, so the optimizer never updates it",
            "zh": "`self.{attr}` 需要梯度，但不是 `nn.Parameter`：`model.parameters()` 里没有它，"
            "优化器永远不会更新它",
        },
    },
    fix_title={
        "en": 'Register it: `self.register_buffer("{attr}", ..., persistent=False)`',
        "zh": '注册为 buffer：`self.register_buffer("{attr}", ..., persistent=False)`',
    },
    fix_applicability="unsafe",
    fix_hint={
        "en": 'Register the tensor in `__init__`: `self.register_buffer("name", tensor, '
        "persistent=False)` for a constant that must follow `model.to(device)`, "
        "`nn.Parameter(tensor)` for a learnable one; keep sub-layers in `nn.ModuleList`/"
        "`nn.ModuleDict`, not in plain lists or dicts.",
        "zh": "在 `__init__` 中注册这个张量：需要跟随 `model.to(device)` 的常量用 "
        '`self.register_buffer("name", tensor, persistent=False)`，可学习的用 '
        "`nn.Parameter(tensor)`；子层放进 `nn.ModuleList`/`nn.ModuleDict`，不要放在普通的 list 或 dict 里。",
    },
    docs={
        "en": """
## What it catches
An assignment `self.x = torch.zeros(...)` (or `torch.ones`, `torch.tensor`, `torch.arange`,
`torch.eye`, `torch.randn`, `torch.Tensor(...)`... possibly followed by `.float()`, `.view(...)`,
`.to(...)`, or wrapped in PyTorch 0.3's `Variable(...)`, which hands back the tensor) in the
`__init__` of an `nn.Module` subclass, where the tensor is never registered with
`register_buffer`/`register_parameter` nor wrapped in `nn.Parameter`.

A tensor created with `requires_grad=True` (or `.requires_grad_()`) this way is reported with
its own message: it was meant to be a learnable parameter.

## Why is this bad?
`nn.Module` only knows about the tensors it was told about: parameters, buffers and
submodules. `model.to(device)`, `model.cuda()`, `model.half()` walk those and nothing else, so
the plain attribute stays on the CPU in float32 while the rest of the model moves; the first
forward on the GPU fails with a device mismatch. It is also missing from `state_dict()` (not
saved, not loaded) and from `nn.DataParallel` replicas. A plain tensor with `requires_grad=True`
is not in `model.parameters()`: the optimizer never sees it and it never learns.

A constant that has to move with the model belongs in a buffer: `register_buffer(name,
tensor)` (add `persistent=False` when it should not be saved in checkpoints). A learnable tensor
belongs in `nn.Parameter`.

## Symptoms
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!`; the tensor is absent from `model.state_dict()`; a "learnable" tensor whose
value never changes during training.

## Fix safety
The fix replaces the assignment with `self.register_buffer("x", ..., persistent=False)`. It is
unsafe: the tensor now follows every `model.to(...)`, including dtype casts such as
`model.half()`, which can change results; assigning a non-tensor to `self.x` later raises
`TypeError`. `persistent=False` keeps `state_dict()` keys unchanged, so existing checkpoints
still load with `strict=True`; drop it if the value should be saved (older checkpoints then
miss the key). No fix is offered for tensors that require grad: they should become an
`nn.Parameter`, which changes what the optimizer trains.

## Known problems
Tensors created with an explicit `device=` are not reported: such code usually places a
runtime cache on purpose. Neither are classes that move their tensors by hand (overriding
`_apply` or `to`, or calling `self.x.to(...)`), placeholders that another method replaces (a
cache rebuilt on the input's device), and tensors that `forward` never uses as a whole (only
`self.x[i]` or `self.x.shape`) or only copies into another tensor (`out[i] = self.x`,
`out.copy_(self.x)`), and 0-dim constants (`torch.tensor(0.5)`): a 0-dim CPU tensor mixes with
CUDA tensors without error, and a copy works across devices.
""",
        "zh": """
## What it catches
在 `nn.Module` 子类的 `__init__` 中写 `self.x = torch.zeros(...)`（或 `torch.ones`、`torch.tensor`、
`torch.arange`、`torch.eye`、`torch.randn`、`torch.Tensor(...)` 等，后面可以再接 `.float()`、
`.view(...)`、`.to(...)`，或包在 PyTorch 0.3 的 `Variable(...)` 里，它原样返回这个张量），
而这个张量既没有通过 `register_buffer`/`register_parameter` 注册，
也没有包在 `nn.Parameter` 里。

如果这样创建的张量带有 `requires_grad=True`（或调用了 `.requires_grad_()`），会给出单独的提示：
作者本意是让它成为可学习参数。

## Why is this bad?
`nn.Module` 只管理它知道的张量：参数、buffer 和子模块。`model.to(device)`、`model.cuda()`、
`model.half()` 只遍历这些，所以普通属性上的张量会留在 CPU 上、保持 float32，而模型其余部分都搬走了；
在 GPU 上第一次前向就会因为设备不一致而报错。它也不在 `state_dict()` 里（既不会被保存也不会被加载），
`nn.DataParallel` 的副本里也没有它。带 `requires_grad=True` 的普通张量不在 `model.parameters()`
中：优化器看不到它，它永远学不到东西。

需要跟着模型迁移的常量应当注册为 buffer：`register_buffer(name, tensor)`（不希望存进 checkpoint 时加
`persistent=False`）。需要学习的张量应当用 `nn.Parameter`。

## Symptoms
`RuntimeError: Expected all tensors to be on the same device, but found at least two devices,
cuda:0 and cpu!`；`model.state_dict()` 里找不到这个张量；本该学习的张量在训练中数值始终不变。

## Fix safety
修复会把赋值改写为 `self.register_buffer("x", ..., persistent=False)`。它是不安全的：此后这个张量会跟随
每一次 `model.to(...)`，包括 `model.half()` 这样的 dtype 转换，可能改变计算结果；之后再给 `self.x`
赋非张量的值会抛出 `TypeError`。`persistent=False` 保证 `state_dict()` 的键不变，已有的 checkpoint
仍能以 `strict=True` 加载；如果希望保存这个值，可以去掉它（但旧的 checkpoint 会缺少这个键）。
对需要梯度的张量不提供修复：它应当改成 `nn.Parameter`，这会改变优化器训练的内容。

## Known problems
显式传了 `device=` 创建的张量不报告：这类代码通常是有意在运行时放置缓存。以下情况也不报告：自己处理迁移的类
（重写了 `_apply` 或 `to`，或调用了 `self.x.to(...)`）；会被其他方法替换掉的占位张量（按输入所在设备重建的缓存）；
`forward` 中从不整体使用的张量（只用到 `self.x[i]` 或 `self.x.shape`），或只被复制进另一个张量
（`out[i] = self.x`、`out.copy_(self.x)`）；以及 0 维常量（`torch.tensor(0.5)`）：0 维的 CPU 张量可以和
CUDA 张量一起运算而不报错，复制也可以跨设备进行。
""",
    },
    example="""
import torch
import torch.nn as nn


class PositionalBias(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = torch.zeros(n)

    def forward(self, x):
        return x + self.bias
""",
    use_instead="""
import torch
import torch.nn as nn


class PositionalBias(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("bias", torch.zeros(n), persistent=False)

    def forward(self, x):
        return x + self.bias
""",
)

# torch functions that make a new tensor.
FACTORIES = frozenset(
    """
tensor as_tensor from_numpy zeros ones empty full eye arange linspace logspace rand randn
randint randperm zeros_like ones_like empty_like full_like rand_like randn_like tril triu
Tensor FloatTensor DoubleTensor HalfTensor BFloat16Tensor LongTensor IntTensor ShortTensor
ByteTensor CharTensor BoolTensor
""".split()
)
# Tensor methods that keep a freshly made tensor a tensor: `torch.arange(n).float()`.
CHAINED_METHODS = frozenset(
    """
to cuda float double half long int bool requires_grad_ unsqueeze view reshape expand contiguous t
""".split()
)
# Methods a class overrides when it moves or saves its tensors by hand.
MANUAL_HANDLING = frozenset({"_apply", "to", "cuda", "_save_to_state_dict", "state_dict"})
# Calls on `self.x` that move it by hand at use time.
MANUAL_MOVES = frozenset({"to", "cuda", "cpu", "type_as"})
# Uses of a tensor that work wherever it lives.
METADATA = frozenset({"shape", "size", "numel", "dim", "ndim", "dtype", "device", "item", "tolist"})
REGISTRATIONS = frozenset({"register_buffer", "register_parameter"})
PARAMETER_CLASSES = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "torch.nn.Buffer",
        "torch.nn.parameter.Buffer",
    }
)


@PITFALL.static(ast.Call, names=FACTORIES | CHAINED_METHODS)
def check(node: ast.Call, ctx: Context) -> Iterator[Finding]:
    statement = ctx.parent()
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or not (
        statement.value is node or _wrapped_in_variable(statement.value, node, ctx)
    ):
        return
    init, cls = _module_init(ctx)
    if init is None or not init.args.args:
        return
    target = _self_attribute(statement, init.args.args[0].arg)
    if target is None:
        return
    factory = _factory_root(node, ctx)
    if factory is None or _keyword(factory, "device") is not None:
        return  # an explicit device: a runtime cache placed on purpose
    if factory is node and _is_zero_dim_constant(node, ctx):
        return  # `torch.tensor(0.0625)`: a 0-dim CPU tensor mixes with CUDA tensors
    if not ctx.is_module_class(cls) or _handled_by_hand(cls, target.attr, ctx):
        return
    if _requires_grad(node, factory):
        if not _collected(cls, target.attr, ctx):
            yield ctx.finding(PITFALL, statement, "requires-grad", attr=target.attr)
        return
    if not _mixed_in_forward(cls, target.attr, ctx):
        return  # never meets the inputs: staying behind on the CPU breaks nothing
    yield ctx.finding(
        PITFALL, statement, fix=_register_fix(statement, target, init, ctx), attr=target.attr
    )


def _wrapped_in_variable(value: ast.AST | None, node: ast.Call, ctx: Context) -> bool:
    """`Variable(<node>)`: the wrapper of PyTorch 0.3 hands back the tensor itself
    (pytorch-ddpg-naf's `self.tril_mask = Variable(torch.tril(...))`); not with
    `requires_grad=` or `volatile=`, which said what the tensor was for."""
    return (
        isinstance(value, ast.Call)
        and len(value.args) == 1
        and value.args[0] is node
        and not value.keywords
        and ctx.call_qualname(value) in VARIABLE_QUALNAMES
    )


def _is_zero_dim_constant(call: ast.Call, ctx: Context) -> bool:
    if ctx.call_qualname(call) not in ("torch.tensor", "torch.as_tensor", "torch.scalar_tensor"):
        return False
    first = call.args[0] if call.args else None
    if isinstance(first, ast.UnaryOp) and isinstance(first.op, ast.USub):
        first = first.operand
    return (
        isinstance(first, ast.Constant)
        and isinstance(first.value, (int, float))
        and not isinstance(first.value, bool)
    )


def _module_init(ctx: Context) -> tuple[ast.FunctionDef | None, ast.ClassDef | None]:
    """The `__init__` we are directly in, and its class; (None, None) elsewhere."""
    function = ctx.enclosing_function()
    if function is None or function.name != "__init__":
        return None, None
    index = ctx.ancestors.index(function)
    cls = ctx.ancestors[index - 1] if index else None
    if not isinstance(cls, ast.ClassDef):
        return None, None
    return function, cls


def _self_attribute(statement: ast.Assign | ast.AnnAssign, self_name: str) -> ast.Attribute | None:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    if len(targets) != 1:
        return None
    target = targets[0]
    if (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and target.value.id == self_name
    ):
        return target
    return None


def _factory_root(call: ast.Call, ctx: Context) -> ast.Call | None:
    """The `torch.<factory>(...)` call at the root of `torch.zeros(3).float().view(...)`."""
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in CHAINED_METHODS
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value
    head, _, last = (ctx.qualname(call.func) or "").rpartition(".")
    return call if head == "torch" and last in FACTORIES else None


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _requires_grad(call: ast.Call, factory: ast.Call) -> bool:
    flag = _keyword(factory, "requires_grad")
    if flag is not None and not (isinstance(flag.value, ast.Constant) and not flag.value.value):
        return True
    while call is not factory:
        if call.func.attr == "requires_grad_":
            return True
        call = call.func.value
    return False


def _collected(cls: ast.ClassDef, attr: str, ctx: Context) -> bool:
    """True when `self.attr` is gathered into a list or tuple, as in `Adam([self.log_alpha])`."""
    return attr in _class_facts(ctx, cls).collected


def _handled_by_hand(cls: ast.ClassDef, attr: str, ctx: Context) -> bool:
    """True when the class registers, wraps, or moves `attr` itself, or moves all its tensors."""
    if _overrides_moves(ctx, cls):
        return True
    return attr in _class_facts(ctx, cls).by_hand


class _ClassFacts:
    """What one class does with its `self.<attr>` tensors, read once from the class's index:
    the calls and assignments that can say so, not every node."""

    def __init__(self, cls: ast.ClassDef, ctx: Context) -> None:
        # Attributes registered, wrapped in a Parameter or Buffer, moved at use time (`.to()`
        # on them), or reassigned by another method than `__init__` (a lazily rebuilt cache,
        # the value in `__init__` only a placeholder).
        self.by_hand: set[str] = set()
        self.collected: set[str] = set()  # gathered into a list or tuple
        self.found = found = index_of(ctx, cls)
        for node in found.calls_named(cls, REGISTRATIONS | MANUAL_MOVES):
            if isinstance(node.func, ast.Attribute):
                method = node.func.attr
                first = node.args[0] if node.args else None
                if (
                    method in REGISTRATIONS
                    and isinstance(first, ast.Constant)
                    and isinstance(first.value, str)
                ):
                    self.by_hand.add(first.value)
                if method in MANUAL_MOVES:
                    self.by_hand.update(_self_attributes(node.func.value))
        # `self.w = nn.Parameter(...)`, also through an alias of the class.
        for call in found.calls_named(cls, {*_PARAMETER_NAMES, *ctx.imported}):
            statement = found.parents.get(call)
            if (
                type(statement) is ast.Assign
                and statement.value is call
                and ctx.call_qualname(call) in PARAMETER_CLASSES
            ):
                self.by_hand.update(t.attr for t in statement.targets if is_self_attribute(t))
        for node in found.under(cls, ast.List, ast.Tuple):
            self.collected.update(e.attr for e in node.elts if is_self_attribute(e))
        for method in cls.body:
            if (
                isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
                and method.name != "__init__"
            ):
                self.by_hand.update(
                    t.attr
                    for node in found.under(method, ast.Assign)
                    for t in node.targets
                    if is_self_attribute(t)
                )
        self.forward = next(
            (s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None
        )

    def forward_uses(self, attr: str) -> tuple[int, int]:
        """The uses of `self.attr` in `forward`: as a whole, and harmless ones (an element, or
        metadata)."""
        if self.forward is None:
            return 0, 0
        uses = harmless = 0
        for at in self.found.numbers_in(self.found.attributes, self.forward, attr):
            node = self.found.nodes[at]
            if not is_self_attribute(node):
                continue
            uses += 1
            parent = self.found.parents[node]
            if (
                type(parent) is ast.Subscript
                and parent.value is node
                or type(parent) is ast.Attribute
                and parent.attr in METADATA
                or _copied_from(node, parent)
            ):
                harmless += 1
        return uses, harmless


# The last names of PARAMETER_CLASSES.
_PARAMETER_NAMES = frozenset(name.rpartition(".")[2] for name in PARAMETER_CLASSES)


@per_file
def _class_facts(ctx: Context, cls: ast.ClassDef) -> _ClassFacts:
    return _ClassFacts(cls, ctx)


@per_file
def _overrides_moves(ctx: Context, cls: ast.ClassDef) -> bool:
    """True when the class or one of its local bases overrides how tensors are moved or saved."""
    return _overrides_moves_below(cls, ctx, frozenset())


def _overrides_moves_below(cls: ast.ClassDef, ctx: Context, seen: frozenset) -> bool:
    if cls in seen:
        return False
    for statement in cls.body:
        if (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name in MANUAL_HANDLING
        ):
            return True
    classes = top_level_classes(ctx)
    bases = (classes.get(b.id) for b in cls.bases if isinstance(b, ast.Name))
    return any(
        base is not None and _overrides_moves_below(base, ctx, seen | {cls}) for base in bases
    )


def _mixed_in_forward(cls: ast.ClassDef, attr: str, ctx: Context) -> bool:
    """True when `forward` uses `self.attr` as a whole tensor, not just its metadata or items.

    An element (`self.stride[i]`) is fine on the CPU: a 0-dim CPU tensor mixes with CUDA ones.
    """
    uses, harmless = _class_facts(ctx, cls).forward_uses(attr)
    return uses > harmless


def _copied_from(node: ast.AST, parent: ast.AST) -> bool:
    """`out[i] = self.x` and `out.copy_(self.x)` copy the values into a tensor on its own
    device: a copy works across devices."""
    if type(parent) is ast.Assign:
        return parent.value is node and all(type(t) is ast.Subscript for t in parent.targets)
    return (
        type(parent) is ast.Call
        and type(parent.func) is ast.Attribute
        and parent.func.attr == "copy_"
        and node in parent.args
    )


def _self_attributes(expr: ast.AST) -> set[str]:
    """The `x` of every `self.x` in `expr`."""
    return {node.attr for node in ast.walk(expr) if is_self_attribute(node)}


def _register_fix(statement: ast.AST, target: ast.Attribute, init: ast.FunctionDef, ctx: Context):
    """`self.register_buffer("x", <value>, persistent=False)`, when the swap is well-formed.

    register_buffer fails before `Module.__init__` has run and on a name that is already a plain
    attribute, so the fix is offered only after the base initialiser and for a first assignment.
    """
    if not isinstance(statement, ast.Assign) or not _after_base_init(statement, init, ctx):
        return None
    if _assigned_before(statement, target.attr, init, ctx):
        return None
    receiver = target.value.id
    value = ctx.text(statement.value)
    replacement = f'{receiver}.register_buffer("{target.attr}", {value}, persistent=False)'
    title = {lang: text.format(attr=target.attr) for lang, text in PITFALL.fix_title.items()}
    return ctx.fix(PITFALL, "unsafe", ctx.replace(statement, replacement), title=title)


def _after_base_init(statement: ast.AST, init: ast.FunctionDef, ctx: Context) -> bool:
    first = _init_facts(ctx, init).base_init_line
    return first is not None and first < statement.lineno


def _assigned_before(statement: ast.AST, attr: str, init: ast.FunctionDef, ctx: Context) -> bool:
    first = _init_facts(ctx, init).first_assigned.get(attr)
    return first is not None and first < statement.lineno


class _InitFacts:
    """Where `__init__` calls its base class's `__init__`, and first assigns each attribute."""

    def __init__(self, init: ast.FunctionDef, ctx: Context) -> None:
        self.base_init_line = next(
            (
                node.lineno
                for node in init.body
                if isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and Context.method_name(node.value) == "__init__"
            ),
            None,
        )
        self.first_assigned: dict[str, int] = {}
        for node in index_of(ctx, init).under(init, ast.Assign, ast.AnnAssign, ast.AugAssign):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign))
                else []
            )
            for target in targets:
                if is_self_attribute(target):
                    line = self.first_assigned.get(target.attr, node.lineno)
                    self.first_assigned[target.attr] = min(line, node.lineno)


@per_file
def _init_facts(ctx: Context, init: ast.FunctionDef) -> _InitFacts:
    return _InitFacts(init, ctx)


# Explaining errors ----------------------------------------------------------------------------

# TorchScript tracing (and TensorBoard's add_graph, which traces) refuses a tensor attribute that
# requires grad: it is neither a parameter nor an input.
PITFALL.error(
    r"Cannot insert a Tensor that requires grad as a constant",
    types=("RuntimeError",),
    # The other usual cause is not ours: tracing a model wrapped in DataParallel, whose
    # replicas' weights are copies, not parameters.
    confidence=0.7,
    cause={
        "en": "Tracing the model (`torch.jit.trace`, TensorBoard's `add_graph`) met a tensor that "
        "requires grad but is neither an input nor a parameter: a tensor kept as a plain "
        "attribute of a module (`self.scale = torch.ones(3, requires_grad=True)`), which should "
        "be an `nn.Parameter`; or the model traced is wrapped in `DataParallel`, whose replicas' "
        "weights are copies (trace `model.module`).",
        "zh": "追踪模型时（`torch.jit.trace`、TensorBoard 的 `add_graph`）遇到一个需要梯度、却既不是输入也不是参数的"
        "张量：作为模块普通属性保存的张量（`self.scale = torch.ones(3, requires_grad=True)`），"
        "它应当是 `nn.Parameter`；或者被追踪的模型包在 `DataParallel` 里，其副本的权重只是拷贝"
        "（改为追踪 `model.module`）。",
    },
)
# The optimizer finds nothing to train: the model's layers or weights were never registered.
PITFALL.error(
    r"optimizer got an empty parameter list",
    types=("ValueError",),
    confidence=0.6,
    cause={
        "en": "`model.parameters()` gave the optimizer nothing: the model registered no "
        "parameter, most often because its layers are kept in a plain Python list or dict (not "
        "`nn.ModuleList`/`nn.ModuleDict`) or its weights are plain tensor attributes (not "
        "`nn.Parameter`); or a filter (`requires_grad`, a name prefix) left none.",
        "zh": "`model.parameters()` 没有给优化器任何参数：模型没有注册任何参数，最常见的原因是各层放在"
        "普通的 Python list 或 dict 里（而不是 `nn.ModuleList`/`nn.ModuleDict`），或者权重是普通的张量属性"
        "（而不是 `nn.Parameter`）；也可能是某个过滤条件（`requires_grad`、名字前缀）把参数全滤掉了。",
    },
)

# A device mismatch whose report names its cause: a tensor of the module that should have been a
# registered buffer ("`ab` needs to be registered to buffer", "use register_buffer", "is not a
# buffer"), as issues and pull requests that fix one say.
_DEVICES_DIFFER = lazy_compile(
    r"Expected all tensors to be on the same device|expected device \S+ but got device"
    r"|Expected object of (?:device type|backend) \w+ but got"
)
# A call with arguments is code pasted with the report, where the tensor *is* registered.
_SAYS_BUFFER = lazy_compile(
    r"register_buffer\b(?!\(\s*[\w'\"])"
    r"|\b[Rr]egister(?:ed|ing)?\s+(?:it\s+|them\s+)?(?:as|to|in)\s+(?:an?\s+|the\s+)?"
    r"(?:\w+\s+)?buffers?\b"
    r"|\bnot\s+(?:registered\s+)?(?:as\s+)?(?:an?\s+)?buffers?\b"
)
# "I already registered it as a buffer, but it still ...": the buffer was tried, not the cause.
_TRIED = lazy_compile(r"\b(?:already|still|even though|despite|tried)\b")


@PITFALL.error_check(
    types=("RuntimeError",),
    words=(
        "expected all tensors to be on the same device",
        "expected device",
        "expected object of",
    ),
)
def said_unregistered(block, report) -> Clue | None:
    """A device mismatch the report itself blames on a tensor attribute that is no buffer."""
    if _DEVICES_DIFFER.search(block.message) is None:
        return None
    found = report.search(_SAYS_BUFFER)
    if found is None:
        return None
    text = report.text
    start = max(text.rfind(".", 0, found.start()), text.rfind("\n", 0, found.start())) + 1
    ends = [i for i in (text.find(".", found.end()), text.find("\n", found.end())) if i >= 0]
    if _TRIED.search(text, start, min(ends, default=len(text))):
        return None
    return Clue(
        # Above the device mismatch it explains (0.95): the root cause comes first.
        0.97,
        {
            "en": "The tensor the report names as a missing buffer is a plain tensor attribute of "
            "the module: `model.to(device)`/`.cuda()` moves parameters and registered buffers "
            "only, so it stays on the device it was made on while the rest of the computation "
            "is on the other one.",
            "zh": "报告中提到应当注册为 buffer 的张量是模块的普通张量属性：`model.to(device)`/`.cuda()` "
            "只移动参数和已注册的 buffer，所以它留在创建时的设备上，而其余计算在另一个设备上。",
        },
        {
            "en": "Register it in `__init__` with `self.register_buffer(name, tensor, "
            "persistent=False)` (`persistent=False` keeps it out of the state dict, so old "
            "checkpoints still load).",
            "zh": "在 `__init__` 中用 `self.register_buffer(name, tensor, persistent=False)` 注册它"
            "（`persistent=False` 使它不进入 state dict，旧的 checkpoint 仍能加载）。",
        },
    )


# An issue that says a tensor attribute does not follow the model: "`self.tem` is not moved to
# GPU as expected", "self.mask stays on the CPU", or that tensors which are "not a Buffer" are
# "not moved together with the model".
_NOT_MOVED = (
    r"\b(?:is|are|was|were|gets?|got)\s+(?:therefore\s+|thus\s+|then\s+)?(?:not|never)\s+"
    r"(?:being\s+)?moved\b"
    r"|\b(?:isn't|aren't|wasn't|weren't|doesn't|don't)\s+(?:get\s+)?mov(?:e|ed)\b"
    r"|\b(?:stays?|remains?|is still|are still)\s+on\s+(?:the\s+)?(?:CPU|cpu)\b"
)
_ATTRIBUTE_NOT_MOVED = lazy_compile(
    r"\bself\.(?P<attr>\w{1,80})`?[^.\n]{0,80}?(?:" + _NOT_MOVED + ")"
)
_SAID_NOT_MOVED = lazy_compile(_NOT_MOVED)
_NOT_A_BUFFER = lazy_compile(r"\bnot\s+(?:registered\s+)?(?:as\s+)?(?:an?\s+)?[Bb]uffers?\b")
# `self.layers = [...]`, `self.encoder = nn.Linear(...)`: a list of modules or a module, which
# another story explains.
_NO_TENSOR = r"self\.{}\s*=\s*(?:\[|\{{|(?:torch\.)?nn\.)"
_NOT_MOVED_CAUSE = {
    "en": "The text says a tensor attribute of the module{named} does not move with the model: "
    "`model.to(device)` / `.cuda()` moves parameters and registered buffers only, and a tensor "
    "kept as a plain attribute stays on the device it was made on.",
    "zh": "文本说模块的一个张量属性{named}没有随模型移动：`model.to(device)` / `.cuda()` 只移动参数和"
    "已注册的 buffer，作为普通属性保存的张量会留在创建它时的设备上。",
}
_NOT_MOVED_FIX = {
    "en": "Register it in `__init__` with `self.register_buffer(name, tensor, persistent=False)` "
    "(`persistent=False` keeps it out of the state dict), or make it in `forward` on the "
    "input's device (`device=x.device`).",
    "zh": "在 `__init__` 中用 `self.register_buffer(name, tensor, persistent=False)` 注册它"
    "（`persistent=False` 使它不进入 state dict），或者在 `forward` 中按输入的设备创建它"
    "（`device=x.device`）。",
}


def _other_errors(report) -> bool:
    """An exception other than a device mismatch: it is the story (asked once per input)."""
    return any(_DEVICES_DIFFER.search(b.message) is None for b in report.exceptions)


@PITFALL.error_check(types=(), words=("move", "cpu"))
def said_not_moved(block, report) -> Clue | None:
    """Prose, perhaps with the device mismatch it causes: no other error is the story."""
    if report.once(_other_errors):
        return None
    found = report.search(_ATTRIBUTE_NOT_MOVED)
    if found is not None:
        attr = found.group("attr")
        if report.search(_NO_TENSOR.format(re.escape(attr))):
            return None
        named = {"en": f" (`self.{attr}`)", "zh": f"（`self.{attr}`）"}
    elif report.search(_SAID_NOT_MOVED) and (
        report.search(_SAYS_BUFFER) or report.search(_NOT_A_BUFFER)
    ):
        named = {"en": "", "zh": ""}
    else:
        return None
    cause = {lang: text.replace("{named}", named[lang]) for lang, text in _NOT_MOVED_CAUSE.items()}
    return Clue(0.7, cause, _NOT_MOVED_FIX)
