"""TD411 loop-variable-reassigned: `for x in xs: x = ...` whose new value is never read."""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from typing import Callable, Iterator

from torchdoctor.catalog.sdk import (
    HANDS_BACK_FIRST,
    MODULE_SELF_METHODS,
    Context,
    FileIndex,
    Finding,
    Kind,
    Pitfall,
    assignments,
    attribute_values,
    children,
    index_of,
    is_self_attribute,
    names_a_model,
    nested_statements,
    per_file,
    statements,
)

PITFALL = Pitfall(
    code="TD411",
    name="loop-variable-reassigned",
    needs_torch=False,  # the loop of a NumPy script or helper is the same mistake
    title={
        "en": "Loop variable reassigned and never read again",
        "zh": "循环变量被重新赋值后再也没有被读取",
    },
    messages={
        "": {
            "en": "Assigning to the loop variable `{name}` does not change `{iterable}`, "
            "and the new value is never read",
            "zh": "给循环变量 `{name}` 赋值不会改变 `{iterable}`，而且新值之后再也没有被读取",
        },
        "attributes": {
            "en": "Assigning to the loop variable `{name}` does not change `{iterable}`: "
            "`{name}` now holds a new tensor, whose attributes are set and which is then "
            "dropped, so the items of `{iterable}` keep theirs",
            "zh": "给循环变量 `{name}` 赋值不会改变 `{iterable}`：`{name}` 现在是一个新张量，"
            "给它设置属性之后就被丢弃了，`{iterable}` 中的元素保持原样",
        },
    },
    docs={
        "en": """
## What it catches
An assignment to the variable of a `for` loop inside its body, `for x in xs: x = ...`, when
the new value is never read afterwards: not later in the body, not after the loop, not in a
nested function. Also one that makes a new tensor (`x.detach()`, `x.clone()`) only given
attributes in the loop's body and read nowhere else (MLNT's `for grad in grads: grad =
grad.detach(); grad.requires_grad = False`): the items of the list keep theirs.

The common pattern `for x in xs: x = transform(x); use(x)` reads the new value and is fine.
Augmented assignments (`x += 1`, `p *= 0.5`) are not reported: on tensors and arrays they
modify the element in place.

## Why is this bad?
The loop variable is a plain name bound to each element in turn. Assigning to it rebinds the
name to a new object; the list, tensor or array being iterated keeps its old element. When
the new value is never read, the assignment does nothing at all, and the code that meant to
move every tensor to the GPU, clip every value or normalize every image silently leaves them
as they were.

## Known problems
A new value read only through `locals()` or `eval` is not seen; such files are skipped. Not
reported: `x = helper(x, ...)` where the file's own `helper` returns the very parameter that
receives `x`, or a `helper` of another module of the project returns its first parameter
(neuralprophet's `ax = set_y_as_percent(ax)`): it changed the object in place, so the loop's
items did change; nor `x =
x.cuda()`, `.to(...)`, `.half()`... when `x` is named like a model or the loop runs over modules
(a list of module instances, such lists added or repeated, a `ModuleList`): those methods change
a module itself.
""",
        "zh": """
## What it catches
在 `for` 循环体内给循环变量赋值（`for x in xs: x = ...`），而新值之后再也没有被读取：
循环体后面没有、循环结束后没有、嵌套函数里也没有。新值是新张量（`x.detach()`、`x.clone()`），
在循环体里只被设置属性、别处都不读取时也报告（MLNT 的 `for grad in grads: grad = grad.detach();
grad.requires_grad = False`）：列表中的元素保持原样。

常见写法 `for x in xs: x = transform(x); use(x)` 读取了新值，没有问题。
增强赋值（`x += 1`、`p *= 0.5`）不报告：对张量和数组来说它们会原地修改元素。

## Why is this bad?
循环变量只是一个依次绑定到每个元素上的名字。给它赋值只是让这个名字指向新对象，
被遍历的列表、张量或数组中的元素并没有改变。如果新值之后从未被读取，这次赋值就完全没有作用：
本想把每个张量搬到 GPU、裁剪每个值或归一化每张图片的代码，悄无声息地什么都没改。

## Known problems
只通过 `locals()` 或 `eval` 读取新值的情况无法识别，这样的文件会被跳过。不报告
`x = helper(x, ...)`：本文件中的 `helper` 原样返回接收 `x` 的那个参数，或者项目中其他模块的 `helper`
原样返回它的第一个参数（neuralprophet 的 `ax = set_y_as_percent(ax)`）：它是原地修改对象的，
循环里的元素确实被改变了。当 `x` 的名字表明它是模型，或循环遍历的是模块（模块实例组成的列表、
这样的列表相加或重复、`ModuleList`）时，也不报告 `x = x.cuda()`、`.to(...)`、`.half()` 等：
这些方法会直接修改模块本身。
""",
    },
    example="""
import torch

batch = [torch.randn(3), torch.randn(3)]
for tensor in batch:
    tensor = tensor.cuda()
""",
    use_instead="""
import torch

batch = [torch.randn(3), torch.randn(3)]
batch = [tensor.cuda() for tensor in batch]
""",
)

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
# Blocks the assignment may sit in: they run at most once per iteration of the loop.
_PLAIN_BLOCKS = (ast.If, ast.Try, ast.With, ast.AsyncWith)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DYNAMIC_READS = frozenset({"locals", "globals", "vars", "eval", "exec"})


