"""TD708 stale-object-after-reload: an object made before its module was reloaded in a notebook."""

from __future__ import annotations

import re

from torchdoctor.catalog.sdk import Clue, ErrorBlock, ErrorReport, Pitfall, lazy_compile

PITFALL = Pitfall(
    code="TD708",
    name="stale-object-after-reload",
    title={
        "en": "An object made before its class was reloaded (Jupyter, `importlib.reload`)",
        "zh": "对象创建于其类被重新加载之前（Jupyter、`importlib.reload`）",
    },
    messages={
        "": {
            "en": "the object was made from the class as it was before the module was reloaded "
            "or the cell re-run: make it again from the new class",
            "zh": "这个对象是用模块重新加载（或单元格重新运行）之前的类创建的：请用新的类重新创建它",
        }
    },
    fix_hint={
        "en": "Create the object again after the reload (re-run the cell that builds the "
        "model), or restart the kernel. With `%autoreload`, prefer `super().__init__()` "
        "to `super(Net, self).__init__()`: the zero-argument form uses the class the method "
        "was defined in, not the name's current value.",
        "zh": "重新加载之后重新创建对象（重新运行构建模型的单元格），或者重启内核。使用 `%autoreload` 时，"
        "请用 `super().__init__()` 代替 `super(Net, self).__init__()`：无参数形式使用定义该方法的类，"
        "而不是这个名字当前指向的类。",
    },
    docs={
        "en": """
## What it catches
The errors Python raises when an object made before its module was reloaded
(`importlib.reload(model)`, IPython's `%autoreload`, a notebook cell defining the class run
again) meets the new class: `super(Net, self)` inside one of its methods, `isinstance`
checks, pickling it with `torch.save(model)`.

## Why is this bad?
Reloading creates a new class object under the old name; objects made before keep the old
one. `super(Net, self)` looks up the name `Net` when the method runs, finds the new class,
and refuses the old instance. The code looks right, and runs again after a kernel restart,
so the error seems to come and go.

## Symptoms
`TypeError: super(type, obj): obj must be an instance or subtype of type`;
`_pickle.PicklingError: Can't pickle <class 'model.Net'>: it's not the same object as
model.Net`.

## Known problems
`super(Other, self)` naming a class that is not a base of the object's class (a method copied
from another class) raises the same `TypeError` without any reload.
""",
        "zh": """
## What it catches
模块被重新加载（`importlib.reload(model)`、IPython 的 `%autoreload`、重新运行定义该类的 notebook 单元格）
之前创建的对象遇到新类时，Python 抛出的错误：其方法中的 `super(Net, self)`、`isinstance` 检查、
用 `torch.save(model)` 序列化它。

## Why is this bad?
重新加载会以原来的名字创建一个新的类对象，而之前创建的对象仍然属于旧类。`super(Net, self)` 在方法运行时
才查找名字 `Net`，找到的是新类，于是拒绝旧的实例。代码看起来没有问题，重启内核后又能运行，
所以这个错误看起来时有时无。

## Symptoms
`TypeError: super(type, obj): obj must be an instance or subtype of type`；
`_pickle.PicklingError: Can't pickle <class 'model.Net'>: it's not the same object as
model.Net`。

## Known problems
`super(Other, self)` 中的类并不是对象所属类的基类（从别的类复制过来的方法）时，即使没有重新加载，
也会抛出同样的 `TypeError`。
""",
    },
    example="""
import importlib

import model

net = model.Net()
importlib.reload(model)
net.reset_parameters()
""",
    use_instead="""
import importlib

import model

importlib.reload(model)
net = model.Net()
net.reset_parameters()
""",
)

_SUPER = "super(type, obj): obj must be an instance or subtype of type"
# What a notebook or IPython leaves in a traceback: the reloads this error comes from.
_NOTEBOOK = re.compile(
    r"ipython-input-|/ipykernel_\d+/|Cell In\[\d+\]|IPython|autoreload|importlib\.reload"
)

_REBOUND_CLASS = {
    "en": "The object is an instance of the class as it was before its module was reloaded "
    "(or its cell re-run); `super(Net, self)` looks up the new class by name and refuses it.",
    "zh": "该对象是模块重新加载（或单元格重新运行）之前那个类的实例；`super(Net, self)` 按名字找到的是"
    "新类，于是拒绝了它。",
}

