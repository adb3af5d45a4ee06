"""The name under which a file reaches the torch module, for fixes that write `torch.<...>`."""

from __future__ import annotations

import ast

from torchdoctor.catalog.sdk import Context

_TORCH = ast.Name(id="torch", ctx=ast.Load())


def torch_name(node: ast.Attribute, ctx: Context) -> str | None:
    """A name of the torch module at this line: the one `node` is written with (`th` in
    `th.norm`), or `torch` when that name is the torch module here; None otherwise."""
    base: ast.AST = node
    while isinstance(base, ast.Attribute):
        base = base.value
    if isinstance(base, ast.Name) and ctx.qualname(base) == "torch":
        return base.id
    return "torch" if ctx.qualname(_TORCH) == "torch" else None
