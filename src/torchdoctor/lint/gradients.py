"""Where autograd stops recording: one definition of "gradients off" for every rule.

A rule asking "is this evaluation run without gradients?" wants recording to be surely off; a
rule asking "may this tensor still require grad?" wants to know whether it may be off. Both
read the same places (a `with` item, a decorator) the same way, and differ only on a switch
whose argument is not a constant (`torch.set_grad_enabled(phase == "train")`): `maybe`.
"""

from __future__ import annotations

import ast

from torchdoctor.lint.context import Context
from torchdoctor.lint.occurrences import argument, index_of

# The last part of the name of a context manager or decorator that turns recording off:
# torch's (`torch.no_grad`, `torch.inference_mode`, `torch.autograd.grad_mode.no_grad`), and a
# project's wrappers named like them.
_OFF_WORDS = ("no_grad", "inference_mode")
_SWITCH = "set_grad_enabled"  # `torch.set_grad_enabled(False)`: off; `(True)`: on


def stops_recording(expr: ast.AST, ctx: Context, maybe: bool = False) -> bool:
    """`expr`, a `with` item's context expression or a decorator, turns recording off:
    `torch.no_grad()` (under any import or alias), `torch.inference_mode()`, a wrapper named
    like them, or `torch.set_grad_enabled(False)`. With `maybe`, also a switch whose argument
    is not a constant, which may turn it off."""
    call = expr if type(expr) is ast.Call else None
    target = call.func if call is not None else expr
    name = (ctx.qualname(target) or _last_name(target)).rpartition(".")[2]
    argument = _mode_argument(call) if call is not None else None
    if any(word in name for word in _OFF_WORDS):
        # `torch.inference_mode(False)` leaves recording as it was.
        return not (isinstance(argument, ast.Constant) and argument.value is False)
    if name != _SWITCH or argument is None:
        return False
    if isinstance(argument, ast.Constant):
        return not argument.value
    return maybe


def turns_recording_off(node: ast.AST, ctx: Context, maybe: bool = False) -> bool:
    """`node` is a `with` statement one of whose items stops recording, or a function one of
    whose decorators does (`stops_recording`)."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return any(stops_recording(item.context_expr, ctx, maybe) for item in node.items)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return any(stops_recording(decorator, ctx, maybe) for decorator in node.decorator_list)
    return False


def records_nothing(function: ast.AST, ctx: Context) -> bool:
    """`function` (a model's `forward`) is decorated to record nothing, or holds a `with` that
    turns recording off: whoever runs it gets outputs with no graph (a metric's feature
    extractor)."""
    return turns_recording_off(function, ctx) or any(
        turns_recording_off(node, ctx)
        for node in index_of(ctx, function).under(function, ast.With, ast.AsyncWith)
    )


def runs_without_gradients(ctx: Context, maybe: bool = False) -> bool:
    """The statement being visited runs with recording off: under such a `with`, or in a
    function so decorated (or one it is nested in)."""
    return any(turns_recording_off(node, ctx, maybe) for node in ctx.ancestors)


def _last_name(expr: ast.AST) -> str:
    """`no_grad` of `self.no_grad` or of a bare `no_grad` no import binds."""
    if type(expr) is ast.Attribute:
        return expr.attr
    return expr.id if type(expr) is ast.Name else ""


def _mode_argument(call: ast.Call) -> ast.expr | None:
    """The mode a call gives: its first argument, or `mode=`."""
    return argument(call, 0, "mode")
