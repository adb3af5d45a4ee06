"""A method named as a statement of its own and never called (`optimizer.zero_grad`,
`model.eval`): the statement does nothing."""

from __future__ import annotations

import ast

from torchdoctor.catalog.sdk import Context, Pitfall, shorten


def uncalled_statement(method: ast.Attribute, ctx: Context) -> bool:
    """`method` is the whole of an expression statement, not the last line of a notebook cell
    (which shows the method: asked for, not forgotten)."""
    statement = ctx.parent()
    return (
        type(statement) is ast.Expr
        and statement.value is method
        and not ctx.is_displayed(statement)
    )


def call_it(pitfall: Pitfall, method: ast.Attribute, ctx: Context) -> tuple[object, str]:
    """The fix adding the missing `()`, and the method as a message shows it."""
    text = ctx.text(method)
    end = ctx.offset(method.end_lineno, method.end_col_offset)  # type: ignore[arg-type]
    title = {"en": f"Call it: `{text}()`", "zh": f"调用它：`{text}()`"}
    return ctx.fix(pitfall, "unsafe", ctx.edit(end, end, "()"), title=title), shorten(text)
