"""TD409 numpy-on-grad-or-cuda-tensor: `.numpy()` on a tensor that requires grad or lives on the GPU."""

from __future__ import annotations

import ast
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    CALLED_WITHOUT_GRAD,
    Context,
    Finding,
    Kind,
    Pitfall,
    from_project_class,
    argument,
    is_parameter,
    shorten,
    names_a_model,
    assigned_before,
    attribute_values,
    built_from,
    index,
    is_self_attribute,
    parameter_free_module,
    per_file,
    records_nothing,
    turns_recording_off,
    weightless_module,
)

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD409",
    name="numpy-on-grad-or-cuda-tensor",
    title={
        "en": "`.numpy()` on a tensor that requires grad or is on the GPU",
        "zh": "对需要梯度或位于 GPU 上的张量调用 `.numpy()`",
    },
    messages={
        "": {
            "en": "`{tensor}` requires grad (it comes from {origin}): `.numpy()` raises; use "
            "`.detach().cpu().numpy()`",
            "zh": "`{tensor}` 需要梯度（它来自{origin}）：`.numpy()` 会报错；请使用 "
            "`.detach().cpu().numpy()`",
        },
        "cuda": {
            "en": "`{tensor}` is on the GPU (moved by `{move}`): `.numpy()` raises; use "
            "`.detach().cpu().numpy()`",
            "zh": "`{tensor}` 位于 GPU 上（由 `{move}` 移过去）：`.numpy()` 会报错；请使用 "
            "`.detach().cpu().numpy()`",
        },
    },
    fix_title={"en": "Use `.detach().cpu().numpy()`", "zh": "改用 `.detach().cpu().numpy()`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Convert with `tensor.detach().cpu().numpy()`; for a single number use "
        "`tensor.item()`. Plotting and logging libraries call `.numpy()` for you, so pass "
        "them the detached CPU tensor too.",
        "zh": "用 `tensor.detach().cpu().numpy()` 转换；只要一个数时用 `tensor.item()`。绘图和日志库会在内部"
        "调用 `.numpy()`，所以传给它们的也应该是 detach 过、位于 CPU 上的张量。",
    },
    docs={
        "en": """
## What it catches
`.numpy()` called on a tensor that certainly requires grad or certainly lives on a CUDA device:
- the output of a model or layer called directly (`model(x)`, `self.fc(x)`), a layer's
  `.weight`/`.bias`, or an `nn.Parameter`, with no `.detach()` or `.data` in between, outside
  `torch.no_grad()` / `torch.inference_mode()` (as a `with` block or a decorator, and the
  project's own wrappers named like them);
- a tensor moved with `.cuda()` or `.to("cuda")` and not brought back with `.cpu()`.
The tensor may be the receiver itself or a name assigned just before in the same block.

## Why is this bad?
A numpy array is plain memory: it cannot record the autograd graph, and it cannot point into GPU
memory. PyTorch therefore refuses to convert a tensor that requires grad (the array would
silently cut the graph) and a CUDA tensor (numpy would read device memory). The error shows up
the first time a training script logs or plots a prediction, or when code written on a CPU
machine runs on a GPU.

## Symptoms
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()
instead.`
`TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
tensor to host memory first.`

## Fix safety
The fix inserts `.detach().cpu()` before `.numpy()`. It is safe: `.detach()` returns the same
data without the graph, `.cpu()` does nothing for a tensor already on the CPU and copies a GPU
tensor, which `.numpy()` could not read anyway. Where the original call would have worked
(under a `no_grad` the rule could not see), both are no-ops and the result is the same.

## Known problems
A model whose parameters were all frozen, or code that only runs under a `torch.no_grad()`
set up by its caller, produces outputs that do not require grad: a function every call of which
in the same file is under `no_grad` is taken as such; so is a method no code of its file calls
that some script of the project calls in a `with torch.no_grad():` block (`r_gen.rollout(p)`:
world-models), and a method of its class that only such methods call. Other callers in other
files are not seen.
Files that freeze parameters or switch grad off globally (`requires_grad_(False)`,
`set_grad_enabled`) are skipped for the grad case. Tensors whose origin is not visible in the
same block are not checked. A module passed in as a parameter is taken to have weights only
when its name says it is a model (`model`, `net`, `encoder`...): `conversion(output)` may well
have none. Layers and losses without parameters (`nn.Sigmoid()`, a `Sequential` of such layers,
`nn.BCELoss()`) pass on what their first input carries: their output is followed back to it.
""",
        "zh": """
## What it catches
对确定需要梯度、或确定位于 CUDA 设备上的张量调用 `.numpy()`：
- 直接调用模型或层得到的输出（`model(x)`、`self.fc(x)`）、层的 `.weight`/`.bias` 或 `nn.Parameter`，
  中间没有 `.detach()` 或 `.data`，并且不在 `torch.no_grad()` / `torch.inference_mode()`
  （`with` 代码块或装饰器，也包括项目自己命名类似的包装）之内；
- 用 `.cuda()` 或 `.to("cuda")` 移到 GPU、之后没有用 `.cpu()` 移回来的张量。
张量可以就是调用 `.numpy()` 的对象，也可以是同一代码块中刚刚赋值的变量。

## Why is this bad?
numpy 数组只是一块普通内存：它无法记录自动求导的计算图，也无法指向显存。因此 PyTorch 拒绝转换需要梯度的
张量（否则数组会悄悄切断计算图），也拒绝转换 CUDA 张量（numpy 读不了显存）。这个错误往往在训练脚本第一次
记录或绘制预测结果时出现，或者在 CPU 机器上写好的代码放到 GPU 上运行时出现。

## Symptoms
`RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()
instead.`
`TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the
tensor to host memory first.`

## Fix safety
修复在 `.numpy()` 之前插入 `.detach().cpu()`。这是安全的：`.detach()` 返回同样的数据但不带计算图；
对已经在 CPU 上的张量 `.cpu()` 什么也不做，对 GPU 张量则拷贝一份，而 `.numpy()` 本来就读不了 GPU 张量。
如果原来的调用其实能运行（处在规则看不到的 `no_grad` 之下），这两步都不起作用，结果完全相同。

## Known problems
所有参数都被冻结的模型，或者只会在调用方设置的 `torch.no_grad()` 之下运行的代码，其输出并不需要梯度：
同一文件中每次调用都处在 `no_grad` 之下的函数会被这样看待；本文件中没有代码调用、而项目中某个脚本在
`with torch.no_grad():` 块里调用的方法（world-models 的 `r_gen.rollout(p)`），以及只被这类方法调用的同类方法，
也会被这样看待。其他文件中的其他调用方则看不到。
冻结参数或全局关闭梯度（`requires_grad_(False)`、`set_grad_enabled`）的文件不做梯度方面的检查。
来源不在同一代码块中可见的张量不检查。作为参数传入的模块，只有名字表明它是模型（`model`、`net`、
`encoder` 等）时才认为它有权重：`conversion(output)` 这样的模块很可能没有参数。
没有参数的层和损失（`nn.Sigmoid()`、由这类层组成的 `Sequential`、`nn.BCELoss()`）只传递其第一个输入的性质：
其输出会被追溯到该输入。
""",
    },
    example="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
