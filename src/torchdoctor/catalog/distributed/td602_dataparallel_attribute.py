"""TD602 dataparallel-attribute: the wrapped model's own attribute read on the DataParallel wrapper."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import (
    assigned_name,
    MODULE_SELF_METHODS,
    Context,
    Finding,
    Kind,
    Pitfall,
    block_names,
    per_file,
    subtree,
)

PITFALL = Pitfall(
    code="TD602",
    name="dataparallel-attribute",
    title={
        "en": "Custom attribute of the wrapped model read on its DataParallel wrapper",
        "zh": "在 DataParallel 包装对象上访问被包装模型自己的属性",
    },
    messages={
        "": {
            "en": "`{wrapper}` is a `{parallel}` wrapper: it has no attribute `{attr}`; "
            "use `{wrapper}.module.{attr}`",
            "zh": "`{wrapper}` 是 `{parallel}` 包装对象，没有属性 `{attr}`；应写 `{wrapper}.module.{attr}`",
        }
    },
    fix_title={
        "en": "Go through the wrapped model: `.module.`",
        "zh": "通过被包装的模型访问：`.module.`",
    },
    fix_applicability="unsafe",
    fix_hint={
        "en": "Reach the model through the wrapper's `.module`: `model.module.predict(x)`, "
        "`model.module.fc`; or keep a reference to the unwrapped model "
        "(`net = Net(); model = nn.DataParallel(net)`) and use `net` for anything but "
        "the forward call.",
        "zh": "通过包装对象的 `.module` 访问模型：`model.module.predict(x)`、`model.module.fc`；或者保留一个"
        "指向原模型的引用（`net = Net(); model = nn.DataParallel(net)`），除了前向调用之外都用 `net`。",
    },
    docs={
        "en": """
## What it catches
A model wrapped in `nn.DataParallel` or `DistributedDataParallel`, then used through the
wrapper for a method or attribute that its own class defines and `nn.Module` does not:
`model = nn.DataParallel(Net()); model.predict(x)`. Only classes defined in the same file are
checked, and only uses in the statements that follow the wrapping in the same block.
`explain` also reads the other way round: `'Net' object has no attribute 'module'`, code
written for a wrapped model (`model.module.predict(x)`) run where the model is not wrapped.

## Why is this bad?
The wrapper is a new `nn.Module` that holds the model as `.module`. It forwards `__call__` and
`forward`, and has the `nn.Module` API of its own (`parameters()`, `state_dict()`, `train()`,
`to()`...), but none of the model's other methods, attributes or submodules.

## Symptoms
`AttributeError: 'DataParallel' object has no attribute 'predict'`, or
`AttributeError: 'DistributedDataParallel' object has no attribute 'predict'`.

## Fix safety
The fix inserts `.module`. It is unsafe: a method called on `.module` runs on one device
without DataParallel's splitting of the batch, and a `forward` hook or `no_sync` context set on
the wrapper does not apply to it. That is usually what a helper such as `predict` or
`generate` wants, but check it.
""",
        "zh": """
## What it catches
模型被 `nn.DataParallel` 或 `DistributedDataParallel` 包装后，又通过包装对象去访问模型类自己定义、
而 `nn.Module` 没有的方法或属性：`model = nn.DataParallel(Net()); model.predict(x)`。
只检查同一文件里定义的类，并且只检查包装语句之后、同一代码块中的语句。
`explain` 也识别反过来的情况：`'Net' object has no attribute 'module'`，即为包装后的模型编写的代码
（`model.module.predict(x)`）在模型没有被包装时运行。

## Why is this bad?
包装对象是一个新的 `nn.Module`，原模型保存在它的 `.module` 里。它转发 `__call__` 和 `forward`，
自身也有 `nn.Module` 的接口（`parameters()`、`state_dict()`、`train()`、`to()` 等），
但没有原模型的其他方法、属性和子模块。

## Symptoms
`AttributeError: 'DataParallel' object has no attribute 'predict'`，或
`AttributeError: 'DistributedDataParallel' object has no attribute 'predict'`。

## Fix safety
修复会插入 `.module`。它是不安全的：在 `.module` 上调用的方法只在一张卡上运行，不再由 DataParallel
拆分 batch，包装对象上注册的 forward hook、`no_sync` 上下文也不再作用于它。像 `predict`、`generate`
这样的辅助方法通常正需要这样，但请确认。
""",
    },
    example="""
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def predict(self, x):
        return self.fc(x).argmax(-1)


model = nn.DataParallel(Net())
labels = model.predict(None)
""",
    use_instead="""
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def predict(self, x):
        return self.fc(x).argmax(-1)


model = nn.DataParallel(Net())
labels = model.module.predict(None)
""",
)

WRAPPERS = {
    "torch.nn.DataParallel": "DataParallel",
    "torch.nn.parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "DataParallel",
    "torch.nn.parallel.DistributedDataParallel": "DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "DistributedDataParallel",
}
# What the wrappers answer themselves: the nn.Module API and their own attributes.
WRAPPER_ATTRIBUTES = frozenset(
    """
