"""TD113 missing-super-init: an nn.Module's `__init__` assigns a layer before `Module.__init__`."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Kind, Pitfall, children, subtree

PITFALL = Pitfall(
    code="TD113",
    name="missing-super-init",
    title={
        "en": "nn.Module attribute assigned before `super().__init__()`",
        "zh": "在 `super().__init__()` 之前给 nn.Module 赋值子模块或参数",
    },
    messages={
        "": {
            "en": "`{target}` is assigned a {what} before `super().__init__()` is called: "
            "`{cls}()` raises AttributeError; call `super().__init__()` first",
            "zh": "在调用 `super().__init__()` 之前就给 `{target}` 赋了{what_zh}：`{cls}()` 会抛出 "
            "AttributeError；请先调用 `super().__init__()`",
        },
        "never": {
            "en": "`{cls}.__init__` never calls `super().__init__()` but assigns a {what} to "
            "`{target}`: `{cls}()` raises AttributeError; call `super().__init__()` first",
            "zh": "`{cls}.__init__` 从未调用 `super().__init__()`，却给 `{target}` 赋了{what_zh}："
            "`{cls}()` 会抛出 AttributeError；请先调用 `super().__init__()`",
        },
        "register": {
            "en": "`{target}` registers a {what} before `super().__init__()` is called: "
            "`{cls}()` raises AttributeError; call `super().__init__()` first",
            "zh": "在调用 `super().__init__()` 之前就用 `{target}` 注册了{what_zh}：`{cls}()` 会抛出 "
            "AttributeError；请先调用 `super().__init__()`",
        },
        "register-never": {
            "en": "`{cls}.__init__` never calls `super().__init__()` but registers a {what} with "
            "`{target}`: `{cls}()` raises AttributeError; call `super().__init__()` first",
            "zh": "`{cls}.__init__` 从未调用 `super().__init__()`，却用 `{target}` 注册了{what_zh}："
            "`{cls}()` 会抛出 AttributeError；请先调用 `super().__init__()`",
        },
    },
    fix_hint={
        "en": "Call `super().__init__()` as the first statement of the module's `__init__`, "
        "before any `self.layer = nn.Linear(...)`, `nn.Parameter` or `register_buffer`.",
        "zh": "在模块 `__init__` 的第一行调用 `super().__init__()`，要在任何 "
        "`self.layer = nn.Linear(...)`、`nn.Parameter` 或 `register_buffer` 之前。",
    },
    docs={
        "en": """
## What it catches
The `__init__` of an `nn.Module` subclass that assigns a submodule (`self.fc = nn.Linear(...)`),
a parameter (`self.w = nn.Parameter(...)`) or registers a buffer or parameter
(`self.register_buffer(...)`, `self.register_parameter(...)`, `self.add_module(...)`) before it
calls its base class's `__init__`: `super().__init__()`, `super(Net, self).__init__()`,
`nn.Module.__init__(self)` or `Base.__init__(self)`, or that never calls it.

## Why is this bad?
`nn.Module.__init__` creates the dictionaries where a module keeps its parameters, buffers and
submodules (`_parameters`, `_buffers`, `_modules`). `Module.__setattr__` puts every module or
parameter assigned to `self` there, so before they exist the assignment fails, and a module
that never calls it fails at its first use (`model(x)`, `model.parameters()`).

## Symptoms
`AttributeError: cannot assign module before Module.__init__() call` (or `parameters`,
`buffer`); when the base initialiser is never called and only plain attributes were set,
`AttributeError: 'Net' object has no attribute '_modules'` (or `_parameters`,
`_backward_hooks`...) at the first call of the model.

## Known problems
An `__init__` that first calls one of its own methods (`self._build()`), or a class that
overrides `__setattr__`, is not reported: the base initialiser may run there.
""",
        "zh": """
## What it catches
`nn.Module` 子类的 `__init__` 在调用基类的 `__init__`（`super().__init__()`、
`super(Net, self).__init__()`、`nn.Module.__init__(self)` 或 `Base.__init__(self)`）之前，
就赋值了子模块（`self.fc = nn.Linear(...)`）、参数（`self.w = nn.Parameter(...)`），或注册了
buffer 或参数（`self.register_buffer(...)`、`self.register_parameter(...)`、`self.add_module(...)`），
或者根本没有调用基类的 `__init__`。

