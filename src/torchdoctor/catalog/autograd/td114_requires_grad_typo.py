"""TD114 requires-grad-typo: `p.require_grad = False` sets a new attribute and freezes nothing."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog.sdk import Context, Finding, Kind, Pitfall, index, per_file

PITFALL = Pitfall(
    code="TD114",
    name="requires-grad-typo",
    title={
        "en": "Misspelled `requires_grad` assigned: the flag is unchanged",
        "zh": "赋值给拼错的 `requires_grad`：标志并未改变",
    },
    messages={
        "": {
            "en": "`{target}` is not `requires_grad`: the assignment creates a new Python "
            "attribute and the tensor's `requires_grad` stays as it was",
            "zh": "`{target}` 不是 `requires_grad`：这次赋值只是新建了一个 Python 属性，张量的 "
            "`requires_grad` 保持不变",
        },
        "module": {
            "en": "`{target}` sets a plain attribute of the module and changes none of its "
            "parameters: use `{receiver}.requires_grad_({value})`",
            "zh": "`{target}` 只是给模块设置了一个普通属性，不会改变它的任何参数：请使用 "
            "`{receiver}.requires_grad_({value})`",
        },
    },
    fix_title={"en": "Rename to `requires_grad`", "zh": "改名为 `requires_grad`"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
An assignment to a close misspelling of `requires_grad` (`require_grad`, `requires_grads`,
`requires_gradient`, `requries_grad`...: at most two letters off): `p.require_grad = False`.
An assignment of `requires_grad` (or a misspelling) to a module (`model.requires_grad =
False`) is reported too.

## Why is this bad?
Tensors and modules accept any new attribute. `p.require_grad = False` does not freeze `p`: it
sets a Python attribute nobody reads, and `p.requires_grad` stays `True`. The layers meant to be
frozen keep training (and using optimizer memory), and nothing says so. A module has no
`requires_grad` flag at all: `model.requires_grad = False` changes none of its parameters;
`model.requires_grad_(False)` does.

## Fix safety
The fix renames the attribute to `requires_grad` where the receiver is a tensor or parameter (a
loop over `.parameters()`, a tensor factory, `nn.Parameter`, a `.weight` or `.bias`). It is
unsafe (`--unsafe-fixes`): the assignment had no effect at all and the name says what was meant,
but the fix changes what trains, which is the point, so it should be looked at.

## Known problems
A private name (`encoder._requires_grad = False`, a marker next to a real freeze) is not
reported. An attribute the file reads back (`if self.require_grad:`) is a flag of the
program's own and is not reported, nor is one assigned on `self`. Without a known tensor or
parameter receiver the finding comes without a fix.
""",
        "zh": """
## What it catches
给 `requires_grad` 的相近拼写（`require_grad`、`requires_grads`、`requires_gradient`、
`requries_grad` 等，最多差两个字母）赋值：`p.require_grad = False`。给模块赋值 `requires_grad`
（或其拼错形式，`model.requires_grad = False`）也会报告。

## Why is this bad?
张量和模块都接受任意新属性。`p.require_grad = False` 不会冻结 `p`：它只是设置了一个没人读取的
Python 属性，`p.requires_grad` 仍然是 `True`。本应冻结的层继续训练（还占用优化器内存），而且没有任何提示。
模块根本没有 `requires_grad` 标志：`model.requires_grad = False` 不会改变任何参数；
`model.requires_grad_(False)` 才会。

## Fix safety
当接收者是张量或参数时（遍历 `.parameters()` 的循环变量、张量工厂函数、`nn.Parameter`、
`.weight` 或 `.bias`），修复会把属性改名为 `requires_grad`。它被标记为不安全（需 `--unsafe-fixes`）：
原来的赋值完全没有效果，名字也说明了本意，但它会改变哪些参数参与训练（这正是修复的目的），应当人工确认。

## Known problems
私有名字（`encoder._requires_grad = False`，与真正的冻结代码放在一起的标记）不报告。
文件中会被读取的属性（`if self.require_grad:`）是程序自己的标志，不报告；赋值在 `self` 上的也不报告。
接收者不是已知的张量或参数时，只报告而不提供修复。
""",
    },
    example="""
import torchvision

model = torchvision.models.resnet18()
for p in model.parameters():
    p.require_grad = False
""",
    use_instead="""
import torchvision

model = torchvision.models.resnet18()
for p in model.parameters():
    p.requires_grad = False
""",
)