add_module apply bfloat16 buffers call_super_init children compile cpu cuda double dump_patches
eval extra_repr float forward get_buffer get_extra_state get_parameter get_submodule half ipu
load_state_dict modules mtia named_buffers named_children named_modules named_parameters
parameters register_backward_hook register_buffer register_forward_hook
register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook
register_load_state_dict_post_hook register_load_state_dict_pre_hook register_module
register_parameter register_state_dict_post_hook register_state_dict_pre_hook requires_grad_
set_extra_state set_submodule share_memory state_dict to to_empty train type xpu zero_grad
training module device_ids output_device dim src_device_obj gather scatter replicate
parallel_apply broadcast_buffers join join_device join_hook join_process_group no_sync
register_comm_hook to_kwargs will_sync_module_buffers device device_type device_mesh
process_group find_unused_parameters gradient_as_bucket_view static_graph mixed_precision
bucket_bytes_cap parameters_to_ignore require_backward_grad_sync require_forward_param_sync
is_multi_device_module logger reducer
""".split()
)
# Calls that ask what the object is: code after them may handle both wrapped and bare models.
INTROSPECTION = frozenset({"hasattr", "getattr", "isinstance", "type"})


# The dispatch is keyed on the name as written: the usual import aliases too.
CALL_NAMES = {"DataParallel", "DistributedDataParallel", "DDP", "DP", "NativeDDP"}


@PITFALL.static(ast.Call, names=CALL_NAMES)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    parallel = WRAPPERS.get(ctx.qualname(call.func) or "")
    wrapped = _wrapped_model(call)
    if parallel is None or wrapped is None:
        return
    wrapper = assigned_name(ctx.ancestors[-1] if ctx.ancestors else None, call)
    if wrapper is None:
        return
    cls = _model_class(wrapped, ctx)
    located = ctx.statement_block()
    if cls is None or located is None:
        return
    block, index = located
    own = _class_attributes(ctx, cls) - WRAPPER_ATTRIBUTES
    for use in _attribute_uses(block, index, wrapper, ctx):
        if use.attr in own:
            fix = ctx.fix(PITFALL, "unsafe", ctx.replace(use.value, f"{wrapper}.module"))
            yield ctx.finding(
                PITFALL, use, fix=fix, wrapper=wrapper, parallel=parallel, attr=use.attr
            )


def _wrapped_model(call: ast.Call) -> ast.AST | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "module"), None)


def _model_class(wrapped: ast.AST, ctx: Context) -> ast.ClassDef | None:
    """The local nn.Module class of `Net(...)`, or of a name assigned `Net(...)` just before."""
    if ctx.kind_of(wrapped) is not Kind.MODULE:
        return None
    if isinstance(wrapped, ast.Name):
        wrapped = _last_assigned_value(wrapped.id, ctx)
    while ctx.method_name(wrapped) in MODULE_SELF_METHODS:  # `Net().cuda(rank)` is still a Net
        wrapped = wrapped.func.value
    if not (isinstance(wrapped, ast.Call) and isinstance(wrapped.func, ast.Name)):
        return None
    return _module_classes(ctx).get(wrapped.func.id)


def _last_assigned_value(name: str, ctx: Context) -> ast.AST | None:
    """What `name = ...` last assigned earlier in the same block."""
    located = ctx.statement_block()
    if located is None:
        return None
    block, index = located
    position = block_names(ctx, block).last_assigned_before(name, index)
    return block[position].value if position is not None else None


@per_file
def _module_classes(ctx: Context) -> dict[str, ast.ClassDef]:
    """Module-level classes that are nn.Modules, by name."""
    return {
        node.name: node
        for node in ctx.tree.body
        if type(node) is ast.ClassDef and ctx.is_module_class(node)
    }


@per_file
def _class_attributes(ctx: Context, cls: ast.ClassDef) -> frozenset[str]:
    """Names a class and its local base classes define: methods, class attributes, `self.x = ...`."""
    names: set[str] = set()
    classes = _module_classes(ctx)
    todo, seen = [cls], set()
    while todo:
        current = todo.pop()
        if current.name in seen:
            continue
        seen.add(current.name)
        names.update(_own_attributes(ctx, current))
        todo.extend(
            classes[base.id]
            for base in current.bases
            if isinstance(base, ast.Name) and base.id in classes
        )
    return frozenset(name for name in names if not name.startswith("__"))


@per_file
def _own_attributes(ctx: Context, cls: ast.ClassDef) -> frozenset[str]:
    """The names one class defines itself (a class read once however many subclass it)."""
    names = {name for statement in cls.body for name in _bound_names(statement)}
    names.update(
        node.attr
        for node in subtree(cls)
        if isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )
    return frozenset(names)


def _bound_names(statement: ast.stmt) -> list[str]:
    """Names a class-level statement binds: `def predict`, `scale = 2.0`, `eps: float = 1e-5`."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [statement.name]
    targets = (
        statement.targets
        if isinstance(statement, ast.Assign)
        else ([statement.target] if isinstance(statement, ast.AnnAssign) else [])
    )
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _attribute_uses(
    block: list[ast.stmt], index: int, wrapper: str, ctx: Context
) -> list[ast.Attribute]:
    """Reads of `wrapper.<attr>` in the statements after `block[index]`; none when the name is
    rebound or inspected, and none of an attribute that is also set on the wrapper."""
    names = block_names(ctx, block)
    tree_parents = names.index.parents
    uses, assigned = [], set()
    for _, nodes in names.mentions_after(wrapper, index):
        for node in nodes:
            if not isinstance(node.ctx, ast.Load):
                return []
            parent = tree_parents[node]
            if (
                isinstance(parent, ast.Call)
                and isinstance(parent.func, ast.Name)
                and parent.func.id in INTROSPECTION
                and parent.args
                and parent.args[0] is node
            ):
                return []
            if not (isinstance(parent, ast.Attribute) and parent.value is node):
                continue
            if isinstance(parent.ctx, ast.Load):
                uses.append(parent)
            else:
                assigned.add(parent.attr)
    return [use for use in uses if use.attr not in assigned]