@PITFALL.static(ast.For, ast.AsyncFor)
def check(loop: ast.For | ast.AsyncFor, ctx: Context) -> Iterator[Finding]:
    names = _target_names(loop.target)
    if not names:
        return
    for assignment, name in _assignments_to(names, loop.body):
        if _converts_a_module_in_place(
            assignment, name, lambda: _holds_modules(loop.iter, ctx, 3)
        ) or _hands_back_its_argument(assignment, name, ctx):
            continue
        if (
            _read_in_loop_after(loop, name, assignment, ctx)
            or _read_later_in(loop, name, assignment, ctx)
            or _read_elsewhere(name, loop, assignment, ctx)
        ):
            if _only_attributes_set(loop, name, assignment, ctx):
                yield ctx.finding(
                    PITFALL, assignment, "attributes", name=name, iterable=ctx.text(loop.iter)
                )
            continue
        yield ctx.finding(PITFALL, assignment, name=name, iterable=ctx.text(loop.iter))


# Methods that always hand back a new tensor (`.to()` and `.cuda()` hand back the tensor itself
# when it is there already).
_NEW_TENSOR_METHODS = frozenset({"detach", "clone"})


def _only_attributes_set(loop: ast.AST, name: str, assignment: ast.Assign, ctx: Context) -> bool:
    """`for grad in grads: grad = grad.detach(); grad.requires_grad = False` (MLNT): the new
    value, a new tensor, is only given attributes in the loop's own body, and the scope reads
    the name nowhere outside the loop (a comprehension's own `grad` is another name)."""
    value = assignment.value
    if not (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in _NEW_TENSOR_METHODS
        and type(value.func.value) is ast.Name
        and value.func.value.id == name
        and assignment in loop.body  # type: ignore[attr-defined]
    ):
        return False
    scope = _scope(ctx)
    shared, dynamic = _scope_facts(ctx, scope)
    if name in shared or dynamic:
        return False
    everywhere = _reads(ctx, scope, name).everywhere  # comprehensions' own names left out
    if bisect_left(everywhere, _start(loop)) > 0 or bisect_right(everywhere, _end(loop)) < len(
        everywhere
    ):
        return False  # read outside the loop: it may see the last new value
    found = index_of(ctx, scope)
    after, set_attributes = _end(assignment), 0
    for node in found.names_in(loop, name):
        if isinstance(node.ctx, ast.Store) or _start(node) <= after:
            continue
        if _bound_by_comprehension(node, name, loop, found):
            continue
        parent = found.parents.get(node)
        statement = found.parents.get(parent)
        if not (
            type(parent) is ast.Attribute
            and type(parent.ctx) is ast.Store
            and type(statement) is ast.Assign
            and statement in loop.body  # type: ignore[attr-defined]
            and found.scopes[found.number[node]] is scope
        ):
            return False
        set_attributes += 1
    return set_attributes > 0


