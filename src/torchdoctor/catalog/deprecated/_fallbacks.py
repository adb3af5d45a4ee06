"""Deprecated and removed names in code kept for older torch versions (an `except ImportError`
branch, a version-gated one): that code never runs on today's torch, so what it names is no
finding. Shared by removed-torch-api and deprecated-torch-api."""

from __future__ import annotations

import ast
from functools import wraps
from typing import Callable

from torchdoctor.catalog.sdk import Context, Finding, expects_an_error, in_compat_fallback


def outside_compat_fallbacks(
    *, guarded_imports: bool, defaults_replaced: bool, in_warning_tests: bool = False
) -> Callable[[Callable], Callable]:
    """Drop what a detector finds in compatibility code; asked only once there is something to
    drop, not for every node the detector sees.
    `guarded_imports`: an import standing straight in a guarded `try` body is compatibility code
    (a removed name fails to import there, so the `except` branch is what runs); not so for a
    deprecated name, which still imports today, so that the `try` body is what runs.
    `defaults_replaced`: an expression in a version-gated conditional expression, or the value
    of a default the next statement replaces for newer versions (`wn = old`, then `if
    hasattr(...): wn = new`), is compatibility code too; not so for a removed name, whose default
    fails before it is replaced.
    `in_warning_tests`: also drop it in a test that expects the warning or error."""

    def decorate(detector: Callable) -> Callable:
        @wraps(detector)
        def checked(node: ast.AST, ctx: Context) -> list[Finding]:
            found = list(detector(node, ctx))
            if not found:
                return found
            statement = isinstance(node, ast.stmt)
            asked = node if (guarded_imports if statement else defaults_replaced) else None
            if in_compat_fallback(ctx, asked) or (in_warning_tests and expects_an_error(ctx)):
                return []
            return found

        return checked

    return decorate
