"""Parse once, walk once, dispatch each node to the detectors registered for its type."""
from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable

from torchdoctor.catalog import _registry
from torchdoctor.catalog._model import Pitfall
from torchdoctor.catalog.tooling import td700_syntax_error
from torchdoctor.lint.context import Context
from torchdoctor.lint.edits import apply_edits, select_fixes
from torchdoctor.lint.noqa import is_suppressed
from torchdoctor.report.finding import Finding

Dispatch = dict[type, list[tuple[Pitfall, Callable]]]

# Fields that never hold nodes worth visiting (`ctx` is the shared Load/Store marker).
_SKIPPED_FIELDS = frozenset({"ctx", "type_comment", "type_ignores"})
MAX_FIX_PASSES = 10


@dataclass
class CheckResult:
    findings: list[Finding]
    # Problems of the doctor itself (a detector that raised): reported, never fatal.
    internal_errors: list[str] = field(default_factory=list)


@lru_cache(maxsize=None)
def dispatch_for(codes: frozenset[str]) -> Dispatch:
    table: Dispatch = defaultdict(list)
    for pitfall in _registry.all_pitfalls():
        if pitfall.code not in codes:
            continue
        for detector in pitfall.static_detectors:
            for node_type in detector.node_types:
                table[node_type].append((pitfall, detector.check))
    return dict(table)


@lru_cache(maxsize=None)
def _child_fields(node_type: type) -> tuple[str, ...]:
    return tuple(f for f in node_type._fields if f not in _SKIPPED_FIELDS)


def check_source(source: str, path: str, codes: frozenset[str], lang: str = "en") -> CheckResult:
    """All findings of the enabled rules in one file's source, noqa applied."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError) as error:  # ValueError: source with NUL bytes
        return CheckResult([td700_syntax_error.finding_for(error, source, path, lang)])
    ctx = Context(path, source, tree, lang)
    result = CheckResult([])
    _walk(tree, ctx, dispatch_for(codes), result)
    lines = ctx.lines
    result.findings = [f for f in result.findings if not is_suppressed(f, lines)]
    result.findings.sort(key=Finding.sort_key)
    return result


def _walk(tree: ast.AST, ctx: Context, dispatch: Dispatch, result: CheckResult) -> None:
    """Pre-order, in source order, telling the context about bindings on the way in and out."""
    ancestors = ctx.ancestors
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    pop, push = stack.pop, stack.append
    while stack:
        node, leaving = pop()
        if leaving:
            ancestors.pop()
            ctx.leave(node)
            continue
        detectors = dispatch.get(type(node))
        if detectors:
            _run_detectors(node, ctx, detectors, result)
        ctx.enter(node)
        ancestors.append(node)
        push((node, True))
        children: list[ast.AST] = []
        for name in _child_fields(type(node)):
            value = getattr(node, name, None)
            if isinstance(value, list):
                children.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                children.append(value)
        for child in reversed(children):
            push((child, False))


def _run_detectors(node: ast.AST, ctx: Context, detectors: list, result: CheckResult) -> None:
    for pitfall, check in detectors:
        try:
            found: Iterable[Finding] | None = check(node, ctx)
            if found:
                result.findings.extend(found)
        except Exception as error:  # a bug in one detector must not stop the others
            result.internal_errors.append(
                f"{ctx.path}:{getattr(node, 'lineno', 0)}: internal error in {pitfall.name}: "
                f"{type(error).__name__}: {error}")


@dataclass
class FixResult:
    source: str
    fixed: int
    remaining: CheckResult


def fix_source(source: str, path: str, codes: frozenset[str], lang: str, unsafe: bool) -> FixResult:
    """Apply fixes until none is left (overlapping ones wait for a later pass)."""
    fixed = 0
    result = check_source(source, path, codes, lang)
    for _ in range(MAX_FIX_PASSES):
        chosen = select_fixes(result.findings, unsafe)
        if not chosen:
            break
        candidate = apply_edits(source, chosen)
        try:
            ast.parse(candidate, filename=path)
        except (SyntaxError, ValueError):
            result.internal_errors.append(
                f"{path}: fixes by {', '.join(sorted({f.name for f in chosen}))} produced code "
                "that does not parse; left unchanged")
            break
        if candidate == source:
            break
        source, fixed = candidate, fixed + len(chosen)
        result = check_source(source, path, codes, lang)
    return FixResult(source, fixed, result)


def all_codes() -> frozenset[str]:
    return frozenset(p.code for p in _registry.all_pitfalls())

