"""On-demand binding lookup: every place a name is bound in a scope ("what was it assigned?")."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from torchdoctor.lint.context import Context, per_file

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class Binding:
    """One place that binds a name: `node` is its statement (or the binding node itself)."""

    node: ast.AST
    # The assigned value of `name = value`, `name: T = value` and `name += value`;
    # None for bindings that cannot be followed (parameters, loop targets, unpacking...).
    value: ast.expr | None
    augmented: bool = False


def scope_of(name: str, ctx: Context) -> ast.AST:
    """The function (or module) where `name`, read at the node being visited, is bound."""
    for node in reversed(ctx.ancestors):
        if isinstance(node, _FUNCTIONS) and bindings(ctx, node, name):
            return node
    return ctx.tree


@per_file
def bindings(ctx: Context, scope: ast.AST, name: str) -> tuple[Binding, ...] | None:
    """Every binding of `name` local to `scope`, in source order; None when the scope declares
    it `global` or `nonlocal` (its bindings live elsewhere)."""
    found: list[Binding] = []
    handled: set[int] = set()
    if isinstance(scope, _FUNCTIONS):
        args = scope.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None and arg.arg == name:
                found.append(Binding(arg, None))
    todo = list(scope.body) if isinstance(scope.body, list) else [scope.body]
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind in (ast.Global, ast.Nonlocal) and name in node.names:
            return None
        if isinstance(node, _NESTED_SCOPES):
            if getattr(node, "name", None) == name:
                found.append(Binding(node, None))
            todo.extend(_outer_parts(node))
            continue
        if kind is ast.Name:
            if node.id == name and type(node.ctx) is not ast.Load and id(node) not in handled:
                found.append(Binding(node, None))
            continue
        binding = _plain_binding(node, name, handled)
        if binding is not None:
            found.append(binding)
        elif kind in (ast.Import, ast.ImportFrom):
            if any((a.asname or a.name.partition(".")[0]) == name for a in node.names):
                found.append(Binding(node, None))
        elif kind in (ast.ExceptHandler, ast.MatchAs, ast.MatchStar) and node.name == name:
            found.append(Binding(node, None))
        todo.extend(ast.iter_child_nodes(node))
    found.sort(key=lambda b: (b.node.lineno, b.node.col_offset))
    return tuple(found)


def _plain_binding(node: ast.AST, name: str, handled: set[int]) -> Binding | None:
    """`name = v`, `name: T = v`, `name += v`; marks the target so it is not counted again."""
    kind = type(node)
    if kind is ast.Assign:
        targets = [t for t in node.targets if type(t) is ast.Name and t.id == name]
        handled.update(id(t) for t in targets)
        return Binding(node, node.value) if targets else None
    if kind in (ast.AnnAssign, ast.AugAssign):
        target = node.target
        if type(target) is ast.Name and target.id == name and node.value is not None:
            handled.add(id(target))
            return Binding(node, node.value, augmented=kind is ast.AugAssign)
    return None


def _outer_parts(scope: ast.AST) -> list[ast.AST]:
    """The parts of a nested scope evaluated in the outer one: decorators, defaults, bases."""
    if isinstance(scope, ast.ClassDef):
        return [*scope.decorator_list, *scope.bases, *scope.keywords]
    args = scope.args
    parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    return parts if isinstance(scope, ast.Lambda) else [*scope.decorator_list, *parts]


def assigned_before(name: str, block: list[ast.stmt], index: int) -> tuple[ast.expr | None, int]:
    """(value, position) of the nearest plain `name = value` before `block[index]`, when no
    statement in between binds `name` again; (None, index) otherwise."""
    for position in range(index - 1, -1, -1):
        statement = block[position]
        if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == name):
            return statement.value, position
        if _rebinds(statement, name):
            break
    return None, index


def _rebinds(statement: ast.stmt, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load)
               or isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names
               for node in ast.walk(statement))
