"""TD602 dataparallel-attribute: the wrapped model's own attribute read on the DataParallel wrapper."""

from __future__ import annotations

import ast
from bisect import bisect_left
from typing import Callable, Iterable, Iterator

from torchdoctor.catalog.sdk import (
    shorten,
    MODULE_SELF_METHODS,
    dotted_name,
    moves_itself,
    Context,
    FileIndex,
    Finding,
    Pitfall,
    argument,
    assigned_name,
    bindings,
    block_names,
    index,
    index_of,
    is_name,
    is_self_attribute,
    lineage,
    per_file,
    scope_of,
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
        },
        "conditional": {
            "en": "`{wrapper}` is a `{parallel}` wrapper when line {line} wraps it, and then has "
            "no attribute `{attr}`: keep the unwrapped model in a name of its own for "
            "everything but the forward call, or read `getattr({wrapper}, 'module', {wrapper})"
            ".{attr}`",
            "zh": "当第 {line} 行包装了 `{wrapper}` 时，它是 `{parallel}` 包装对象，没有属性 `{attr}`："
            "除前向调用外，请用另一个名字保留未包装的模型，或者读取 "
            "`getattr({wrapper}, 'module', {wrapper}).{attr}`",
        },
        "assigned": {
            "en": "`{wrapper}.{attr} = ...` sets an attribute of the `{parallel}` wrapper, not of the "
            "model it wraps, which keeps its own `{attr}` (set on line {before}) and reads that: "
            "set `{wrapper}.module.{attr}`",
            "zh": "`{wrapper}.{attr} = ...` 设置的是 `{parallel}` 包装对象的属性，而不是被包装的模型的；"
            "模型保留并读取它自己的 `{attr}`（第 {before} 行设置）：应设置 `{wrapper}.module.{attr}`",
        },
        "assigned-conditional": {
            "en": "when line {line} wraps `{wrapper}` in `{parallel}`, `{wrapper}.{attr} = ...` sets "
            "an attribute of the wrapper, not of the model, which keeps its own `{attr}` (set on "
            "line {before}): keep the unwrapped model in a name of its own and set it there",
            "zh": "当第 {line} 行把 `{wrapper}` 包装成 `{parallel}` 时，`{wrapper}.{attr} = ...` 设置的是"
            "包装对象的属性而不是模型的，模型保留它自己的 `{attr}`（第 {before} 行设置）："
            "请用另一个名字保留未包装的模型，并在它上面设置",
        },
        "load-conditional": {
            "en": "`{wrapper}.load_state_dict(...)` loads into `{wrapper}` as line {line} left it: "
            "wrapped in `{parallel}` only where that `if` holds (several GPUs), so the keys it "
            "expects start with `module.` on some machines and not on others, and a checkpoint "
            "saved on a machine of the other kind fails with Missing/Unexpected keys: load into "
            "the bare model before wrapping it",
            "zh": "`{wrapper}.load_state_dict(...)` 加载到第 {line} 行处理后的 `{wrapper}` 中：只有那个 "
            "`if` 成立时（多块 GPU）它才被包装成 `{parallel}`，所以它期望的键在有的机器上带 `module.` "
            "前缀、在有的机器上不带，在另一种机器上保存的 checkpoint 会因 Missing/Unexpected keys "
            "而加载失败：请在包装之前把权重加载到未包装的模型里",
        },
        "unwrapped": {
            "en": "`{wrapper}.module` exists only when line {line} has wrapped `{wrapper}` in "
            "`{parallel}`, which it does under a condition: where it does not ({where}), the "
            "bare model has no attribute `module`; read "
            "`getattr({wrapper}, 'module', {wrapper})`, or keep the unwrapped model in a name "
            "of its own",
            "zh": "只有第 {line} 行把 `{wrapper}` 包装成 `{parallel}` 之后才有 `{wrapper}.module`，"
            "而那次包装是有条件的：条件不成立时（{where_zh}），未包装的模型没有属性 `module`；"
            "请读取 `getattr({wrapper}, 'module', {wrapper})`，或者用另一个名字保留未包装的模型",
        },
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
`model = nn.DataParallel(Net()); model.predict(x)`, or `self.net.predict(x)` after
`self.net = nn.DataParallel(self.net)`. Any attribute the wrapper itself lacks counts, whatever
class it wraps. Read in the statements that follow the wrapping in its block, and when the
wrapping is a branch of an `if` (`if n_gpu > 1: model = nn.DataParallel(model)`), in those that
follow the `if` (and those after an `if` holding that one: `if device: if n_gpu > 1: ...`);
a use in a branch whose other branch goes through `.module` is left alone, and so is one in
a `try` that catches an AttributeError (`try: print(model.dropout_p) except: pass`). A use read
after several wrappings (a DDP branch, a DataParallel one) is reported once.
A wrapper moved on its line (`nn.DataParallel(model).cuda()`) or later (`model = model.cuda()`)
is still the wrapper. The other
way round: when an `if` without an `else` wraps the model, the first `.module` read after it
that no branch or `try` guards is reported too: where the `if` did not wrap it, the bare model
has no `.module` (`model.module.load_state_dict(...)` after `if use_gpu: model =
nn.DataParallel(model)`). An attribute the code set on the bare model before wrapping it
(`model.forward_mode = "cnn"`) is reported where it is read on the wrapper before any setting
there, and where it is set on the wrapper: the wrapped model keeps, and reads, its own.
A checkpoint loaded right after an `if` on the GPU count that wraps the model
(`if torch.cuda.device_count() > 1: model = nn.DataParallel(model)`, then
`model.load_state_dict(torch.load(path))`) is reported too: the keys it needs start with
`module.` on a machine with several GPUs only, so a checkpoint saved on the other kind of
machine does not load; not one the file itself saves under the same name (the best checkpoint
of the run, reloaded by the model that wrote it). An `if` on a flag every assignment of which
sets it to `True` (`USE_CUDA = True`) wraps always: nothing after it is conditional.
`explain` reads that error too: `'Net' object has no attribute 'module'`, code written for a
wrapped model (`model.module.predict(x)`) run where the model is not wrapped.

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
而 `nn.Module` 没有的方法或属性：`model = nn.DataParallel(Net()); model.predict(x)`，或者在
`self.net = nn.DataParallel(self.net)` 之后的 `self.net.predict(x)`。包装对象本身没有的任何属性都算，
不论它包装的是哪个类。检查包装语句之后、同一代码块中的语句；如果包装语句位于某个 `if` 分支中
（`if n_gpu > 1: model = nn.DataParallel(model)`），也检查这个 `if` 之后的语句
（以及包含这个 `if` 的外层 `if` 之后的语句：`if device: if n_gpu > 1: ...`）；如果某个分支的另一分支
通过 `.module` 访问模型，该分支中的使用不报告；位于捕获 AttributeError 的 `try` 中的使用
（`try: print(model.dropout_p) except: pass`）也不报告。在几处包装（一个 DDP 分支、一个 DataParallel 分支）之后
读取的同一处使用只报告一次。包装后在同一行移动设备的写法
（`nn.DataParallel(model).cuda()`）或之后再移动（`model = model.cuda()`）得到的仍是包装对象。
反过来：如果一个没有 `else` 的 `if` 包装了模型，
其后第一个不在任何分支或 `try` 中的 `.module` 访问也会被报告：`if` 没有包装时，未包装的模型没有
`.module`（`if use_gpu: model = nn.DataParallel(model)` 之后的 `model.module.load_state_dict(...)`）。
包装之前在原模型上设置过的属性（`model.forward_mode = "cnn"`），如果在包装对象上先于任何设置被读取，
或者在包装对象上被设置，也会报告：被包装的模型保留并读取的是它自己的那个属性。
在按 GPU 数量决定是否包装的 `if` 之后立即加载 checkpoint（`if torch.cuda.device_count() > 1:
model = nn.DataParallel(model)` 之后 `model.load_state_dict(torch.load(path))`）也会报告：只有在多卡机器上
它需要的键才带 `module.` 前缀，所以在另一种机器上保存的 checkpoint 加载不了；但文件自己以同一个名字
保存的 checkpoint（本次运行中最好的那个，由写出它的模型重新加载）不报告。对一个每次赋值都设为 `True`
的开关做判断的 `if`（`USE_CUDA = True`）总会包装：它之后的代码不算有条件。
`explain` 也识别这个错误：`'Net' object has no attribute 'module'`，即为包装后的模型编写的代码
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
# What the wrappers answer themselves: the nn.Module API and their own attributes (checked
# against the installed torch by tests/test_wrapper_attributes.py).
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
is_multi_device_module logger reducer T_destination batched_grad_copy broadcast_bucket_size
bucket_bytes_cap_default bucket_bytes_cap_list buffer_hook ddp forward_sync_buffers
has_custom_per_bucket_caps modules_buffers named_module_buffers skip_all_reduce_unused_params
use_side_stream_for_tensor_copies
""".split()
)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)  # where the climbs from a use stop
# Calls that ask what the object is: code after them may handle both wrapped and bare models.
INTROSPECTION = frozenset({"hasattr", "getattr", "isinstance", "type"})


# The dispatch is keyed on the name as written: the usual import aliases too.
CALL_NAMES = {"DataParallel", "DistributedDataParallel", "DDP", "DP", "NativeDDP"}


@PITFALL.static(ast.Call, names=CALL_NAMES)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    parallel = WRAPPERS.get(ctx.qualname(call.func) or "")
    if parallel is None or argument(call, 0, "module") is None or not ctx.ancestors:
        return
    statement = ctx.ancestors[-1]
    value = _moved(statement, call)  # `DataParallel(model).cuda()`: the wrapper still
    wrapper = assigned_name(statement, value)
    self_attribute = _self_attribute_assigned(statement, value)
    if wrapper is None and self_attribute is None:
        return
    # `if not isinstance(model, nn.DataParallel): model = nn.DataParallel(model)`: wrapped
    # past that `if` either way (ssast's `train`).
    always = _wraps_unless_wrapped(ctx, wrapper or f"self.{self_attribute}") or _set_true(ctx)
    for place, (block, position) in enumerate(_places_after(ctx)):
        conditional = place > 1 or place == 1 and not always
        if wrapper is not None:
            uses = _attribute_uses(block, position, wrapper, ctx)
        else:
            uses = _self_attribute_uses(block, position, self_attribute, ctx)  # type: ignore[arg-type]
        if uses is None:
            return  # rebound or inspected: what the code after it holds is not known
        unwrapped = conditional and _only_branch(ctx)
        for use in uses:
            if not isinstance(use.ctx, ast.Load):  # `model.forward_mode = "gru"` on the wrapper
                before = _set_before(ctx, statement, use) if wrapper is not None else None
                if before is not None:
                    yield ctx.finding(
                        PITFALL,
                        use,
                        "assigned-conditional" if conditional else "assigned",
                        wrapper=ctx.text(use.value),
                        parallel=parallel,
                        attr=use.attr,
                        line=statement.lineno,
                        before=before,
                    )
                continue
            if use.attr == "module" and unwrapped and not _guarded(use, ctx.ancestors[-2], ctx):
                # BiSeNet: `model.module.load_state_dict(...)` whether or not it was wrapped
                unwrapped = False  # one finding for the wrapping: the first such read
                yield ctx.finding(
                    PITFALL,
                    use,
                    "unwrapped",
                    wrapper=ctx.text(use.value),
                    parallel=parallel,
                    line=statement.lineno,
                    **_where_not_wrapped(ctx.ancestors[-2].test, ctx),  # type: ignore[attr-defined]
                )
                continue
            if (
                use.attr == "load_state_dict"
                and place == 1
                and conditional
                and _only_branch(ctx)
                and _tests_gpus(ctx.ancestors[-2].test)  # type: ignore[attr-defined]
                and _loads_a_file(use, ctx)
                and not _saved_by_this_run(use, ctx)
                and not _trained_before(use, ctx)
            ):
                reported = _reported_uses(ctx)
                if (use.lineno, use.col_offset) not in reported:
                    reported.add((use.lineno, use.col_offset))
                    yield ctx.finding(
                        PITFALL,
                        use,
                        "load-conditional",
                        wrapper=ctx.text(use.value),
                        parallel=parallel,
                        line=statement.lineno,
                    )
                continue
            if use.attr in WRAPPER_ATTRIBUTES or use.attr.startswith("_"):
                continue
            shown = ctx.text(use.value)
            if _other_branch_unwraps(use, shown, ctx) or _attribute_error_caught(use, ctx):
                continue
            reported = _reported_uses(ctx)
            if (use.lineno, use.col_offset) in reported:
                continue  # wrapped in several branches (DDP, DataParallel): one finding per use
            reported.add((use.lineno, use.col_offset))
            if conditional:  # after the `if` that may have wrapped it: `.module` may not be there
                yield ctx.finding(
                    PITFALL,
                    use,
                    "conditional",
                    wrapper=shown,
                    parallel=parallel,
                    attr=use.attr,
                    line=statement.lineno,
                )
                continue
            fix = ctx.fix(PITFALL, "unsafe", ctx.replace(use.value, f"{shown}.module"))
            yield ctx.finding(
                PITFALL, use, fix=fix, wrapper=shown, parallel=parallel, attr=use.attr
            )


def _places_after(ctx: Context) -> list[tuple[list[ast.stmt], int]]:
    """Where the code that runs after the wrapping statement is: the rest of its block, and
    when that block is a branch of an `if` (`if n_gpu > 1: model = DataParallel(model)`), the
    rest of the block holding the `if`, and so on out of `if`s in `if`s (`if device: if
    device_count() > 1: ...`)."""
    located = ctx.statement_block()
    if located is None:
        return []
    places = [located]
    ancestors = ctx.ancestors
    level = len(ancestors) - 2
    while level >= 1 and type(ancestors[level]) is ast.If:
        outer = ctx.block_position(ancestors[level], ancestors[level - 1])
        if outer is None:
            break
        places.append(outer)
        level -= 1
    return places


def _moved(statement: ast.AST, call: ast.Call) -> ast.AST:
    """`call`, or the assigned value when it is `call` moved or converted by methods that
    return the module itself (`.cuda()`, `.to(device)`)."""
    value = getattr(statement, "value", None)
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
    ):
        if value.func.value is call:
            return statement.value  # type: ignore[attr-defined]
        value = value.func.value
    return call


def _guarded(use: ast.AST, wrapping: ast.If, ctx: Context) -> bool:
    """`use` is in a `try`, or in a branch of an `if` (or `a if c else b`) whose test may tell
    whether the model was wrapped: it names what the wrapping `if` tests, or devices
    (`self.net.module.stride if multi_gpu else ...`); not `if args.pretrained is not None:`."""
    wrapped_when = _identifiers(wrapping.test)
    for node, child in lineage(use, index_of(ctx, use).parents):
        if isinstance(node, FUNCTIONS):
            return False
        if type(node) is ast.Try:
            return True
        if type(node) in (ast.If, ast.IfExp) and child is not node.test:  # type: ignore[attr-defined]
            tested = _identifiers(node.test)  # type: ignore[attr-defined]
            if tested & wrapped_when or any(
                word in name.lower() for name in tested for word in _DEVICE_WORDS
            ):
                return True
    return False


@per_file
def _reported_uses(ctx: Context) -> set[tuple[int, int]]:
    return set()


# What a handler catching an AttributeError names.
_CATCHING_ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})


def _attribute_error_caught(use: ast.AST, ctx: Context) -> bool:
    """`use` is in the body of a `try` that catches an AttributeError (`try:
    print(model.dropout_p) except: pass`): the author expects the attribute may be missing."""
    for node, child in lineage(use, index_of(ctx, use).parents):
        if isinstance(node, FUNCTIONS):
            return False
        if type(node) is ast.Try and child in node.body:
            for handler in node.handlers:
                caught = handler.type
                names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
                if caught is None or any(
                    getattr(name, "id", getattr(name, "attr", None)) in _CATCHING_ATTRIBUTE_ERRORS
                    for name in names
                ):
                    return True
    return False


# Words of a test that may tell a wrapped model from a bare one.
_DEVICE_WORDS = ("gpu", "cuda", "parallel", "distributed", "module", "world", "rank", "device")


def _identifiers(test: ast.AST) -> set[str]:
    """The attribute names a test reads, and its names but those read from (`use_gpu` and
    `is_available` of `args.use_gpu and torch.cuda.is_available()`: not `args`, which most
    tests read)."""
    nodes = subtree(test)
    bases = {id(node.value) for node in nodes if type(node) is ast.Attribute}  # type: ignore[attr-defined]
    return {
        node.id if type(node) is ast.Name else node.attr  # type: ignore[attr-defined]
        for node in nodes
        if type(node) is ast.Attribute or type(node) is ast.Name and id(node) not in bases
    }


def _wraps_unless_wrapped(ctx: Context, wrapper: str) -> bool:
    """The wrapping statement is the body of `if not isinstance(<wrapper>, <a DataParallel
    class>):` without an `else`."""
    owner = ctx.ancestors[-2]
    if type(owner) is not ast.If or owner.orelse:
        return False
    test = owner.test
    if not (type(test) is ast.UnaryOp and type(test.op) is ast.Not):
        return False
    inspected = test.operand
    return (
        type(inspected) is ast.Call
        and type(inspected.func) is ast.Name
        and inspected.func.id == "isinstance"
        and len(inspected.args) == 2
        and ctx.text(inspected.args[0]) == wrapper
        and "DataParallel" in ctx.text(inspected.args[1])
    )


def _set_true(ctx: Context) -> bool:
    """The wrapping statement is the body of `if FLAG:` where every assignment of `FLAG` in its
    scope is `FLAG = True` (3D-point-capsule-networks' `USE_CUDA = True` a few lines above): a
    switch left on, not a condition."""
    owner = ctx.ancestors[-2]
    if type(owner) is not ast.If or type(owner.test) is not ast.Name:
        return False
    name = owner.test.id
    found = bindings(ctx, scope_of(name, ctx), name)
    return bool(found) and all(
        not b.augmented and type(b.value) is ast.Constant and b.value.value is True for b in found
    )


def _tests_gpus(test: ast.AST) -> bool:
    """`if torch.cuda.device_count() > 1:`, `if self.__C.N_GPU > 1:`, `if args.multi_gpu:`."""
    return any("gpu" in word.lower() or word == "device_count" for word in _identifiers(test))


def _loads_a_file(use: ast.Attribute, ctx: Context) -> bool:
    """`model.load_state_dict(torch.load(path))`, or of a name or entry holding what a file
    gave: not another model's `state_dict()` of the same run."""
    call = index(ctx).parents.get(use)
    if not (isinstance(call, ast.Call) and call.func is use and call.args):
        return False
    state = call.args[0]
    return not (isinstance(state, ast.Call) and ctx.method_name(state) == "state_dict")


def _saved_by_this_run(use: ast.Attribute, ctx: Context) -> bool:
    """The file loaded is one the same file writes with `torch.save(..., path)` under the same
    name (tabular-dl's best checkpoint, saved and reloaded in one run): its keys come from
    this model, wrapped or not alike."""
    call = index(ctx).parents.get(use)
    loads = [
        node
        for node in subtree(call.args[0])  # type: ignore[union-attr]
        if isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.load" and node.args
    ]
    if len(loads) != 1 or not isinstance(loads[0].args[0], ast.Name):
        return False
    path = loads[0].args[0].id
    return any(
        ctx.qualname(node.func) == "torch.save"
        and isinstance(target := argument(node, 1, "f"), ast.Name)
        and target.id == path
        for node in index(ctx).everywhere(ast.Call)
    )


def _trained_before(use: ast.Attribute, ctx: Context) -> bool:
    """Earlier in the same function a call is handed the model and an optimizer (rcnn-text-
    classification's `train(model, optimizer, ...)` then `model.load_state_dict(torch.load(
    ".../best.pt"))`): the file loaded is the best checkpoint this run saved, from this model
    wrapped or not alike."""
    model = use.value
    function = ctx.enclosing_function()
    if type(model) is not ast.Name or function is None:
        return False
    for call in index_of(ctx, function).in_block(function.body, ast.Call, local=True):
        if call.lineno >= use.lineno:
            continue
        given = [*call.args, *(k.value for k in call.keywords)]
        if any(is_name(value, model.id) for value in given) and any(
            "optim" in (dotted_name(value) or "").lower() for value in given
        ):
            return True
    return False


def _where_not_wrapped(test: ast.expr, ctx: Context) -> dict[str, str]:
    """When the wrapping `if` does not run: one GPU or the CPU, for a test of the GPUs;
    otherwise where its test is false (RMI's `if args.cuda:`, which wraps on one GPU too)."""
    if _tests_gpus(test):
        return {"where": "one GPU, the CPU", "where_zh": "单 GPU、CPU"}
    shown = shorten(" ".join(ctx.text(test).split()))
    return {"where": f"`{shown}` false", "where_zh": f"`{shown}` 不成立"}


def _only_branch(ctx: Context) -> bool:
    """The wrapping statement is in the body of an `if` without an `else`: past the `if`, the
    model may be bare."""
    owner = ctx.ancestors[-2]
    return type(owner) is ast.If and not owner.orelse


def _self_attribute_assigned(statement: ast.AST, value: ast.AST) -> str | None:
    """`net` when `statement` is `self.net = value`."""
    if (
        type(statement) is ast.Assign
        and statement.value is value
        and len(statement.targets) == 1
        and is_self_attribute(statement.targets[0])
    ):
        return statement.targets[0].attr  # type: ignore[attr-defined]
    return None


def _attribute_uses(
    block: list[ast.stmt], index: int, wrapper: str, ctx: Context
) -> list[ast.Attribute] | None:
    """Reads of `wrapper.<attr>` in the statements after `block[index]`, but none of an
    attribute that is also set on the wrapper; None when the name is rebound or inspected
    there (`isinstance(model, nn.DataParallel)`): what it holds is then not known."""
    names = block_names(ctx, block)
    found = names.index
    scope = found.scopes[found.number[block[index]]]
    mentions = (
        node
        for _, nodes in names.mentions_after(wrapper, index)
        for node in nodes
        if not _shadowed(found, found.scopes[found.number[node]], scope, wrapper, ctx)
    )
    return _reads_through(mentions, found.parents.get)


def _shadowed(
    found: FileIndex, inner: ast.AST | None, outer: ast.AST | None, name: str, ctx: Context
) -> bool:
    """A function nested between the wrapping and a mention binds `name` itself (YOLOS'
    `def build_optimizer(model, args)` inside `main`, given the unwrapped model): there the
    name is another variable."""
    while inner is not None and inner is not outer:
        if bindings(ctx, inner, name):
            return True
        inner = found.scopes[found.number[inner]] if inner in found.number else None
    return False


def _self_attribute_uses(
    block: list[ast.stmt], index: int, attribute: str, ctx: Context
) -> list[ast.Attribute] | None:
    """Reads of `self.<attribute>.<attr>` in the statements after `block[index]`, as
    `_attribute_uses` reads a name's."""
    if index + 1 >= len(block):
        return []
    found = index_of(ctx, block[index])
    start = found.number[block[index + 1]]
    end = found.ends[found.number[block[-1]]]
    numbers = found.attributes.get(attribute, [])
    mentions = (
        found.nodes[at]
        for at in numbers[bisect_left(numbers, start) : bisect_left(numbers, end)]
        if is_self_attribute(found.nodes[at])
    )
    return _reads_through(mentions, found.parents.get)


def _reads_through(
    mentions: Iterable[ast.AST], parent_of: Callable[[ast.AST], ast.AST | None]
) -> list[ast.Attribute] | None:
    """The attribute reads `<mention>.<attr>` of the wrapper's mentions, in order, but none of
    an attribute also set on it; None at a mention that rebinds or inspects it."""
    uses: list[ast.Attribute] = []
    assigned: set[str] = set()
    for node in mentions:
        parent = parent_of(node)
        if not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            if _moves_itself(node, parent):
                continue  # `model = model.cuda()`: the wrapper still (DeepRecommender)
            return None  # `model = ...` or `self.net = ...` again
        if _inspects(parent, node):
            return None
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if isinstance(parent.ctx, ast.Load):
                if parent.attr not in assigned:  # read before the code sets it on the wrapper
                    uses.append(parent)
            elif isinstance(parent.ctx, ast.Store) and parent.attr not in assigned:
                assigned.add(parent.attr)
                uses.append(parent)  # the first setting of it on the wrapper
    return uses


def _set_before(ctx: Context, wrapping: ast.AST, use: ast.Attribute) -> int | None:
    """The line where the code set `<name>.<attr>` on the bare model, before `wrapping` and in
    its scope (ASVspoof's `model.forward_mode = 'cnn'`): the model has that attribute of its
    own, which a setting on the wrapper does not reach."""
    found = index(ctx)
    name = use.value.id  # type: ignore[attr-defined]
    start = found.number[wrapping]
    scope = found.scopes[start]
    for at in found.attributes.get(use.attr, ()):
        if at >= start:
            break
        node = found.nodes[at]
        if (
            isinstance(node.ctx, ast.Store)  # type: ignore[attr-defined]
            and type(node.value) is ast.Name  # type: ignore[attr-defined]
            and node.value.id == name  # type: ignore[attr-defined]
            and found.scopes[at] is scope
            and _runs_before(node, wrapping, scope, ctx)
        ):
            return node.lineno
    return None


def _runs_before(node: ast.AST, wrapping: ast.AST, scope: ast.AST | None, ctx: Context) -> bool:
    """Every branch or loop around `node` holds `wrapping` too, in the same part: whenever the
    wrapping runs, `node` has run (not torchvision's `model.qconfig = ...` under `if not
    post_training_quantize:`, which says nothing of the other branch)."""
    found = index(ctx)
    at = found.number[wrapping]
    for above, child in lineage(node, found.parents):
        if above is scope:
            return True
        if isinstance(above, _BRANCHING):
            # The branch (or loop body) of `above` that holds `node`; an `except` handler or a
            # `case` is a branch of its own.
            located = ctx.block_position(child, above)
            if not _spans(found, located[0] if located else [child], at):
                return False
    return True


_BRANCHING = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.ExceptHandler, ast.Match)


