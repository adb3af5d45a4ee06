"""TD411 loop-variable-reassigned: `for x in xs: x = ...` whose new value is never read."""
from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.context import Context
from torchdoctor.report.finding import Finding

PITFALL = Pitfall(
    code="TD411",
    name="loop-variable-reassigned",
    title={"en": "Loop variable reassigned and never read again",
           "zh": "循环变量被重新赋值后再也没有被读取"},
    messages={"": {
        "en": "Assigning to the loop variable `{name}` does not change `{iterable}`, and the new value is never read",
        "zh": "给循环变量 `{name}` 赋值不会改变 `{iterable}`，而且新值之后再也没有被读取",
    }},
    docs={
        "en": """
## What it catches
An assignment to the variable of a `for` loop inside its body, `for x in xs: x = ...`, when
the new value is never read afterwards: not later in the body, not after the loop, not in a
nested function.

The common pattern `for x in xs: x = transform(x); use(x)` reads the new value and is fine.
Augmented assignments (`x += 1`, `p *= 0.5`) are not reported: on tensors and arrays they
modify the element in place.

## Why is this bad?
The loop variable is a plain name bound to each element in turn. Assigning to it rebinds the
name to a new object; the list, tensor or array being iterated keeps its old element. When
the new value is never read, the assignment does nothing at all, and the code that meant to
move every tensor to the GPU, clip every value or normalize every image silently leaves them
as they were.

## Example
```python
import torch

batch = [torch.randn(3), torch.randn(3)]
for tensor in batch:
    tensor = tensor.cuda()
```

## Use instead:
```python
import torch

batch = [torch.randn(3), torch.randn(3)]
batch = [tensor.cuda() for tensor in batch]
```

## Known problems
A new value read only through `locals()` or `eval` is not seen; such files are skipped.
""",
        "zh": """
## What it catches
在 `for` 循环体内给循环变量赋值（`for x in xs: x = ...`），而新值之后再也没有被读取：
循环体后面没有、循环结束后没有、嵌套函数里也没有。

常见写法 `for x in xs: x = transform(x); use(x)` 读取了新值，没有问题。
增强赋值（`x += 1`、`p *= 0.5`）不报告：对张量和数组来说它们会原地修改元素。

## Why is this bad?
循环变量只是一个依次绑定到每个元素上的名字。给它赋值只是让这个名字指向新对象，
被遍历的列表、张量或数组中的元素并没有改变。如果新值之后从未被读取，这次赋值就完全没有作用：
本想把每个张量搬到 GPU、裁剪每个值或归一化每张图片的代码，悄无声息地什么都没改。

## Example
```python
import torch

batch = [torch.randn(3), torch.randn(3)]
for tensor in batch:
    tensor = tensor.cuda()
```

## Use instead:
```python
import torch

batch = [torch.randn(3), torch.randn(3)]
batch = [tensor.cuda() for tensor in batch]
```

## Known problems
只通过 `locals()` 或 `eval` 读取新值的情况无法识别，这样的文件会被跳过。
""",
    },
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
        if _read_later_in(loop, name, assignment) or _read_elsewhere(name, loop, assignment, ctx):
            continue
        yield ctx.finding(PITFALL, assignment, name=name, iterable=ctx.text(loop.iter))


def _target_names(target: ast.AST) -> set[str]:
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return {element.id for element in target.elts if isinstance(element, ast.Name)}
    return set()


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
            for block in (statement.body, getattr(statement, "orelse", ()),
                          getattr(statement, "finalbody", ()), getattr(statement, "handlers", ())):
                todo.extend(block)
        elif isinstance(statement, ast.ExceptHandler):
            todo.extend(statement.body)


def _after(node: ast.AST, statement: ast.stmt) -> bool:
    return (node.lineno, node.col_offset) > (statement.end_lineno, statement.end_col_offset)


def _uses(root: ast.AST, name: str) -> Iterator[ast.Name]:
    """Reads (and deletions) of `name` under `root`; a comprehension that binds its own `name`
    reads ours only in its first iterable."""
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            if node.id == name and not isinstance(node.ctx, ast.Store):
                yield node
        elif isinstance(node, _COMPREHENSIONS) and _binds(node, name):
            todo.append(node.generators[0].iter)
        else:
            todo.extend(ast.iter_child_nodes(node))


def _binds(comprehension: ast.AST, name: str) -> bool:
    return any(name in _target_names(generator.target) for generator in comprehension.generators)


def _read_later_in(loop: ast.AST, name: str, assignment: ast.Assign) -> bool:
    return any(_after(use, assignment) for use in _uses(loop, name))


def _read_elsewhere(name: str, loop: ast.AST, assignment: ast.Assign, ctx: Context) -> bool:
    """A read after the loop, in an enclosing loop, in a nested scope, or one the doctor
    cannot see: the value may be used there."""
    function = ctx.enclosing_function()
    scope = function if function is not None else ctx.tree
    if _declared_shared(name, scope) or _reads_dynamically(scope):
        return True
    # The outermost loop around ours in the same scope runs our loop again after any read.
    enclosing = ctx.ancestors[ctx.ancestors.index(scope) + 1:] if function is not None else ctx.ancestors
    outer_loop = next((node for node in enclosing if isinstance(node, _LOOPS) and node is not loop), None)
    if outer_loop is not None and _is_used(outer_loop, name):
        return True
    if any(isinstance(node, _SCOPES) and node is not scope and _is_used(node, name)
           for node in ast.walk(scope)):
        return True
    return any(_after(use, assignment) for use in _uses(scope, name))


def _is_used(root: ast.AST, name: str) -> bool:
    return next(_uses(root, name), None) is not None


def _declared_shared(name: str, scope: ast.AST) -> bool:
    return any(isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
               for node in ast.walk(scope))


def _reads_dynamically(scope: ast.AST) -> bool:
    """`locals()`, `eval(...)`... in the scope itself (nested scopes have their own locals)."""
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _DYNAMIC_READS:
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False