## Why is this bad?
`nn.Module.__init__` 会创建模块保存参数、buffer 和子模块的字典（`_parameters`、`_buffers`、
`_modules`）。`Module.__setattr__` 会把赋给 `self` 的每个模块或参数放进这些字典，所以在它们
创建之前赋值就会失败；从不调用基类初始化的模块会在第一次使用时（`model(x)`、
`model.parameters()`）失败。

## Symptoms
`AttributeError: cannot assign module before Module.__init__() call`（或 `parameters`、
`buffer`）；如果从未调用基类初始化、只设置了普通属性，则在第一次调用模型时出现
`AttributeError: 'Net' object has no attribute '_modules'`（或 `_parameters`、
`_backward_hooks` 等）。

## Known problems
`__init__` 先调用了自己的方法（`self._build()`），或类重写了 `__setattr__` 时不报告：
基类初始化可能在那里执行。
""",
    },
    example="""
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, dim, classes):
        self.head = nn.Linear(dim, classes)
        super().__init__()

    def forward(self, x):
        return self.head(x)
""",
    use_instead="""
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        return self.head(x)
""",
)

PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
BUFFER_CLASSES = frozenset({"torch.nn.Buffer", "torch.nn.parameter.Buffer"})
# `self.<method>(...)` calls that need `Module.__init__` to have run, and what they register.
REGISTRATIONS = {
    "register_buffer": "buffer",
    "register_parameter": "parameter",
    "add_module": "module",
    "register_module": "module",
}
_WHAT_ZH = {"module": "子模块", "parameter": "参数", "buffer": "buffer"}
# Methods whose override may make an assignment before `Module.__init__` work.
_SETATTR_OVERRIDES = frozenset({"__setattr__", "__new__"})


@PITFALL.static(ast.FunctionDef, names={"__init__"})
def check(init: ast.FunctionDef, ctx: Context) -> Iterator[Finding]:
    cls = ctx.parent()
    if not isinstance(cls, ast.ClassDef) or not init.args.args:
        return
    if not ctx.is_module_class(cls) or _overrides_setattr(cls):
        return
    self_name = init.args.args[0].arg
    if _initialises_first(init, self_name):
        return  # the usual `super().__init__()` before anything else: no file index needed
    for node in _local_nodes(init):
        if isinstance(node, ast.Call):
            if _may_init(node, self_name):
                return  # the base initialiser runs here (or may, in a function we do not read)
            what, target = _registration(node, self_name)
            action = "register"
        else:
            what, target = _assigned(node, self_name, ctx)
            action = ""
        if what is not None:
            called = any(
                type(call) is ast.Call and _calls_base_init(call) for call in subtree(init)
            )
            variant = "-".join(part for part in (action, "" if called else "never") if part)
            yield ctx.finding(
                PITFALL,
                node,
                variant,
                target=target,
                what=what,
                what_zh=_WHAT_ZH[what],
                cls=cls.name,
            )
            return


def _local_nodes(init: ast.FunctionDef) -> Iterator[ast.AST]:
    """The calls and assignments of `init`'s own scope (not inside the functions, lambdas and
    classes nested in it), in source order, one at a time: the loop of `check` stops at the
    first that tells, most often one of the first statements (no file index is read)."""
    todo = children(init)
    todo.reverse()
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is ast.Call or kind is ast.Assign or kind is ast.AnnAssign:
            yield node
        elif kind in _NESTED_SCOPES:
            continue
        below = children(node)
        below.reverse()
        todo.extend(below)


_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _initialises_first(init: ast.FunctionDef, self_name: str) -> bool:
    """The first call, assignment or registration the loop of `check` would read (the
    parameters come first, then the body) is one that may run the base initialiser."""
    if any(type(node) is ast.Call for node in subtree(init.args)):
        return False
    for statement in init.body:
        if type(statement) is ast.Expr and type(statement.value) is ast.Constant:
            continue  # a docstring
        call = statement.value if type(statement) is ast.Expr else None
        return type(call) is ast.Call and _may_init(call, self_name)
    return False


def _overrides_setattr(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(statement, ast.FunctionDef) and statement.name in _SETATTR_OVERRIDES
        for statement in cls.body
    )


def _calls_base_init(call: ast.Call) -> bool:
    """`super().__init__(...)`, `super(Net, self).__init__(...)`, `Base.__init__(self, ...)`."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "__init__"