def _bound_by_comprehension(node: ast.AST, name: str, loop: ast.AST, found: FileIndex) -> bool:
    """`node` lies in a comprehension (under `loop`) that binds `name` itself, outside its first
    iterable: it reads the comprehension's own variable."""
    parent = found.parents.get(node)
    while parent is not None and parent is not loop:
        if (
            isinstance(parent, _COMPREHENSIONS)
            and any(name in _target_names(g.target) for g in parent.generators)
            and not _is_within(found, node, parent.generators[0].iter)
        ):
            return True
        parent = found.parents.get(parent)
    return False


def _is_within(found: FileIndex, node: ast.AST, root: ast.AST) -> bool:
    start, end = found.span(root)
    return start <= found.number[node] < end


def _target_names(target: ast.AST) -> set[str]:
    """The names the loop binds, but `_`: rebinding the throwaway name (`for _ in range(n):
    _ = f()`) is how a value is discarded on purpose."""
    if isinstance(target, ast.Name):
        names = {target.id}
    elif isinstance(target, (ast.Tuple, ast.List)):
        names = {element.id for element in target.elts if isinstance(element, ast.Name)}
    else:
        return set()
    return names - {"_"}


def _converts_a_module_in_place(
    assignment: ast.Assign, name: str, iterates_modules: Callable[[], bool]
) -> bool:
    """`model = model.half()` where the name says it holds a module, or the loop runs over
    modules (`for loss in losses:` with `losses = [StyleLoss()] * n + [nn.MSELoss()]`):
    `Module.half()`, `.to()`, `.cuda()`, `.eval()`... change the module itself and return it,
    so nothing is lost."""
    value = assignment.value
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_SELF_METHODS
        and isinstance(value.func.value, ast.Name)
        and value.func.value.id == name
        and (names_a_model(name) or iterates_modules())
    )


def _holds_modules(iterable: ast.expr, ctx: Context, depth: int) -> bool:
    """Whether every item of `iterable` is a module: a module itself (an `nn.ModuleList`), a
    list or tuple of modules, such lists added or repeated (`[Loss()] * n`), a comprehension
    making modules, or a name (every assignment of the file) or a `self.` attribute (every
    assignment of its class) given such values (`depth` such names are followed)."""
    kind = type(iterable)
    if kind in (ast.List, ast.Tuple):
        elements = iterable.elts  # type: ignore[attr-defined]
        return bool(elements) and all(ctx.kind_of(e) is Kind.MODULE for e in elements)
    if kind is ast.ListComp:
        return ctx.kind_of(iterable.elt) is Kind.MODULE  # type: ignore[attr-defined]
    if kind is ast.BinOp:
        left, op, right = iterable.left, iterable.op, iterable.right  # type: ignore[attr-defined]
        if type(op) is ast.Mult:
            return _holds_modules(left, ctx, depth) or _holds_modules(right, ctx, depth)
        return (
            type(op) is ast.Add
            and _holds_modules(left, ctx, depth)
            and _holds_modules(right, ctx, depth)
        )
    if kind is ast.Name and depth > 0:
        values = _values_of(ctx).get(iterable.id)  # type: ignore[attr-defined]
        if values and all(_holds_modules(value, ctx, depth - 1) for value in values):
            return True
    cls = ctx.enclosing_class() if depth > 0 and is_self_attribute(iterable) else None
    if cls is not None:  # `self.convs = [nn.Conv2d(...) for k in ks]` in `__init__`
        values = attribute_values(ctx, cls, iterable.attr)  # type: ignore[attr-defined]
        if values and all(_holds_modules(value, ctx, depth - 1) for value in values):
            return True
    return ctx.kind_of(iterable) is Kind.MODULE


def _hands_back_its_argument(assignment: ast.Assign, name: str, ctx: Context) -> bool:
    """`pg = set_item_pg(pg, k, v)` where the file's `set_item_pg` returns the parameter that
    receives `pg` (or, of another module of the project, returns its first parameter, which
    receives `pg`): it changed the object itself (it could not have made another one to hand
    back), so the loop's items did change; the assignment is only redundant."""
    value = assignment.value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return False
    given = [
        position
        for position, arg in enumerate(value.args)
        if isinstance(arg, ast.Name) and arg.id == name
    ]
    if not given:
        return False
    function = value.func.id
    if function not in _defined_functions(ctx):
        # A function of another module of the project that hands back its first parameter
        # (neuralprophet's `ax = set_y_as_percent(ax)`, from its plot_utils).
        return (
            0 in given
            and ctx.project.has(HANDS_BACK_FIRST + function)
            and ctx.from_project(function, ctx.qualname(value.func))
        )
    returned = _returned_parameters(ctx).get(function, ())
    return any(position in returned for position in given)


