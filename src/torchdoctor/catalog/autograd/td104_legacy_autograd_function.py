"""TD104 legacy-autograd-function: a `torch.autograd.Function` with instance `forward`/`backward`."""

from __future__ import annotations

import ast

from torchdoctor.catalog.sdk import (
    FORWARD_CALLED,
    Context,
    Finding,
    Pitfall,
    attribute_values,
    bindings,
    call_name,
    is_self_attribute,
    names_assigned_calls_of,
    per_file,
    scope_of,
    shorten,
    statements,
)

PITFALL = Pitfall(
    code="TD104",
    name="legacy-autograd-function",
    title={
        "en": "Autograd Function with a non-static `forward`/`backward` (legacy style)",
        "zh": "`forward`/`backward` 不是静态方法的旧式 autograd Function",
    },
    messages={
        "": {
            "en": "autograd Function `{cls}` is written in the legacy style, methods not "
            "`@staticmethod`: {methods}; legacy Functions raise RuntimeError since PyTorch 1.5 "
            "(earlier versions warned); make them `@staticmethod`s taking `ctx` instead of `self`, and call "
            "`{cls}.apply(...)`",
            "zh": "autograd Function `{cls}` 是旧式写法，这些方法不是 `@staticmethod`：{methods}；旧式 "
            "Function 从 PyTorch 1.5 起会抛出 RuntimeError（更早的版本只给出警告）；"
            "请把它们改成以 `ctx` 代替 `self` 的 "
            "`@staticmethod`，并通过 `{cls}.apply(...)` 调用",
        },
        "plain": {
            "en": "`{cls}` subclasses autograd `Function` but defines no `backward`, and the "
            "project runs it as a plain object (`forward` called by name on an instance): that "
            "works today, but instantiating a `Function` is deprecated and is to raise in a "
            "future PyTorch; make `{cls}` a plain class or an `nn.Module`",
            "zh": "`{cls}` 继承了 autograd `Function`，却没有定义 `backward`，项目把它当作普通对象使用"
            "（在实例上按名字调用 `forward`）：目前可以运行，但实例化 `Function` 已被弃用，将来的 PyTorch "
            "版本会抛出错误；请把 `{cls}` 改成普通类或 `nn.Module`",
        },
        "call": {
            "en": "`{call}` calls an instance of autograd Function `{cls}`: Function instances "
            "cannot be called since PyTorch 1.5 (legacy Functions); make its `forward` and "
            "`backward` `@staticmethod`s and call `{cls}.apply(...)`",
            "zh": "`{call}` 调用了 autograd Function `{cls}` 的实例：从 PyTorch 1.5 起 Function "
            "的实例不能再被调用（旧式 Function）；请把它的 `forward` 和 `backward` 改成 "
            "`@staticmethod`，并通过 `{cls}.apply(...)` 调用",
        },
    },
    fix_hint={
        "en": "Make `forward` and `backward` `@staticmethod`s taking `ctx` instead of `self`, "
        "move `__init__` options to extra arguments of `forward` (with a `None` "
        "gradient each in `backward`), and call `MyFn.apply(x, ...)` instead of "
        "`MyFn()(x)`.",
        "zh": "把 `forward` 和 `backward` 改成以 `ctx` 代替 `self` 的 `@staticmethod`，把 `__init__` "
        "的选项改为 `forward` 的额外参数（在 `backward` 中各自返回 `None` 梯度），并用 "
        "`MyFn.apply(x, ...)` 代替 `MyFn()(x)` 调用。",
    },
    docs={
        "en": """
## What it catches
A subclass of `torch.autograd.Function` (also through `from torch.autograd import Function`
and through your own subclasses of it) whose `forward`, `backward` (or `setup_context`, `jvp`,
`vjp`) is a plain method instead of a `@staticmethod`: reported once, at the `class` line,
naming those methods.

Also a call of an instance of such a Function, where the error is raised: `MyFn(args)(x)`, or
`fn(x)` / `self.fn(x)` where every assignment of `fn` / `self.fn` is `MyFn(...)`. The class
may be defined in the file, or in another module of the project that subclasses
`torch.autograd.Function` directly (`from models.functions import RoIPool`, or a star import
of the package that holds it: `from utils import *`).

A Function that defines no `backward`, whose instance the project runs by calling `forward` by
name (`detector = Detect(...)`, then `detector.forward(out, priors)`), is a plain object that
works today: its class is reported with a message of its own (instantiating a `Function` is
deprecated, and is to raise in a future PyTorch: make it a plain class); a call of an instance
is still reported as the error it is.

## Why is this bad?
Before PyTorch 1.5 a custom Function could be written like a module: state in `__init__`,
`forward(self, x)` and `backward(self, grad)` as instance methods, and `MyFn()(x)` to call it.
That "legacy" style warned as deprecated from 1.2 on and was removed in 1.5. In the new style
the methods are static and receive a `ctx` object as their first argument instead of `self`:
`forward(ctx, *inputs)` stores what backward needs with `ctx.save_for_backward(...)` (or plain
attributes such as `ctx.scale = scale` for non-tensors), and `backward(ctx, *grad_outputs)`
reads it back from `ctx.saved_tensors` and returns one gradient per input of `forward` (`None`
for inputs that need none). The Function is never instantiated: `MyFn.apply(x, scale)` runs it and records it
in the graph; options that used to go to `__init__` become extra arguments of `apply`.

## Symptoms
`RuntimeError: Legacy autograd function with non-static forward method is deprecated. Please
use new-style autograd function with static forward method. (Example:
https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)`, after the warning
`DeprecationWarning: <class '...'> should not be instantiated. Methods on autograd functions
are all static, so you should invoke them on the class itself.`

## Known problems
A method made static by a decorator the doctor does not know (anything but `staticmethod`,
`classmethod`, `once_differentiable`, the `custom_fwd`/`custom_bwd` decorators and the
`@overrides`/`@override` markers) is assumed to be fine. A non-static method that is only
ever reached through `.apply` happens to work (its `self` receives the `ctx`), but it is
reported all the same.

## References
- https://pytorch.org/docs/stable/notes/extending.html
""",
        "zh": """
## What it catches
`torch.autograd.Function` 的子类（包括 `from torch.autograd import Function` 导入的，以及继承自你自己的
Function 子类的），其 `forward`、`backward`（或 `setup_context`、`jvp`、`vjp`）是普通方法而不是 `@staticmethod`：
每个类只在 `class` 那一行报告一次，并列出这些方法。

也报告对这种 Function 实例的调用——错误正是在这里抛出的：`MyFn(args)(x)`，或者 `fn(x)` / `self.fn(x)`，
且 `fn` / `self.fn` 的每次赋值都是 `MyFn(...)`。这个类可以定义在本文件中，也可以定义在项目的其他模块里、
直接继承 `torch.autograd.Function`（`from models.functions import RoIPool`，或者对包含它的包的
星号导入：`from utils import *`）。

如果 Function 没有定义 `backward`，而项目按名字调用它实例的 `forward`（`detector = Detect(...)` 之后
`detector.forward(out, priors)`），这样的对象只是普通对象，目前可以运行：这个类会以单独的提示报告
（实例化 `Function` 已被弃用，将来的 PyTorch 会抛出错误：请改成普通类）；对实例的调用仍按错误报告。

## Why is this bad?
在 PyTorch 1.5 以前，自定义 Function 可以写得像模块一样：状态放在 `__init__` 里，`forward(self, x)`
和 `backward(self, grad)` 是实例方法，用 `MyFn()(x)` 调用。这种“旧式”写法从 1.2 起给出弃用警告，在 1.5 中被移除。
新式写法里这些方法都是静态方法，第一个参数是 `ctx` 对象而不是 `self`：`forward(ctx, *inputs)` 用
`ctx.save_for_backward(...)` 保存反向传播要用的张量（非张量可直接存成属性，如 `ctx.scale = scale`），
`backward(ctx, *grad_outputs)` 从 `ctx.saved_tensors` 取回它们，并为 `forward` 的每个输入返回一个梯度
（不需要梯度的输入返回 `None`）。Function 不再实例化：用 `MyFn.apply(x, scale)` 运行它并把它记录到
计算图中；以前传给 `__init__` 的选项改为 `apply` 的额外参数。

## Symptoms
`RuntimeError: Legacy autograd function with non-static forward method is deprecated. Please
use new-style autograd function with static forward method. (Example:
https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)`，在此之前还会有警告
`DeprecationWarning: <class '...'> should not be instantiated. Methods on autograd functions
are all static, so you should invoke them on the class itself.`

## Known problems
如果方法由本工具不认识的装饰器变成静态方法（除 `staticmethod`、`classmethod`、
`once_differentiable`、`custom_fwd`/`custom_bwd` 以及 `@overrides`/`@override` 标记之外的装饰器），
会被当作没有问题。只通过 `.apply` 调用的非静态方法碰巧可以运行（它的 `self` 收到的是 `ctx`），但仍然会被报告。

## References
- https://pytorch.org/docs/stable/notes/extending.html
""",
    },
    example="""
import torch


class ScaleGrad(torch.autograd.Function):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return x.view_as(x)

    def backward(self, grad_output):
        return grad_output * self.scale


y = ScaleGrad(0.5)(torch.randn(3, requires_grad=True))
""",
    use_instead="""
import torch


class ScaleGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


y = ScaleGrad.apply(torch.randn(3, requires_grad=True), 0.5)
""",
)