RIGHT = "requires_grad"
# Misspellings more than two edits away.
LONGER_MISSPELLINGS = frozenset(
    {"requires_gradient", "requires_gradients", "require_gradient", "require_gradients"}
)
# Methods whose results are a module's parameters (one by one, or with their names).
PARAMETER_ITERATORS = frozenset({"parameters", "named_parameters"})
# Attributes of a module that hold its parameters.
PARAMETER_ATTRIBUTES = frozenset({"weight", "bias"})
# Receivers that hold the program's own state, not tensors.
_OWN_STATE = frozenset({"self", "cls"})


@PITFALL.static(ast.Assign)
def check(node: ast.Assign, ctx: Context) -> Iterator[Finding]:
    for target in node.targets:
        if type(target) is not ast.Attribute or not _near_miss(target.attr):
            continue
        receiver = target.value
        if isinstance(receiver, ast.Name) and receiver.id in _OWN_STATE:
            continue
        kind = ctx.kind_of(receiver)
        if kind is Kind.MODULE and not _module_flag(ctx, target.attr):
            yield ctx.finding(
                PITFALL,
                target,
                "module",
                target=ctx.text(target),
                receiver=ctx.text(receiver),
                value=ctx.text(node.value),
            )
            continue
        if target.attr == RIGHT or kind not in (Kind.TENSOR, Kind.UNKNOWN):
            continue
        if target.attr in _read_attributes(ctx):
            continue  # a flag of the program's own, read back somewhere
        fix = None
        if kind is Kind.TENSOR or _a_parameter(receiver, ctx):
            end = ctx.span(target)[1]
            fix = ctx.fix(PITFALL, "unsafe", ctx.edit(end - len(target.attr), end, RIGHT))
        yield ctx.finding(PITFALL, target, fix=fix, target=ctx.text(target))


def _near_miss(attr: str) -> bool:
    """Within two edits of `requires_grad` (itself included: it is right on tensors only) and
    still saying "grad", or one of the longer spellings people write."""
    if attr in LONGER_MISSPELLINGS:
        return True
    if attr.startswith("_"):
        return False  # a private marker set on purpose (`encoder._requires_grad = False`)
    if abs(len(attr) - len(RIGHT)) > 2 or not ("grad" in attr or "gard" in attr):
        return False
    return _distance(attr, RIGHT) <= 2


def _distance(a: str, b: str) -> int:
    """Levenshtein distance of two short strings."""
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other))
            )
        previous = current
    return previous[-1]


def _a_parameter(receiver: ast.AST, ctx: Context) -> bool:
    """`p` of `for p in model.parameters()` (or `for name, p in ....named_parameters()`), or
    `layer.weight`/`layer.bias`."""
    if isinstance(receiver, ast.Attribute):
        return receiver.attr in PARAMETER_ATTRIBUTES
    if not isinstance(receiver, ast.Name):
        return False
    for ancestor in reversed(ctx.ancestors):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(ancestor, ast.For) and _binds_parameter(ancestor, receiver.id):
            return True
    return False


def _binds_parameter(loop: ast.For, name: str) -> bool:
    iterable = loop.iter
    if not (
        isinstance(iterable, ast.Call)
        and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in PARAMETER_ITERATORS
    ):
        return False
    target = loop.target
    if iterable.func.attr == "named_parameters":
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return False
        target = target.elts[1]
    return isinstance(target, ast.Name) and target.id == name


@per_file
def _module_flag(ctx: Context, attr: str) -> bool:
    """The file's own classes may give modules this attribute: they set `self.<attr>`, define a
    method or property of that name, or the file reads it back (a misspelling only: tensors'
    `requires_grad` is read everywhere)."""
    found = index(ctx)
    for at in found.attributes.get(attr, ()):
        node = found.nodes[at]
        if type(node.ctx) is ast.Store and isinstance(node.value, ast.Name):
            if node.value.id in _OWN_STATE:
                return True
    if any(node.name == attr for node in found.everywhere(ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    return attr != RIGHT and attr in _read_attributes(ctx)


@per_file
def _read_attributes(ctx: Context) -> frozenset[str]:
    """The near misses of `requires_grad` the file reads (`x.require_grad` loaded)."""
    found = index(ctx)
    return frozenset(
        name
        for name, numbers in found.attributes.items()
        if name != RIGHT
        and _near_miss(name)
        and any(type(found.nodes[at].ctx) is ast.Load for at in numbers)
    )