@per_file
def _values_of(ctx: Context) -> dict[str, list[ast.expr]]:
    """The values every plain assignment of the file gives each name."""
    found: dict[str, list[ast.expr]] = {}
    for value, names in assignments(ctx):
        for name in names:
            found.setdefault(name, []).append(value)
    return found


@per_file
def _defined_functions(ctx: Context) -> frozenset[str]:
    """The names of the file's functions, found from the statements alone."""
    found = statements(ctx, ast.FunctionDef, ast.AsyncFunctionDef)
    return frozenset(function.name for function in found)


@per_file
def _returned_parameters(ctx: Context) -> dict[str, set[int]]:
    """For each function of the file (by name; a name defined twice is left out): the
    positions of the parameters that a `return <parameter>` of its own hands back."""
    found: dict[str, set[int]] = {}
    defined_twice: set[str] = set()
    # From the statements alone (no file index): functions and `return`s are statements.
    for function in statements(ctx, ast.FunctionDef, ast.AsyncFunctionDef):
        if function.name in found:
            defined_twice.add(function.name)
        positions = {arg.arg: at for at, arg in enumerate(function.args.args)}
        found[function.name] = {
            positions[node.value.id]
            for node in nested_statements(function.body)
            if type(node) is ast.Return
            and isinstance(node.value, ast.Name)
            and node.value.id in positions
        }
    for name in defined_twice:
        del found[name]
    return found


def _assignments_to(names: set[str], body: list[ast.stmt]) -> Iterator[tuple[ast.Assign, str]]:
    """Plain `name = ...` statements of the loop body, not inside nested loops or scopes."""
    todo = list(body)
    while todo:
        statement = todo.pop()
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name) and target.id in names:
                    yield statement, target.id
        elif isinstance(statement, _PLAIN_BLOCKS):
            for block in (
                statement.body,
                getattr(statement, "orelse", ()),
                getattr(statement, "finalbody", ()),
                getattr(statement, "handlers", ()),
            ):
                todo.extend(block)
        elif isinstance(statement, ast.ExceptHandler):
            todo.extend(statement.body)


def _read_later_in(loop: ast.AST, name: str, assignment: ast.Assign, ctx: Context) -> bool:
    reads = _reads(ctx, _scope(ctx), name).everywhere
    return bisect_right(reads, _end(assignment)) < bisect_right(reads, _end(loop))


def _read_in_loop_after(loop: ast.AST, name: str, assignment: ast.Assign, ctx: Context) -> bool:
    """A read of `name` in the loop after the assignment, seen without the file's index: one
    of the reads `_read_later_in` counts, so True here means True there; False means only that
    the index must be asked."""
    last = _last_read_in(ctx, loop, name)
    return last is not None and last > _end(assignment)


@per_file
def _last_read_in(ctx: Context, loop: ast.AST, name: str) -> tuple[int, int] | None:
    """Where the last read of `name` under the loop (up to its end) starts: a `Name` node the
    index would hold, not stored to, outside any comprehension that binds `name` (but for its
    first iterable); None when there is none."""
    end, last = _end(loop), None
    todo = [loop]
    while todo:
        node = todo.pop()
        if type(node) is ast.Name:
            if node.id == name and type(node.ctx) is not ast.Store:
                start = _start(node)
                if start <= end and (last is None or start > last):
                    last = start
            continue
        if isinstance(node, _COMPREHENSIONS) and any(
            name in _target_names(generator.target) for generator in node.generators
        ):
            todo.append(node.generators[0].iter)  # the rest sees the comprehension's own name
            continue
        todo.extend(children(node))
    return last