# From its first words, or its second sentence alone: issues retype the rest ("is depracted").
PITFALL.error(
    r"Legacy autograd function with non-static forward method"
    r"|use new-style autograd function with static forward method",
    types=("RuntimeError", "UserWarning", "DeprecationWarning"),
    confidence=0.95,
    cause={
        "en": "A custom `torch.autograd.Function` is written in the legacy style (instance "
        "`forward`/`backward`, called as `MyFn()(x)`), which PyTorch no longer runs "
        "since 1.5.",
        "zh": "某个自定义 `torch.autograd.Function` 用的是旧式写法（实例方法 `forward`/`backward`，"
        "以 `MyFn()(x)` 调用），PyTorch 从 1.5 起已不再支持。",
    },
)
PITFALL.error(
    r"should not be instantiated\. Methods on autograd functions are all static",
    types=("DeprecationWarning", "UserWarning"),
    confidence=0.85,
    cause={
        "en": "A `torch.autograd.Function` subclass is instantiated (`MyFn()(x)`): autograd "
        "Functions are used through `MyFn.apply(x)`, with static methods.",
        "zh": "对 `torch.autograd.Function` 的子类做了实例化（`MyFn()(x)`）：autograd Function "
        "应通过 `MyFn.apply(x)` 使用，其方法都是静态方法。",
    },
)

