"""On-demand binding lookup: every place a name is bound in a scope ("what was it assigned?")."""

from __future__ import annotations

import ast
from bisect import bisect_left
from dataclasses import dataclass
from typing import Callable

from torchdoctor.lint.context import Context, per_file
from torchdoctor.lint.occurrences import BlockKey, FileIndex, block_names, index_of

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
    it `global` or `nonlocal` (its bindings live elsewhere).

    Local to the scope: in its body, and in the parts of the functions, lambdas and classes
    nested in it that run in it (decorators, defaults, bases), but not in their bodies."""
    found = index_of(ctx, scope)
    other = _other_bindings(ctx, scope)
    if name in other.shared:
        return None
    result = list(other.bindings.get(name, ()))
    if isinstance(scope, _FUNCTIONS):
        args = scope.args
        result += [
            Binding(arg, None)
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            if arg is not None and arg.arg == name
        ]
    statements: set[int] = set()
    for node in found.names_in(scope, name):
        if isinstance(node.ctx, ast.Load) or not _local_to(scope, node, found):
            continue
        statement = found.parents[node]
        kind = type(statement)
        if kind is ast.Assign and any(target is node for target in statement.targets):
            if id(statement) not in statements:  # `a = a = 0` binds once
                statements.add(id(statement))
                result.append(Binding(statement, statement.value))
        elif kind is ast.Tuple and type(statement.ctx) is ast.Store:
            result.append(Binding(node, _paired_value(statement, node, found)))
        elif (
            kind in (ast.AnnAssign, ast.AugAssign)
            and statement.target is node
            and statement.value is not None
        ):
            result.append(Binding(statement, statement.value, augmented=kind is ast.AugAssign))
        else:
            result.append(Binding(node, None))
    result.sort(key=lambda b: (b.node.lineno, b.node.col_offset))
    return tuple(result)


def _paired_value(targets: ast.Tuple, node: ast.Name, found: FileIndex) -> ast.expr | None:
    """The value `node` gets: `m_loss, r_loss = crit(a), crit(b)` pairs each name with its own
    value; an unpacking of anything else cannot be followed."""
    statement = found.parents[targets]
    if (
        type(statement) is ast.Assign
        and len(statement.targets) == 1
        and statement.targets[0] is targets
        and type(statement.value) is ast.Tuple
        and len(statement.value.elts) == len(targets.elts)
        and not any(type(e) is ast.Starred for e in (*targets.elts, *statement.value.elts))
    ):
        return statement.value.elts[targets.elts.index(node)]
    return None


class _OtherBindings:
    """What binds names in a scope other than a `Name` or a parameter: imports, definitions,
    `except ... as`, `case ... as`; and the names declared `global` or `nonlocal`."""

    def __init__(self, scope: ast.AST, found: FileIndex) -> None:
        self.bindings: dict[str, list[Binding]] = {}
        self.shared: set[str] = set()
        for node in found.under(scope, *_OTHER_BINDERS):
            if node is scope or not _local_to(scope, node, found):
                continue
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                self.shared.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in dict.fromkeys(a.asname or a.name.partition(".")[0] for a in node.names):
                    self.bindings.setdefault(name, []).append(Binding(node, None))
            elif getattr(node, "name", None) is not None:
                self.bindings.setdefault(node.name, []).append(Binding(node, None))


_OTHER_BINDERS = (
    ast.Global,
    ast.Nonlocal,
    ast.Import,
    ast.ImportFrom,
    ast.ExceptHandler,
    ast.MatchAs,
    ast.MatchStar,
    *_NESTED_SCOPES,
)


@per_file
def import_replaced(ctx: Context, binding: Binding, name: str) -> bool:
    """`binding` is a top-level `import name` that a later top-level statement rebinds to what
    it makes from the module (awd-lstm-lm's `import model`, then `model =
    model.RNNModel(...)`): a function of the file, run after, reads the new value, not the
    module. Only asked of a name read inside a function; read once per import (it scans the
    module's body)."""
    node = binding.node
    if not _imports_as_itself(node, name):
        return False
    body = ctx.tree.body  # type: ignore[attr-defined]
    if node not in body:
        return False
    for statement in body[body.index(node) + 1 :]:
        if type(statement) is not ast.Assign or len(statement.targets) != 1:
            continue
        target = statement.targets[0]
        if type(target) is ast.Name and target.id == name:
            return _made_from(statement.value, name)
    return False


def import_rebound_before(ctx: Context, binding: Binding, name: str, line: int) -> bool:
    """`binding` is a top-level `import name` (`import model as model` too) that a top-level
    statement before `line`, in any block of the module, rebinds to what it makes from the
    module (RE-Net's `else: model = model.TATransEModel(config)` under `if __name__ ==
    "__main__":`): a read on `line`, at the top level too, comes after it."""
    if not _imports_as_itself(binding.node, name):
        return False
    return any(
        other.value is not None
        and binding.node.lineno < other.node.lineno < line
        and _made_from(other.value, name)
        for other in bindings(ctx, ctx.tree, name) or ()
    )


def _imports_as_itself(node: ast.AST, name: str) -> bool:
    """`import name` or `import name as name`."""
    return type(node) is ast.Import and any(
        alias.name == name and alias.asname in (None, name)
        for alias in node.names  # type: ignore[attr-defined]
    )


def _made_from(value: ast.expr, name: str) -> bool:
    """`name.Class(...)`, `name.sub.build(...)`: a call of something the module `name` holds."""
    if type(value) is not ast.Call:
        return False
    func = value.func
    while type(func) is ast.Attribute:
        func = func.value
    return type(func) is ast.Name and func.id == name and type(value.func) is ast.Attribute


@per_file
def _other_bindings(ctx: Context, scope: ast.AST) -> _OtherBindings:
    return _OtherBindings(scope, index_of(ctx, scope))


def _local_to(scope: ast.AST, node: ast.AST, found: FileIndex) -> bool:
    """True when `node` (under `scope`) runs in `scope`: in its body, or in the outer parts of
    the scopes nested in it that do."""
    while True:
        owner = found.scopes[found.number[node]]
        if owner is scope:
            return isinstance(scope, ast.Module) or _under_any(_body(scope), node, found)
        if not _under_any(_outer_parts(owner), node, found):
            return False
        node = owner


def _body(scope: ast.AST) -> list[ast.AST]:
    return scope.body if isinstance(scope.body, list) else [scope.body]


def _under_any(roots: list[ast.AST], node: ast.AST, found: FileIndex) -> bool:
    at = found.number[node]
    return any(start <= at < end for start, end in map(found.span, roots))


def _outer_parts(scope: ast.AST) -> list[ast.AST]:
    """The parts of a nested scope evaluated in the outer one: decorators, defaults, bases."""
    if isinstance(scope, ast.ClassDef):
        return [*scope.decorator_list, *scope.bases, *scope.keywords]
    args = scope.args
    parts = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
    return parts if isinstance(scope, ast.Lambda) else [*scope.decorator_list, *parts]


def assigned_before(
    name: str,
    block: list[ast.stmt],
    index: int,
    ctx: Context,
    in_place: bool = False,
    wanted: Callable[[ast.expr], bool] | None = None,
) -> tuple[ast.expr | None, int]:
    """(value, position) of the nearest plain `name = value` before `block[index]`, when no
    statement in between binds `name` again (with `in_place`, nor changes it in place:
    `y.transpose_()`, `y.data = ...`) and `wanted(value)` holds, if given (asked first: it
    spares the reading of the statements between); (None, index) otherwise."""
    found = plain_assignments(ctx, block).get(name)
    if not found or found[0] >= index:
        return None, index  # no such statement before: the block's statements alone tell
    last = found[bisect_left(found, index) - 1]
    if wanted is not None and not wanted(block[last].value):  # type: ignore[attr-defined]
        return None, index
    between = bound_between(ctx, name, block, last, index, in_place=in_place)
    if between is None:  # the index tells
        names = block_names(ctx, block)
        latest = names.last_changed_before if in_place else names.last_bound_before
        position = latest(name, index)
    else:
        position = last if between is False else None
    if position is None:
        return None, index
    statement = block[position]
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    ):
        return statement.value, position
    return None, index


def bound_between(
    ctx: Context, name: str, block: list[ast.stmt], first: int, end: int, in_place: bool = False
) -> bool | None:
    """Whether a statement of `block[first + 1 : end]` binds `name` as `BlockNames` reads it (a
    `Name` stored or deleted, a `global`/`nonlocal` of it; with `in_place`, also `name.attr = v`
    and `name.method_()`, as `last_changed_before`), read from those statements so as not to
    build the file's index; None when the index exists already (it answers for less) or when
    they hold more than _LOOK_BACK nodes (a constant bound: never quadratic)."""
    if ctx.file_index is not None:
        return None
    budget = _LOOK_BACK
    for statement in block[first + 1 : end]:
        for node in ast.walk(statement):
            budget -= 1
            if budget < 0:
                return None
            kind = type(node)
            if kind is ast.Name:
                if node.id == name and type(node.ctx) is not ast.Load:
                    return True
            elif kind is ast.Attribute:
                value = node.value
                if (
                    in_place
                    and type(value) is ast.Name
                    and value.id == name
                    and (node.attr.endswith("_") or type(node.ctx) is not ast.Load)
                ):
                    return True
            elif (kind is ast.Global or kind is ast.Nonlocal) and name in node.names:
                return True
    return False


# Nodes `bound_between` reads between an assignment and the statement asking before its caller
# asks the file's index instead (most questions are about the statement just before: none).
_LOOK_BACK = 64


def plain_assignments(ctx: Context, block: list[ast.stmt]) -> dict[str, list[int]]:
    """The positions of a block's `name = value` statements (one plain name as target), by
    name, in order: read from the block's own statements, without the file's index."""
    return _plain_assignments(ctx, BlockKey(block))


@per_file
def _plain_assignments(ctx: Context, key: BlockKey) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for position, statement in enumerate(key.block):
        if type(statement) is ast.Assign and len(statement.targets) == 1:
            target = statement.targets[0]
            if type(target) is ast.Name:
                found.setdefault(target.id, []).append(position)
    return found


def reaching_assignment(
    name: str,
    ctx: Context,
    wanted: Callable[[ast.expr], bool],
    at: ast.AST,
    in_place: bool = False,
) -> tuple[ast.stmt, int, list[ast.stmt]] | None:
    """(statement, position, block) of the `name = <value>` that reaches `at` (the name, read in
    the statement being visited), when `wanted(value)` holds: in the statement's block, or in a
    block around it when the blocks between neither bind `name` (with `in_place`, nor change it
    in place) before it, nor anywhere in a loop around it (for the next turn), within one scope.
    None when a comprehension or lambda around `at` binds the name itself. The blocks' own
    tables find a candidate first; only then are the blocks between read for other bindings
    (which may read the file's index: most questions have no candidate and never do)."""
    ancestors = ctx.ancestors
    innermost = len(ancestors) - 1
    while innermost > 0 and not isinstance(ancestors[innermost], ast.stmt):
        innermost -= 1  # a comprehension's `for` parts: the statement holds them
    if any(_binds_inside_expression(node, name) for node in ancestors[innermost + 1 :]):
        return None
    if _bound_around(at, ancestors[innermost], name, ctx):
        return None
    between: list[tuple[ast.AST, list[ast.stmt], int]] = []  # the blocks climbed out of
    for level in range(innermost, 0, -1):
        owner = ancestors[level - 1]
        place = ctx.block_position(ancestors[level], owner)
        if place is None:
            return None
        block, index = place
        assigned = plain_assignments(ctx, block).get(name, [])
        before = bisect_left(assigned, index)
        if before:  # the nearest plain assignment around: the candidate, or a rebinding
            if not wanted(block[assigned[before - 1]].value):  # type: ignore[attr-defined]
                return None
            value, position = assigned_before(name, block, index, ctx, in_place, wanted)
            if value is None or any(
                _rebinds(ctx, name, *step, in_place=in_place) for step in between
            ):
                return None
            return block[position], position, block
        if isinstance(owner, _SCOPES) or binds_in_header(owner, name):
            return None
        between.append((owner, block, index))
    return None


def _rebinds(
    ctx: Context,
    name: str,
    owner: ast.AST,
    block: list[ast.stmt],
    index: int,
    in_place: bool = False,
) -> bool:
    """A block climbed out of binds (or changes) `name` before the statement, or, in a loop,
    anywhere: for the next turn."""
    if _changed_in(ctx, name, block, -1, index, in_place):
        return True
    return isinstance(owner, _LOOPS) and _changed_in(ctx, name, block, index, len(block), in_place)


def _changed_in(
    ctx: Context, name: str, block: list[ast.stmt], first: int, end: int, in_place: bool
) -> bool:
    """A statement of `block[first + 1 : end]` binds `name` (or changes it in place)."""
    changed = bound_between(ctx, name, block, first, end, in_place=in_place)
    if changed is not None:
        return changed
    names = block_names(ctx, block)
    latest = names.last_changed_before if in_place else names.last_bound_before
    position = latest(name, end)
    return position is not None and position > first


def _bound_around(at: ast.AST, statement: ast.AST, name: str, ctx: Context) -> bool:
    """A comprehension, lambda or walrus between `at` and its statement binds `name`. Looked
    for only when the statement's header can hold such a binder (most statements: no `for`,
    `lambda` or `:=` in their text); then the file's index, when built, gives the parents,
    else the statement's own are made."""
    if not isinstance(statement, ast.stmt):
        return False  # asked above any statement: no expression holds `at`
    start = ctx.offset(statement.lineno, statement.col_offset)
    body = getattr(statement, "body", None)
    first = body[0] if isinstance(body, list) and body else None
    end = (
        ctx.offset(first.lineno, first.col_offset)
        if first is not None
        else ctx.offset(statement.end_lineno or statement.lineno, statement.end_col_offset or 0)
    )
    header = ctx.source[start:end]
    if "for" not in header and "lambda" not in header and ":=" not in header:
        return False
    parents = ctx.file_index.parents if ctx.file_index is not None else ctx.statement_parents()
    node = parents.get(at)
    while node is not None and node is not statement:
        if _binds_inside_expression(node, name):
            return True
        node = parents.get(node)
    return False


def _binds_inside_expression(node: ast.AST, name: str) -> bool:
    """A comprehension whose target is `name`, a lambda with such a parameter, a walrus
    assigning it: then the name read under `node` may not be the statement's."""
    if isinstance(node, _COMPREHENSIONS):
        return any(_binds_inside_expression(generator, name) for generator in node.generators)
    if isinstance(node, ast.comprehension):
        return any(isinstance(part, ast.Name) and part.id == name for part in ast.walk(node.target))
    if isinstance(node, ast.Lambda):
        arguments = node.args
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        return any(a.arg == name for a in every)
    return isinstance(node, ast.NamedExpr) and node.target.id == name


def binds_in_header(owner: ast.AST, name: str) -> bool:
    """Whether the compound statement binds `name` outside its blocks (a loop's target, a
    `with` item, an `except` name, a walrus in its test)."""
    if isinstance(owner, ast.ExceptHandler) and owner.name == name:
        return True
    for field, value in ast.iter_fields(owner):
        if field in ("body", "orelse", "finalbody", "handlers"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if isinstance(part, ast.AST) and any(
                isinstance(node, ast.Name)
                and node.id == name
                and not isinstance(node.ctx, ast.Load)
                for node in ast.walk(part)
            ):
                return True
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Module)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