def _read_elsewhere(name: str, loop: ast.AST, assignment: ast.Assign, ctx: Context) -> bool:
    """A read after the loop, in an enclosing loop, in a nested scope, or one the doctor
    cannot see: the value may be used there."""
    function = ctx.enclosing_function()
    scope = _scope(ctx)
    shared, dynamic = _scope_facts(ctx, scope)
    if name in shared or dynamic:
        return True
    reads = _reads(ctx, scope, name)
    # The outermost loop around ours in the same scope runs our loop again after any read.
    enclosing = (
        ctx.ancestors[ctx.ancestors.index(scope) + 1 :] if function is not None else ctx.ancestors
    )
    outer_loop = next(
        (node for node in enclosing if isinstance(node, _LOOPS) and node is not loop), None
    )
    everywhere = reads.everywhere
    if outer_loop is not None and (
        bisect_left(everywhere, _start(outer_loop)) < bisect_right(everywhere, _end(outer_loop))
    ):
        return True
    if reads.in_nested_scope:
        return True
    return bool(everywhere) and everywhere[-1] > _end(assignment)


def _scope(ctx: Context) -> ast.AST:
    return ctx.enclosing_function() or ctx.tree


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset


@per_file
def _scope_facts(ctx: Context, scope: ast.AST) -> tuple[set[str], bool]:
    """The names declared global or nonlocal anywhere in the scope, and whether the scope itself
    reads its variables dynamically (`locals()`, `eval(...)`...)."""
    found = index_of(ctx, scope)
    shared = {name for node in found.under(scope, ast.Global, ast.Nonlocal) for name in node.names}
    dynamic = any(
        type(node.func) is ast.Name and node.func.id in _DYNAMIC_READS
        for node in found.local(scope, ast.Call)
    )
    return shared, dynamic


class _Reads:
    """Where a scope reads one name (a `Name` node not stored to), in source order.

    A comprehension that binds the same name hides the reads in it, but for its first
    iterable. (Such a comprehension always lies inside any loop around the read, so the reads
    of a loop are those of the scope within it.)"""

    def __init__(self, scope: ast.AST, name: str, found: FileIndex, hiders: list[ast.AST]) -> None:
        # Where the comprehensions hide the name (all of each but its first iterable), as
        # ranges of node numbers: nested or apart, so one sweep finds those around a read.
        hidden = []
        for comprehension in hiders:
            start, end = found.span(comprehension)
            iterable_start, iterable_end = found.span(comprehension.generators[0].iter)
            hidden += [(start, iterable_start, comprehension), (iterable_end, end, comprehension)]
        hidden.sort(key=lambda part: (part[0], -part[1]))
        everywhere = []
        self.in_nested_scope = False  # read in a nested function, class or lambda
        around: list[
            tuple[int, int, ast.AST]
        ] = []  # the hiding ranges around the read, inmost last
        next_part = 0
        for node in found.names_in(scope, name):
            at = found.number[node]
            while around and around[-1][1] <= at:
                around.pop()
            while next_part < len(hidden) and hidden[next_part][0] <= at:
                part = hidden[next_part]
                next_part += 1
                while around and around[-1][1] <= part[0]:
                    around.pop()
                if part[1] > at:
                    around.append(part)
            if isinstance(node.ctx, ast.Store):
                continue
            if not around:
                everywhere.append(_start(node))
            owner = found.scopes[at]
            # Seen from the innermost nested scope around it, the comprehensions outside that
            # scope hide nothing.
            if owner is not scope and not (
                around and found.number[around[-1][2]] > found.number[owner]
            ):
                self.in_nested_scope = True
        self.everywhere = sorted(everywhere)


@per_file
def _reads(ctx: Context, scope: ast.AST, name: str) -> _Reads:
    return _Reads(scope, name, index_of(ctx, scope), _hiders(ctx, scope).get(name, []))


@per_file
def _hiders(ctx: Context, scope: ast.AST) -> dict[str, list[ast.AST]]:
    """The comprehensions under the scope, by each name they bind."""
    found: dict[str, list[ast.AST]] = {}
    for node in index_of(ctx, scope).under(scope, *_COMPREHENSIONS):
        for name in {
            name for generator in node.generators for name in _target_names(generator.target)
        }:
            found.setdefault(name, []).append(node)
    return found