FUNCTION_CLASSES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
    }
)
# Methods autograd calls on the class itself, passing the ctx as first argument.
STATIC_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})
STATIC_DECORATORS = frozenset({"staticmethod", "classmethod"})
# Decorators that wrap the function and leave it an instance method.
TRANSPARENT_DECORATORS = frozenset(
    {
        "torch.autograd.function.once_differentiable",
        "torch.amp.custom_fwd",
        "torch.amp.custom_bwd",
        "torch.amp.autocast_mode.custom_fwd",
        "torch.amp.autocast_mode.custom_bwd",
        "torch.cuda.amp.custom_fwd",
        "torch.cuda.amp.custom_bwd",
        # Markers of an override, which return the method as it is.
        "overrides.overrides",
        "overrides.override",
        "typing.override",
        "typing_extensions.override",
    }
)


@PITFALL.static(ast.ClassDef)
def check(cls: ast.ClassDef, ctx: Context) -> list[Finding] | None:
    """Reported once per class, at its header: the class is what is written in the legacy
    style, and the message names its methods that are not static."""
    methods = [
        statement
        for statement in cls.body
        if type(statement) is ast.FunctionDef
        and statement.name in STATIC_METHODS
        and all(_is_transparent(decorator, ctx) for decorator in statement.decorator_list)
    ]
    if not methods or not ctx.class_inherits(cls, FUNCTION_CLASSES.__contains__):
        return None
    defines_backward = any(
        type(statement) is ast.FunctionDef and statement.name == "backward"
        for statement in cls.body
    )
    if not defines_backward and ctx.project.has(FORWARD_CALLED + cls.name):
        # No gradient of its own, and the project calls `detector.forward(...)` by name on an
        # instance (RFBNet's `Detect`): a plain object, which runs (a call of an instance, the
        # one thing that raises, is reported where it is); only its being a Function is wrong.
        return [ctx.finding(PITFALL, _class_header(cls), "plain", cls=cls.name)]
    if _static_forward(cls):
        # `forward` is static and the Function is used through `.apply`: autograd finds
        # `backward` on the class and passes `ctx` first, so a plain method works too.
        methods = [method for method in methods if method.name != "backward"]
    if not methods:
        return None
    # Each method named with its line: the `def`s the fix changes.
    names = ", ".join(f"`{method.name}` (line {method.lineno})" for method in methods)
    return [ctx.finding(PITFALL, _class_header(cls), methods=names, cls=cls.name)]


@PITFALL.static(ast.Call)
def check_call(call: ast.Call, ctx: Context) -> list[Finding] | None:
    func = call.func
    kind = type(func)
    if kind is ast.Attribute and (type(func.value) is not ast.Name or func.value.id != "self"):
        return None  # most calls: `x.method(...)`, not `self.fn(...)`
    classes = _function_classes_named(ctx)
    if not classes:  # most files: no autograd Function anywhere near
        return None
    if kind is ast.Call:  # `MyFn(args)(x)`
        cls = _function_class(func, ctx)
    elif kind is ast.Name:  # `fn(x)` after `fn = MyFn(args)`
        if func.id not in _instance_names(ctx):  # most calls: nothing read
            return None
        cls = _instance_of(ctx, scope_of(func.id, ctx), func.id)
    elif kind is ast.Attribute:  # `self.fn(x)`
        if func.attr not in _attributes_made_by(ctx, classes):
            return None
        owner = ctx.enclosing_class()
        cls = None if owner is None else _attribute_instance_of(ctx, owner, func.attr)
    else:
        return None
    if cls is None:
        return None
    return [ctx.finding(PITFALL, call, "call", call=shorten(ctx.text(call)), cls=cls)]