prediction = model(torch.randn(8, 4)).numpy()
""",
    use_instead="""
import torch
import torch.nn as nn

model = nn.Linear(4, 2)
prediction = model(torch.randn(8, 4)).detach().cpu().numpy()
""",
)

# Methods whose result keeps both `requires_grad` and the device of the tensor (integer results
# such as `.long()` or `.argmax()` never require grad).
KEEPING_METHODS = frozenset(
    """
float half double bfloat16 view view_as reshape reshape_as permute transpose t contiguous clone
squeeze unsqueeze flatten expand expand_as repeat narrow softmax log_softmax sigmoid tanh relu
exp log sqrt abs neg sum mean
""".split()
)
# Names that turn grad off for parameters or globally: the grad case is then unknowable.
GRAD_SWITCHES = frozenset({"requires_grad_", "set_grad_enabled", "requires_grad"})
MAX_HOPS = 8
# Calls of a function's name read to tell whether all of them run under no_grad.
MAX_CALLS_READ = 64


@PITFALL.static(ast.Call, names={"numpy"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    if call.args or call.keywords or not isinstance(call.func, ast.Attribute):
        return  # `.numpy(force=True)` detaches and copies to the CPU itself
    receiver = call.func.value
    origin = _origin(receiver, ctx)
    if origin is None:
        return
    variant, fields = origin
    _, end = ctx.span(call.func)
    insert_at = end - len("numpy")
    fix = ctx.fix(PITFALL, "safe", ctx.edit(insert_at, insert_at, "detach().cpu()."))
    yield ctx.finding(PITFALL, call, variant, fix=fix, tensor=_short(ctx.text(receiver)), **fields)


def _origin(expr: ast.AST, ctx: Context) -> tuple[str, dict] | None:
    """("cuda", {"move": ...}) or ("", {"origin": ...}) when `expr` surely is on the GPU or
    requires grad; None when unsure. Walks back through methods that keep both properties."""
    detached = device_known = False
    block, index = ctx.statement_block() or ([], 0)
    for _ in range(MAX_HOPS):
        if isinstance(expr, ast.Name):
            expr, index = assigned_before(expr.id, block, index, ctx)
            continue
        if isinstance(expr, ast.Attribute):
            if expr.attr in ("weight", "bias") and ctx.kind_of(expr.value) is Kind.MODULE:
                return _grad(detached, ctx, f"`{_short(ctx.text(expr))}`, a layer parameter")
            if expr.attr not in ("data", "T", "mT"):
                return None
            detached = detached or expr.attr == "data"
            expr = expr.value
            continue
        if not isinstance(expr, ast.Call):
            return None
        if expr.args and parameter_free_module(expr.func, ctx):
            expr = expr.args[0]  # `nn.Sigmoid()(x)`, `criterion(pred, y)`: as `x`, `pred` are
            continue
        if _calls_module(expr, ctx):
            return _grad(detached, ctx, f"`{_short(ctx.text(expr.func))}(...)`, a module call")
        if ctx.qualname(expr.func) in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            if any(k.arg == "requires_grad" for k in expr.keywords) or len(expr.args) > 1:
                return None
            return _grad(detached, ctx, "`nn.Parameter(...)`")
        method = ctx.method_name(expr)
        if method == "detach":
            detached = True
        elif method in ("cuda", "to"):
            on_cuda = method == "cuda" or _moves_to_cuda(expr)
            if on_cuda and not device_known:
                return "cuda", {"move": _short(ctx.text(expr.func.value)) + _call_suffix(expr, ctx)}
            device_known = device_known or _sets_device(expr, ctx)
        elif method == "cpu":
            device_known = True
        elif method not in KEEPING_METHODS:
            return None
        expr = expr.func.value
    return None


def _grad(detached: bool, ctx: Context, origin: str) -> tuple[str, dict] | None:
    if detached or _grad_off_here(ctx) or _grad_switched_in_file(ctx):
        return None
    return "", {"origin": origin}


def _calls_module(call: ast.Call, ctx: Context) -> bool:
    func = call.func
    if ctx.kind_of(func) is not Kind.MODULE:
        return False
    # `nn.Softmax(dim=1)(x)`, `Swish()(x)`: no parameters, the output requires grad only if
    # x does.
    if weightless_module(func, ctx) or from_project_class(func, ctx):
        return False  # no parameters (buffers at most), or none that can be seen from here
    if _records_no_graph(func, ctx):
        return False  # a metric's feature extractor: its `forward` runs under `no_grad`
    if isinstance(func, ast.Name) and _is_parameter(func.id, ctx) and not names_a_model(func.id):
        return False  # `conversion: nn.Module` passed in: maybe a parameter-free transform
    return True


def _records_no_graph(module: ast.expr, ctx: Context) -> bool:
    """`module` (a name, or `self.x`) is built only from classes whose `forward` runs under
    `torch.no_grad()` or `inference_mode()`: of this file, or of the project (its facts)."""
    if is_self_attribute(module):
        owner = ctx.enclosing_class()
        values = attribute_values(ctx, owner, module.attr) if owner is not None else ()
        classes = [built_from(value, ctx) for value in values]
    else:
        classes = [built_from(module, ctx)]
    return bool(classes) and all(
        names and all(_forward_records_no_graph(ctx, name) for name in names) for names in classes
    )


@per_file
def _forward_records_no_graph(ctx: Context, class_name: str) -> bool:
    cls = ctx.local_class(class_name)
    if cls is None:
        return ctx.project.turns_gradients_off(class_name)
    return any(
        isinstance(method, ast.FunctionDef)
        and method.name == "forward"
        and records_nothing(method, ctx)
        for method in cls.body
    )


def _is_parameter(name: str, ctx: Context) -> bool:
    """`name` is a parameter of the function the walk is in."""
    function = ctx.enclosing_function()
    return function is not None and is_parameter(function, name)


def _moves_to_cuda(call: ast.Call) -> bool:
    device = argument(call, 0, "device")
    return (
        isinstance(device, ast.Constant)
        and isinstance(device.value, str)
        and device.value.startswith("cuda")
    )


def _sets_device(call: ast.Call, ctx: Context) -> bool:
    """True unless `.to(...)` surely only changes the dtype (`.to(torch.float32)`)."""
    if (
        call.keywords
        and all(k.arg in ("dtype", "non_blocking", "copy") for k in call.keywords)
        and not call.args
    ):
        return False
    if len(call.args) == 1 and not call.keywords:
        qualname = ctx.qualname(call.args[0]) or ""
        return not qualname.startswith("torch.") or qualname.rpartition(".")[2][:1].isupper()
    return True


def _call_suffix(call: ast.Call, ctx: Context) -> str:
    _, receiver_end = ctx.span(call.func.value)
    _, end = ctx.span(call)
    return _short(ctx.source[receiver_end:end])


def _grad_off_here(ctx: Context) -> bool:
    """Inside `with torch.no_grad():` or a function decorated with it (or inference_mode), or
    in a function every call of which in this file is."""
    for node in ctx.ancestors:
        if turns_recording_off(node, ctx, maybe=True):
            return True
    function = ctx.enclosing_function()
    return function is not None and _called_with_grad_off(ctx, function)


@per_file
def _called_with_grad_off(ctx: Context, function: ast.AST) -> bool:
    """`function` is called in this file, and every call of it is under `no_grad` (XLM's
    `GLUE.eval`, which `run` calls in a `with torch.no_grad():`): a module function by its
    name, a method as `self.<name>(...)` in its class. A call of the name on another receiver
    is taken for another function only when it passes fewer arguments than this one needs
    (`self.proj.eval()` beside `def eval(self, split)`)."""
    found = index(ctx)
    owner = found.parents.get(function)
    method = isinstance(owner, ast.ClassDef)
    if not (method or isinstance(owner, ast.Module)):
        return False
    args = function.args  # type: ignore[attr-defined]
    needed = len(args.posonlyargs) + len(args.args) - len(args.defaults) - int(method)
    named = found.calls_named(ctx.tree, (function.name,))  # type: ignore[attr-defined]
    if len(named) > MAX_CALLS_READ:
        return False  # asked per function of that name: bounded, so never quadratic
    calls = []
    for call in named:
        func = call.func
        if method and type(func) is ast.Name:
            continue  # a bare name: not a method
        if method and type(func) is ast.Attribute and type(func.value) is ast.Name:
            caller = found.parents.get(found.scopes[found.number[call]])
            if func.value.id == "self" and _another_class(caller, owner):
                continue  # `self` there is an instance of a class that is not this one
            mine = func.value.id == "self" and caller is owner
        else:
            mine = not method and type(func) is ast.Name
        if mine:
            calls.append(call)
        elif not (
            len(call.args) < needed
            and not call.keywords
            and not any(type(a) is ast.Starred for a in call.args)
        ):
            return False  # maybe a call of this function with grad on
    if not calls:
        # Called from other files only: run without gradients when the project's scripts call
        # it so (world-models' `rollout`, under `with torch.no_grad():` in its scripts).
        return method and ctx.project.has(CALLED_WITHOUT_GRAD + function.name)  # type: ignore[attr-defined]
    return all(
        _under_no_grad(call, found, ctx) or _in_method_run_without_grad(call, owner, found, ctx)
        for call in calls
    )


def _in_method_run_without_grad(call: ast.Call, owner: ast.AST, found, ctx: Context) -> bool:
    """`self.get_action(...)` in another method of the class that no code of this file calls
    and that the project's scripts call under `no_grad` (world-models: `rollout` calls
    `get_action_and_transition`)."""
    caller = found.scopes[found.number[call]]
    if not isinstance(owner, ast.ClassDef) or found.parents.get(caller) is not owner:
        return False
    name = caller.name  # type: ignore[union-attr]
    return not found.calls_named(ctx.tree, (name,)) and ctx.project.has(CALLED_WITHOUT_GRAD + name)


def _another_class(caller: ast.AST | None, owner: ast.ClassDef) -> bool:
    """`caller` is a class other than `owner` and not derived from it by name."""
    return (
        isinstance(caller, ast.ClassDef)
        and caller is not owner
        and owner.name
        not in {getattr(base, "id", getattr(base, "attr", "")) for base in caller.bases}
    )


def _under_no_grad(call: ast.Call, found, ctx: Context) -> bool:
    """`call` is in a `no_grad` block of its function, or in a function decorated with it."""
    node = found.parents.get(call)
    while node is not None:
        if turns_recording_off(node, ctx, maybe=True):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        node = found.parents.get(node)
    return False


@per_file
def _grad_switched_in_file(ctx: Context) -> bool:
    """The file freezes parameters or switches grad globally somewhere."""
    return any(node.attr in GRAD_SWITCHES for node in index(ctx).everywhere(ast.Attribute))


# Error signatures ---------------------------------------------------------------------------

# Both messages type-less: only these errors say them, and hosts that print the message without
# its class (ComfyUI's "Error occurred when executing <node>:" above the frames) still count.
PITFALL.error(
    r"Can't call numpy\(\) on (?:Tensor|Variable) that requires grad",
    types=(),
    confidence=0.95,
    cause={
        "en": "`.numpy()` was called (directly, or by numpy, matplotlib or a logger) on a "
        "tensor that is part of the autograd graph: a model output, a loss or a "
        "parameter.",
        "zh": "对计算图中的张量（模型输出、损失或参数）调用了 `.numpy()`（直接调用，或由 numpy、matplotlib、"
        "日志库间接调用）。",
    },
)
PITFALL.error(
    # "cannot convert CUDA tensor to numpy" before torch 1.0.
    r"(?:can't|cannot) convert (?:(?P<device>\w+:\d+) device type|CUDA) tensor to numpy",
    types=(),
    confidence=0.95,
    cause={
        "en": "`.numpy()` was called (directly, or by numpy, matplotlib or a logger) on a "
        "tensor in GPU memory, which numpy cannot read.",
        "zh": "对位于显存中的张量调用了 `.numpy()`（直接调用，或由 numpy、matplotlib、日志库间接调用），"
        "而 numpy 读不了显存。",
    },
)
# A traceback pasted without its last line, that stops where numpy (`np.array(list_of_tensors)`,
# `np.asarray`, matplotlib) converts a tensor: `Tensor.__array__` calling `self.numpy()`. The
# errors raised there are this entry's two, but for the rarer dtype numpy lacks (bfloat16) and
# a numpy that torch cannot load: a guess, and only when nothing follows the frame.
PITFALL.error(
    r"[/\\]_?tensor\.py\"?, line \d+, in __array__[ \t]*\n[ \t]*return self\.numpy\(\)"
    r"(?![^\n]*\n\s*\S)",
    types=(),
    confidence=0.6,
    cause={
        "en": "The traceback stops, its error line cut off, where numpy converts a tensor "
        "(`np.array`/`np.asarray` of a tensor or of a list of tensors, or a plotting call): "
        "`Tensor.__array__` calls `.numpy()`, which fails for a tensor in GPU memory or one "
        "that requires grad (the error line would tell which).",
        "zh": "调用栈停在 numpy 转换张量的地方，最后的报错行被截掉了（对张量或张量列表调用 "
        "`np.array`/`np.asarray`，或绘图调用）：`Tensor.__array__` 会调用 `.numpy()`，而张量位于显存中"
        "或需要梯度时它会失败（报错行会说明是哪一种）。",
    },
    fix={
        "en": "Convert each tensor before numpy sees it: `t.detach().cpu().numpy()` (for a list, "
        "`np.array([t.detach().cpu().numpy() for t in tensors])`, or `torch.stack(tensors)"
        ".detach().cpu().numpy()`).",
        "zh": "在交给 numpy 之前先转换每个张量：`t.detach().cpu().numpy()`（对列表用 "
        "`np.array([t.detach().cpu().numpy() for t in tensors])`，或 `torch.stack(tensors)"
        ".detach().cpu().numpy()`）。",
    },
)