# Error signatures ---------------------------------------------------------------------------

# The other way round: code written for a wrapped model run without the wrapper.
_UNWRAPPED_CAUSE = {
    "en": "The code reaches the model through `.module`, which only a `DataParallel` / "
    "`DistributedDataParallel` wrapper has, and this `{cls}` is not wrapped (one GPU, the "
    "CPU, or a run that skips the wrapping).",
    "zh": "代码通过 `.module` 访问模型，而只有 `DataParallel` / `DistributedDataParallel` "
    "包装对象才有它；这个 `{cls}` 没有被包装（单 GPU、CPU，或跳过了包装的运行）。",
}
_UNWRAPPED_FIX = {
    "en": 'Unwrap only when wrapped: `net = model.module if hasattr(model, "module") else '
    "model`, or wrap the model the same way in every run.",
    "zh": '只在被包装时才解包：`net = model.module if hasattr(model, "module") else model`，'
    "或者在每次运行中都以同样方式包装模型。",
}
PITFALL.error(
    r"'(?!DataParallel'|DistributedDataParallel'|FullyShardedDataParallel')(?P<cls>\w+)' object "
    r"has no attribute 'module'",
    types=("AttributeError", "ModuleAttributeError"),
    confidence=0.85,
    cause=_UNWRAPPED_CAUSE,
    fix=_UNWRAPPED_FIX,
)
# Retold with the class name unquoted, as a pull request's title does (`Fix UNet2DConditionModel
# object has no attribute 'module' error`): a capitalised class name, not a sentence's word.
PITFALL.error(
    r"(?<![\w'])(?!(?:DataParallel|DistributedDataParallel|FullyShardedDataParallel|The|This"
    r"|That|Its?|An?|My|Your|Our)\b)(?P<cls>[A-Z]\w*) object has no attribute 'module'",
    types=("AttributeError", "ModuleAttributeError"),
    confidence=0.8,
    cause=_UNWRAPPED_CAUSE,
    fix=_UNWRAPPED_FIX,
)
PITFALL.error(
    r"(?<![\w'])'?(?P<wrapper>DataParallel|DistributedDataParallel|FullyShardedDataParallel)'? "
    r"object has no attribute '(?P<attr>\w+)'",
    types=("AttributeError", "ModuleAttributeError"),
    confidence=0.9,
    cause={
        "en": "`{attr}` was looked up on the `{wrapper}` wrapper, which only forwards "
        "`forward`: the model's own attributes and methods live on `.module`.",
        "zh": "在 `{wrapper}` 包装对象上查找 `{attr}`，而包装对象只转发 `forward`：模型自己的属性和方法"
        "都在 `.module` 上。",
    },
    fix={
        "en": "Use `.module.{attr}` on the wrapper (or the unwrapped model).",
        "zh": "在包装对象上改用 `.module.{attr}`（或者直接用未包装的模型）。",
    },
)
# The same retold in prose: "the `DataParallel` object doesn't have one (it only has `module`)".
PITFALL.error(
    r"(?<![\w'])'?(?P<wrapper>DataParallel|DistributedDataParallel)'? object "
    r"(?:doesn't|does not|don't) have\b",
    types=(),
    confidence=0.75,
    cause={
        "en": "An attribute of the model was looked up on the `{wrapper}` wrapper, which only "
        "forwards `forward`: the model's own attributes and methods live on `.module`.",
        "zh": "在 `{wrapper}` 包装对象上查找模型的属性，而包装对象只转发 `forward`：模型自己的属性和方法"
        "都在 `.module` 上。",
    },
    fix={
        "en": "Reach the attribute through `.module` on the wrapper (`model.module.name`), "
        "or keep a reference to the unwrapped model.",
        "zh": "通过包装对象的 `.module` 访问该属性（`model.module.generator`），或者保留一个未包装模型的引用。",
    },
)
