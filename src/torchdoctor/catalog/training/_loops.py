"""Analysis shared by the training-loop rules: optimizers, their steps, loops and scopes."""

from __future__ import annotations

import ast
import re

from torchdoctor.catalog.sdk import Context, Kind, children, index_of, per_file, subtree

LOOPS = (ast.For, ast.AsyncFor, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# `opt`, `optim`, `optimizer`, `optimizers`, `g_optimizer`, `optimizer_d`, `opt_g`...
_OPTIMIZER_NAME = re.compile(
    r"^(?:[a-z0-9]+_)?(?:opt|optim|optimizer|optimiser)s?(?:_[a-z0-9]+)?$", re.IGNORECASE
)
_SCHEDULER_WORD = "sched"


def last_identifier(expr: ast.AST) -> str | None:
    """`self.optimizer` -> "optimizer", `optimizers[i]` -> "optimizers"."""
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


def mentions_epochs(expr: ast.AST) -> bool:
    """Some name or attribute in `expr` speaks of epochs (`epoch % 2`, `range(args.epochs)`):
    whole epochs taken in turn, or a loop over them, not over batches."""
    return any(
        "epoch" in (n.id if isinstance(n, ast.Name) else n.attr).lower()
        for n in subtree(expr)
        if isinstance(n, (ast.Name, ast.Attribute))
    )


def is_optimizer(expr: ast.AST, ctx: Context) -> bool:
    kind = ctx.kind_of(expr)
    if kind is not Kind.UNKNOWN:
        return kind is Kind.OPTIMIZER
    name = last_identifier(expr)
    # `model_optimizer_scheduler` (classifier-balancing) names the optimizer's schedule.
    return bool(name and _OPTIMIZER_NAME.match(name)) and _SCHEDULER_WORD not in name.lower()


def stepped_optimizer(call: ast.AST, ctx: Context) -> ast.AST | None:
    """The optimizer a `.step(...)` call updates: `opt.step()` -> opt, `scaler.step(opt)` -> opt."""
    if ctx.method_name(call) != "step":
        return None
    receiver = call.func.value
    if is_optimizer(receiver, ctx):
        return receiver
    # GradScaler.step(optimizer); not `self.step(optimizer)`, a helper that may do anything.
    if (
        len(call.args) == 1
        and not call.keywords
        and is_optimizer(call.args[0], ctx)
        and "scaler" in (last_identifier(receiver) or "").lower()
    ):
        return call.args[0]
    return None


def is_scheduler_step(call: ast.Call, ctx: Context) -> bool:
    """`scheduler.step()` of a learning-rate scheduler (which never touches gradients)."""
    if ctx.method_name(call) != "step":
        return False
    receiver = call.func.value
    kind = ctx.kind_of(receiver)
    if kind is not Kind.UNKNOWN:
        return kind is Kind.SCHEDULER
    return _SCHEDULER_WORD in (last_identifier(receiver) or "").lower()


def enclosing_loops(ctx: Context) -> list[ast.AST]:
    """The loops around the current node, innermost first, within the current function."""
    return ctx.enclosing_loops()


def position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def local_nodes(roots: list[ast.AST]) -> list[ast.AST]:
    """Every node under `roots`, not entering nested functions or classes."""
    found, todo = [], list(roots)
    while todo:
        node = todo.pop()
        found.append(node)
        if not isinstance(node, SCOPES):
            todo.extend(children(node))
    return found


@per_file
def block_steps(ctx: Context, owner: ast.AST, block: str = "body") -> list[ast.Expr]:
    """The `opt.step()` / `scaler.step(opt)` statements in one block (`body` or `orelse`) of a
    loop or an `if`, nested blocks included, in source order; found once."""
    steps = [
        node
        for node in index_of(ctx, owner).in_block(getattr(owner, block), ast.Expr)
        if stepped_optimizer(node.value, ctx) is not None
    ]
    return sorted(steps, key=position)