def _may_init(call: ast.Call, self_name: str) -> bool:
    """The base initialiser, `self.build(...)` (not a registration) or `setup(self)`."""
    func = call.func
    if _calls_base_init(call) or any(
        isinstance(arg, ast.Name) and arg.id == self_name for arg in call.args
    ):
        return True
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == self_name
        and func.attr not in REGISTRATIONS
    )


def _registration(call: ast.Call, self_name: str) -> tuple[str | None, str]:
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in REGISTRATIONS
        and isinstance(func.value, ast.Name)
        and func.value.id == self_name
    ):
        return REGISTRATIONS[func.attr], f"{self_name}.{func.attr}(...)"
    return None, ""


def _assigned(
    statement: ast.Assign | ast.AnnAssign, self_name: str, ctx: Context
) -> tuple[str | None, str]:
    """What a `self.x = <module or parameter>` assigns, and the target's text."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    target = next(
        (
            t
            for t in targets
            if isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == self_name
        ),
        None,
    )
    value = statement.value
    if target is None or not isinstance(value, ast.Call):
        return None, ""
    qualname = ctx.call_qualname(value)
    if qualname in PARAMETER_CLASSES:
        what = "parameter"
    elif qualname in BUFFER_CLASSES:
        what = "buffer"
    elif ctx.kind_of(value) is Kind.MODULE:
        what = "module"
    else:
        return None, ""
    return what, ctx.text(target)


PITFALL.error(
    r"cannot assign (?:module|parameters?|buffer) before Module\.__init__\(\) call",
    types=("AttributeError",),
    confidence=0.95,
    cause={
        "en": "An `nn.Module` subclass assigned a submodule, parameter or buffer to `self` in its "
        "`__init__` before "
        "calling `super().__init__()`, which creates the dictionaries modules, parameters and "
        "buffers are kept in.",
        "zh": "某个 `nn.Module` 子类在 `__init__` 中调用 `super().__init__()` 之前就给 `self` 赋值了 "
        "子模块、参数或 buffer；而保存子模块、参数和 buffer 的字典正是由 `super().__init__()` 创建的。",
    },
)
# Attributes only `Module.__init__` creates: missing when it never ran. Not on objects that are
# no module (`None`, a tensor, a container) passed where one was expected.
PITFALL.error(
    r"'(?!NoneType'|Tensor'|dict'|list'|tuple'|str'|OrderedDict')(?P<cls>\w+)' object has no "
    r"attribute '(?P<attr>_(?:modules|parameters|buffers|backward_hooks|backward_pre_hooks|"
    r"forward_hooks|forward_pre_hooks|non_persistent_buffers_set|state_dict_hooks|"
    r"state_dict_pre_hooks|load_state_dict_pre_hooks|load_state_dict_post_hooks|"
    r"is_full_backward_hook|forward_hooks_with_kwargs|forward_hooks_always_called|"
    r"forward_pre_hooks_with_kwargs))'",
    # anywhere: pytest shows it in the repr of `self` when its own line is cut short
    types=(),
    confidence=0.8,
    cause={
        "en": "`{cls}` lacks `{attr}`, an attribute `nn.Module.__init__` creates: the `__init__` "
        "of this `nn.Module` subclass never calls `super().__init__()`.",
        "zh": "`{cls}` 缺少 `{attr}`，这是 `nn.Module.__init__` 创建的属性：这个 `nn.Module` 子类的 "
        "`__init__` 从未调用 `super().__init__()`。",
    },
)
# The flags `LightningDataModule.__init__` creates (Lightning 0.9-1.x), read by the hooks that
# the trainer wraps: missing when a data module's `__init__` skips `super().__init__()`.
PITFALL.error(
    r"'(?P<cls>\w+)' object has no attribute "
    r"'(?P<attr>_has_(?:prepared_data|(?:setup|teardown)_(?:fit|validate|test|predict)))'",
    types=("AttributeError",),
    confidence=0.85,
    cause={
        "en": "`{cls}` lacks `{attr}`, a flag `LightningDataModule.__init__` creates: the "
        "`__init__` of this data module never calls `super().__init__()`.",
        "zh": "`{cls}` 缺少 `{attr}`，这是 `LightningDataModule.__init__` 创建的标志：这个数据模块的 "
        "`__init__` 从未调用 `super().__init__()`。",
    },
    fix={
        "en": "Call `super().__init__()` as the first statement of the data module's `__init__`.",
        "zh": "在数据模块 `__init__` 的第一行调用 `super().__init__()`。",
    },
)