def _other_branch_unwraps(use: ast.Attribute, shown: str, ctx: Context) -> bool:
    """`use` is in one branch of an `if` (or `a if c else b`) whose other branch reaches the
    model through `<shown>.module`: the code tells the wrapped case from the other itself."""
    found = index_of(ctx, use)
    unwrapped = _unwrapped_at(ctx, shown)
    if not unwrapped:
        return False
    for node, child in lineage(use, found.parents):
        if isinstance(node, FUNCTIONS):
            return False
        if type(node) in (ast.If, ast.IfExp):
            body = node.body if type(node.body) is list else [node.body]  # type: ignore[attr-defined]
            orelse = node.orelse if type(node.orelse) is list else [node.orelse]  # type: ignore[attr-defined]
            inside = _spans(found, body, found.number[child])
            other = orelse if inside else body
            if other:  # the other branch's nodes have consecutive numbers: one bisection
                start, end = found.span(other[0])[0], found.span(other[-1])[1]
                first = bisect_left(unwrapped, start)
                if first < len(unwrapped) and unwrapped[first] < end:
                    return True
    return False


def _spans(found: FileIndex, branch: list[ast.AST], at: int) -> bool:
    """The node numbered `at` is under one of the consecutive statements of `branch`."""
    return bool(branch) and found.span(branch[0])[0] <= at < found.span(branch[-1])[1]


@per_file
def _unwrapped_at(ctx: Context, shown: str) -> list[int]:
    """The numbers (in the file's index) of the `<shown>.module` nodes, in order."""
    found = index(ctx)
    return [
        at
        for at in found.attributes.get("module", ())
        if ctx.text(found.nodes[at].value) == shown  # type: ignore[attr-defined]
    ]


def _moves_itself(target: ast.AST, statement: ast.AST | None) -> bool:
    """`model = model.cuda()`, `self.net = self.net.to(device)`: the same module rebound."""
    name = dotted_name(target)
    return (
        isinstance(statement, ast.Assign)
        and statement.targets == [target]
        and name is not None
        and moves_itself(statement.value, name)
    )


def _inspects(parent: ast.AST | None, node: ast.AST) -> bool:
    """`isinstance(node, ...)`, `hasattr(node, ...)`: code asking what the object is."""
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in INTROSPECTION
        and bool(parent.args)
        and parent.args[0] is node
    )


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