@per_file
def _function_classes_named(ctx: Context) -> frozenset[str]:
    """The autograd Function classes the file may instantiate: those of the project it names,
    and its own classes with a base spelled `...Function` (read from its statements alone)."""
    named = {name for name in ctx.project.autograd_functions if ctx.may_name(name)}
    if ctx.may_name("Function)") or ctx.may_name("Function,"):  # `class F(autograd.Function):`
        for cls in statements(ctx, ast.ClassDef):
            if any(_spelled_function(base) for base in cls.bases):
                named.add(cls.name)
    return frozenset(named)


@per_file
def _instance_names(ctx: Context) -> frozenset[str]:
    """The names some statement assigns an instance of one of the file's Function classes."""
    return names_assigned_calls_of(ctx, _function_classes_named(ctx))


@per_file
def _attributes_made_by(ctx: Context, classes: frozenset[str]) -> frozenset[str]:
    """The attributes some `self.<attr> = C(...)` of the file assigns, `C` one of `classes`
    (read from its statements alone)."""
    found = set()
    for statement in statements(ctx, ast.Assign):
        value = statement.value
        if type(value) is ast.Call and call_name(value) in classes:
            found.update(t.attr for t in statement.targets if is_self_attribute(t))
    return frozenset(found)


def _spelled_function(base: ast.expr) -> bool:
    name = base.attr if type(base) is ast.Attribute else getattr(base, "id", "")
    return name.endswith("Function")


def _function_class(made: ast.AST, ctx: Context) -> str | None:
    """The name of the autograd Function class that `made` (a call) instantiates: a class of
    the file that subclasses it, or one of another module of the project that does directly."""
    if type(made) is not ast.Call:
        return None
    func = made.func
    if type(func) is ast.Name:
        if func.id not in _function_classes_named(ctx):
            return None
        local = ctx.local_class(func.id)
        if local is not None:
            return func.id if ctx.class_inherits(local, FUNCTION_CLASSES.__contains__) else None
        name = func.id
    elif type(func) is ast.Attribute and type(func.value) is ast.Name:
        name = func.attr  # `functions.PSAMask(...)`, the module imported from the project
    else:
        return None
    if name not in _function_classes_named(ctx) or not ctx.project.is_autograd_function(name):
        return None
    qualname = ctx.qualname(func)
    if type(func) is ast.Name:  # imported from the project by name, relatively or by `*`
        return name if ctx.from_project(name, qualname) else None
    if qualname is not None:
        return name if ctx.project.is_project_module(qualname) else None
    # Not resolved: a module imported relatively (`from . import functions`).
    base = func.value
    return name if base.id in ctx.imported and _imported_relatively(ctx, base.id) else None


def _imported_relatively(ctx: Context, name: str) -> bool:
    found = bindings(ctx, ctx.tree, name) or ()
    return bool(found) and all(
        isinstance(b.node, ast.ImportFrom) and b.node.level > 0 for b in found
    )


@per_file
def _instance_of(ctx: Context, scope: ast.AST, name: str) -> str | None:
    found = bindings(ctx, scope, name)
    if not found or any(b.value is None or b.augmented for b in found):
        return None
    classes = {_function_class(b.value, ctx) for b in found}
    return classes.pop() if len(classes) == 1 else None


@per_file
def _attribute_instance_of(ctx: Context, owner: ast.ClassDef, attr: str) -> str | None:
    values = attribute_values(ctx, owner, attr)
    classes = {_function_class(value, ctx) for value in values}
    return classes.pop() if len(classes) == 1 else None


def _static_forward(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(s, ast.FunctionDef)
        and s.name == "forward"
        and any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in s.decorator_list)
        for s in cls.body
    )


def _is_transparent(decorator: ast.expr, ctx: Context) -> bool:
    """A decorator that certainly leaves the method an instance method."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(target, ast.Name) and target.id in STATIC_DECORATORS:
        return False
    return ctx.qualname(target) in TRANSPARENT_DECORATORS


def _class_header(cls: ast.ClassDef) -> ast.AST:
    """A node spanning `class Name`, so the finding points at the header, not the body."""
    header = ast.Name(id=cls.name)
    header.lineno = header.end_lineno = cls.lineno
    header.col_offset = cls.col_offset
    header.end_col_offset = cls.col_offset + len(f"class {cls.name}")
    return header