_REBOUND_OR_WRONG_CLASS = {
    "en": "`super(Cls, self)` got an object that is not an instance of `Cls`: either the "
    "object was made before its class's module was reloaded (or its cell re-run), or the "
    "class named in `super()` is not the one being defined (renamed or copied from another "
    "class).",
    "zh": "`super(Cls, self)` 收到的对象不是 `Cls` 的实例：要么对象是在其类所在模块重新加载（或单元格重新运行）"
    "之前创建的，要么 `super()` 中写的类并不是正在定义的这个类（改过名或从别的类复制而来）。",
}
_REBOUND_OR_WRONG_CLASS_FIX = {
    "en": "In a notebook, create the object again after the reload (or restart the kernel); "
    "otherwise make `super()` name the class it is written in: `super().__init__()` with no "
    "arguments always does.",
    "zh": "在 notebook 中，重新加载后重新创建该对象（或重启内核）；否则让 `super()` 写上它所在的类："
    "不带参数的 `super().__init__()` 总是如此。",
}


@PITFALL.error_check(types=("TypeError",), words=("obj must be an instance or subtype of type",))
def instance_of_old_class(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Surely a reload in a notebook or IPython; elsewhere maybe `super()` of a wrong class."""
    if _SUPER not in block.message:
        return None
    if report.search(_NOTEBOOK):
        return Clue(0.9, _REBOUND_CLASS)
    return Clue(0.6, _REBOUND_OR_WRONG_CLASS, _REBOUND_OR_WRONG_CLASS_FIX)


# An issue that ties failing `isinstance` checks to reloading ("the isinstance assertion fails
# with `%autoreload 2`"), with no other error shown.
_ISINSTANCE = lazy_compile(r"\bisinstance\b")
_RELOADING = lazy_compile(
    r"%autoreload\b|\bauto-?reload(?:ing|ed)?\b|\bimportlib\.reload\b"
    r"|\b(?:module|class) reloads?\b|\breload(?:s|ed|ing)? (?:of )?(?:the |a )?(?:module|class)"
)
_FAILS = lazy_compile(r"\b(?:fail(?:s|ed|ing)?|assert(?:ion)?s?|False)\b")
_ISINSTANCE_AFTER_RELOAD = {
    "en": "The text ties failing `isinstance` checks to reloading modules (`%autoreload`, "
    "`importlib.reload`): a reload makes a new class object under the same name, and objects "
    "made before it are instances of the old one, so `isinstance(obj, Cls)` with the new "
    "`Cls` is False.",
    "zh": "文本把 `isinstance` 检查失败与重新加载模块（`%autoreload`、`importlib.reload`）联系在一起："
    "重新加载会以同一个名字创建新的类对象，而此前创建的对象是旧类的实例，于是对新的 `Cls` 做 "
    "`isinstance(obj, Cls)` 得到 False。",
}
_ISINSTANCE_AFTER_RELOAD_FIX = {
    "en": "Create the objects again after the reload (or restart the kernel), or leave the "
    "module that defines the class out of `%autoreload` (`%aimport -module`).",
    "zh": "重新加载之后重新创建这些对象（或重启内核），或者把定义该类的模块排除在 `%autoreload` 之外"
    "（`%aimport -module`）。",
}


def _other_errors(report: ErrorReport) -> bool:
    """An exception other than an assertion: it is the story (asked once per input)."""
    return any(b.short_type != "AssertionError" for b in report.exceptions)


@PITFALL.error_check(types=(), words=("isinstance",))
def isinstance_after_reload(block: ErrorBlock, report: ErrorReport) -> Clue | None:
    """Prose, perhaps with the assertion it fails: no other error is the story."""
    if report.once(_other_errors):
        return None
    if not (report.search(_ISINSTANCE) and report.search(_RELOADING) and report.search(_FAILS)):
        return None
    return Clue(0.7, _ISINSTANCE_AFTER_RELOAD, _ISINSTANCE_AFTER_RELOAD_FIX)


PITFALL.error(
    r"Can't pickle <class '(?P<cls>[\w.]+)'>:\s+it's not the same object as (?P=cls)",
    types=("PicklingError",),
    confidence=0.85,
    cause={
        "en": "`{cls}` was redefined or its module reloaded after the object was made: pickling "
        "finds a different class under that name.",
        "zh": "对象创建之后，`{cls}` 被重新定义或其模块被重新加载：序列化时按这个名字找到的是另一个类。",
    },
)
