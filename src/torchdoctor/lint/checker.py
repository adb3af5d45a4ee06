"""Parse once, walk once, dispatch each node to the detectors registered for its type."""

from __future__ import annotations

import ast
import gc
import threading
from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import lru_cache, wraps
from typing import Callable, Iterable, Sequence

from torchdoctor.catalog import _registry
from torchdoctor.catalog._model import Pitfall
from torchdoctor.lint.project import NO_FACTS, ProjectFacts
from torchdoctor.lint.context import ENTER, LEAVE, Context
from torchdoctor.lint.edits import fix_until_stable
from torchdoctor.lint.indentation import expand_indentation_tabs
from torchdoctor.lint.noqa import is_suppressed
from torchdoctor.lint.occurrences import FileIndex, indexed_fields, node_classes
from torchdoctor.lint.stopping import CheckStopped, stop_flag
from torchdoctor.report.finding import Finding

Detectors = list[tuple[Pitfall, Callable]]
# For a call of a bare name an import binds (see Pitfall.static's `imported`): the detectors to
# run, by the last part of the name it was imported as.
ImportedNames = dict[str, Detectors]
# Per node class: detectors for every node, detectors keyed by the node's name, and those of
# calls of imported names (None: no such detector).
Dispatch = dict[type, tuple[Detectors, dict[str, Detectors], ImportedNames | None]]

# Fields that never hold nodes worth visiting: names, constants, operator singletons, and the
# shared Load/Store markers (a quarter of all nodes). Skipping them is most of the walk's speed.
# Annotations are skipped too: the context reads them directly, and no detector looks inside.
_SKIPPED_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "name",
        "arg",
        "module",
        "level",
        "asname",
        "conversion",
        "kind",
        "is_async",
        "type_comment",
        "type_ignores",
        "names",
        "kwd_attrs",
        "rest",
        "simple",
        "annotation",
        "returns",
    }
)
_VALUE_IS_CONSTANT = (ast.Constant, ast.MatchSingleton)
# Nodes the context must see on the way in and out: statements, scopes, bindings.
_TRACKED = (
    ast.stmt,
    ast.mod,
    ast.excepthandler,
    ast.Lambda,
    ast.comprehension,
    ast.NamedExpr,
    ast.match_case,
)
MAX_FIX_PASSES = 10


@dataclass
class CheckResult:
    findings: list[Finding]
    # Problems of the doctor itself (a detector that raised): reported, never fatal.
    internal_errors: list[str] = field(default_factory=list)


@lru_cache(maxsize=None)
def dispatch_for(codes: frozenset[str]) -> Dispatch:
    table: dict[type, tuple[Detectors, dict[str, Detectors], Detectors]] = {}
    for pitfall in _registry.all_pitfalls():
        if pitfall.code not in codes:
            continue
        for detector in pitfall.static_detectors:
            for node_type in detector.node_types:
                always, by_name, imported = table.setdefault(node_type, ([], defaultdict(list), []))
                if detector.names is None:
                    always.append((pitfall, detector.check))
                    continue
                for name in detector.names:
                    by_name[name].append((pitfall, detector.check))
                if detector.imported:
                    imported.append((pitfall, detector.check))
    return with_context_hooks(
        {
            cls: (always, dict(by_name), _imported_names(by_name, imported))
            for cls, (always, by_name, imported) in table.items()
        }
    )


def _imported_names(by_name: dict[str, Detectors], imported: Detectors) -> ImportedNames | None:
    """The detectors of calls of imported names, by the names they are keyed on."""
    if not imported:
        return None
    return {
        name: [entry for entry in named if entry in imported] for name, named in by_name.items()
    }


def with_context_hooks(table: Dispatch) -> Dispatch:
    """Add the context's own hooks: it learns which functions are generators from the walk."""
    for node_type in (ast.Yield, ast.YieldFrom):
        always, by_name, imported = table.get(node_type, ([], {}, None))
        table[node_type] = ([*always, (_CONTEXT, _mark_yield)], by_name, imported)
    return table


class _ContextHook:
    """Stands in for a pitfall in the dispatch table for the context's own hooks."""

    name = "context"


_CONTEXT = _ContextHook()


def _mark_yield(node: ast.Yield | ast.YieldFrom, ctx: Context) -> None:
    ctx.mark_yield(node)


@lru_cache(maxsize=None)
def _all_need_torch(codes: frozenset[str]) -> bool:
    return all(p.needs_torch for p in _registry.all_pitfalls() if p.code in codes)


def node_name(node: ast.AST) -> str | None:
    """The name a detector can be keyed on (see Pitfall.static)."""
    kind = type(node)
    if kind is ast.Expr:  # a statement is keyed on the call it makes, if any
        node = node.value
        kind = type(node)
        if kind is not ast.Call:  # `losses.append[x]`, `optimizer.step`: no call
            return None
    if kind is ast.Call:
        func = node.func
        kind = type(func)
        return func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None
    if kind is ast.Attribute:
        return node.attr
    if kind is ast.Name:
        return node.id
    if kind is ast.Subscript:  # `loss.data[0]` -> "data"
        value = node.value
        return value.attr if type(value) is ast.Attribute else None
    return getattr(node, "name", None)


# Per node class, computed once: which fields to descend into.
_CHILD_FIELDS = {
    cls: ()
    if issubclass(cls, _VALUE_IS_CONSTANT)
    else tuple(f for f in cls._fields if f not in _SKIPPED_FIELDS)
    for cls in node_classes()
}
_TRACKED_CLASSES = frozenset(cls for cls in _CHILD_FIELDS if issubclass(cls, _TRACKED))
# Per node class: the fields the file index reads that the walk does not enter.
_INDEX_ONLY_FIELDS = {
    cls: extra
    for cls in _CHILD_FIELDS
    if (extra := tuple(f for f in indexed_fields(cls) if f not in _CHILD_FIELDS[cls]))
}


# The context's hooks, with every node class in them (None: no hook).
_ON_ENTER = {cls: ENTER.get(cls) for cls in _CHILD_FIELDS}
_ON_LEAVE = {cls: LEAVE.get(cls) for cls in _CHILD_FIELDS}


@lru_cache(maxsize=None)
def _every_class(codes: frozenset[str]) -> dict[type, tuple | None]:
    """`dispatch_for(codes)` with every node class in it (None: no detector)."""
    return with_every_class(dispatch_for(codes))


def with_every_class(dispatch: Dispatch) -> dict[type, tuple | None]:
    """`dispatch` with every node class in it: the walk subscripts it instead of calling get."""
    return {cls: dispatch.get(cls) for cls in _CHILD_FIELDS}


@lru_cache(maxsize=None)
def _skippable(codes: frozenset[str]) -> tuple[frozenset[type], frozenset[str]]:
    """Leaf classes (no children, not tracked) never pushed on the walk's stack, and the ids of
    the `Name` leaves pushed anyway because a detector is keyed on them."""
    wanted = dispatch_for(codes)
    always, by_name, _ = wanted.get(ast.Name, ([], {}, None))
    names = frozenset(by_name) if not always else frozenset()
    skipped = frozenset(
        cls
        for cls, fields in _CHILD_FIELDS.items()
        if not fields
        and cls not in _TRACKED_CLASSES
        and (cls not in wanted or (cls is ast.Name and not always))
    )
    return skipped, names


def without_cyclic_gc(func: Callable) -> Callable:
    """Run `func` with Python's cyclic garbage collector paused. A check allocates hundreds of
    thousands of objects that hold no cycles (the tree, the file's index) and reference counting
    frees them; the collector would only walk them again and again while they live (a third of
    the time of a large file). It resumes afterwards, and collects any cycle then."""

    @wraps(func)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


@without_cyclic_gc
def check_source(
    source: str,
    path: str,
    codes: frozenset[str],
    tree: ast.Module | None = None,
    cells: Sequence[int] | None = None,
    project: ProjectFacts = NO_FACTS,
) -> CheckResult:
    """All findings of the enabled rules in one file's source, noqa applied. `tree`: the
    source's, when the caller has parsed it already; `cells`: for a notebook's joined cells,
    the cell of each line; `project`: what the rest of the project says (lint/project.py)."""
    repaired: list[Finding] = []
    read_as = source  # the text the tree's positions are in
    try:
        if tree is None:
            tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        # ValueError: NUL bytes; RecursionError: nesting too deep for CPython's parser, which
        # means Python cannot compile the file either.
        repair = _repaired_tree(source, path, error)
        if repair.tree is None:
            return CheckResult(repair.findings)
        tree, repaired = repair.tree, repair.findings
        read_as = repair.columns_moved or source
    result = CheckResult(list(repaired))
    if "torch" not in source and "import *" not in source and _all_need_torch(codes):
        # No PyTorch pitfall can show in code that never mentions torch (a star import of the
        # project may bring torch's names: the context tells).
        return result
    ctx = Context(path, read_as, tree, cells, project)
    try:
        walk_args = (dispatch_for(codes), _skippable(codes), result, _every_class(codes))
        _walk(tree, ctx, *walk_args, stop_flag())
    except (RecursionError, MemoryError) as error:  # pathological nesting: skip this file only
        result.internal_errors.append(f"{path}: not fully checked: {type(error).__name__}")
    finally:
        lines = ctx.lines if result.findings and "noqa" in source.lower() else None
        ctx.release()
    if read_as is not source:  # fixes made for the expanded text would land on wrong places
        result.findings[len(repaired) :] = [
            replace(finding, fix=None) for finding in result.findings[len(repaired) :]
        ]
    if lines is not None:  # most files: no line to read
        result.findings = [f for f in result.findings if not is_suppressed(f, lines)]
    result.findings.sort(key=Finding.sort_key)
    return result


@dataclass
class Repair:
    """What reading a source that does not parse gave: the tree of its repairs (None: there is
    none), the findings at the places repaired, and when the repairs moved columns (tabs of
    mixed indentation expanded), the repaired text the tree's positions are in."""

    tree: ast.Module | None
    findings: list[Finding]
    columns_moved: str | None = None


def _repaired_tree(source: str, path: str, error: Exception) -> Repair:
    """A source that does not parse: the tree of the repairs of it, applied one after the
    other until it parses (each an old idiom replaced in place, positions kept but for
    brackets added at a statement's end; last, indentation with tabs read as Python 2 read it),
    and a syntax-error finding at each place repaired, so that the rest of the file is still
    checked; else no tree and the one finding for `error`."""
    if not isinstance(error, SyntaxError):
        return Repair(None, [_registry.engine_finding("unparsable-source", error, source, path)])
    text, places, last_error = source, [], error  # the error of `text` as it stands
    # The parser's message on each line where it stopped, the source's and each repair's:
    # a later repair's place is reported with what Python said there.
    messages: dict[int | None, str] = {error.lineno: error.msg}
    for _, repair in _registry.source_repairs():
        attempt = repair(text)
        if attempt is None:
            continue
        text, repaired = attempt
        places += repaired
        parsed = _parsed(text, path)
        if isinstance(parsed, ast.Module):
            return Repair(parsed, _repair_findings(source, path, places, messages))
        last_error = parsed
        if isinstance(parsed, SyntaxError):
            messages.setdefault(parsed.lineno, parsed.msg)
    expanded = expand_indentation_tabs(text)
    parsed = _parsed(expanded, path) if expanded is not None else error
    if expanded is not None and not isinstance(parsed, ast.Module):
        # Tabs of four columns, as the author's editor showed them (no Python ran the file).
        narrow = expand_indentation_tabs(text, 4)
        parsed_narrow = _parsed(narrow, path) if narrow is not None else parsed
        if isinstance(parsed_narrow, ast.Module):
            expanded, parsed = narrow, parsed_narrow
    if not isinstance(parsed, ast.Module):
        return Repair(None, [_registry.engine_finding("unparsable-source", error, source, path)])
    # Python's own complaint about the indentation, where it makes it (the first error of the
    # source may have been another one, repaired above).
    if isinstance(last_error, SyntaxError) and last_error.lineno:
        places.append((last_error.lineno, 0))
        messages[last_error.lineno] = last_error.msg
    return Repair(parsed, _repair_findings(source, path, places, messages), columns_moved=expanded)


def _repair_findings(
    source: str, path: str, places: list[tuple[int, int]], messages: dict[int | None, str]
) -> list[Finding]:
    """A syntax-error finding at each place repaired: the parser's message on the lines where
    it stopped."""
    return [
        _registry.engine_finding(
            "unparsable-source",
            SyntaxError(messages.get(line, "invalid syntax"), (path, line, column + 1, None)),
            source,
            path,
        )
        for line, column in sorted(set(places))
    ]


def _parsed(text: str, path: str) -> ast.Module | Exception:
    """The tree of `text`, or why Python cannot parse it."""
    try:
        return ast.parse(text, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        return error


def _parses(source: str, path: str) -> bool:
    return isinstance(_parsed(source, path), ast.Module)


def _walk(
    tree: ast.AST,
    ctx: Context,
    dispatch: Dispatch,
    skippable: tuple[frozenset[type], frozenset[str]],
    result: CheckResult,
    every: dict[type, tuple | None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Pre-order, in source order. Statements and scopes are entered and left on the context
    (so `ctx.ancestors` holds the enclosing statements); expressions are only dispatched. Once
    a rule has built the whole file's index, the rest of the walk reads it (`_walk_index`).
    `every`: `dispatch` with every node class in it (`with_every_class`), when made already;
    `stop`: set, the walk raises CheckStopped at the next statement (lint/stopping.py)."""
    ancestors = ctx.ancestors
    stack: list = [tree]
    pop, push, extend = stack.pop, stack.append, stack.extend
    if every is None:
        every = with_every_class(dispatch)
    fields_of, tracked = _CHILD_FIELDS, _TRACKED_CLASSES
    on_enter, on_leave = _ON_ENTER, _ON_LEAVE
    skip, wanted_ids = skippable
    name_type = ast.Name
    while stack:
        node = pop()
        kind = type(node)
        if kind is tuple:  # (node,): leaving a tracked node
            node = node[0]
            ancestors.pop()
            handler = on_leave[type(node)]
            if handler is not None:
                handler(ctx, node)
            continue
        detectors = every[kind]
        if detectors is not None:
            _dispatch(node, kind, detectors, ctx, result)
            if ctx.file_index is not None:
                _walk_index(ctx.file_index, node, ctx, dispatch, every, skippable, result, stop)
                return
        if kind in tracked:
            if stop is not None and stop.is_set():
                raise CheckStopped
            handler = on_enter[kind]
            if handler is not None:
                handler(ctx, node)
            ancestors.append(node)
            push((node,))
        fields = fields_of[kind]
        if len(fields) == 1:  # most nodes: one child field, no list to build
            value = getattr(node, fields[0], None)
            if type(value) is list:
                children = [
                    v
                    for v in value
                    if v is not None
                    and (type(v) not in skip or type(v) is name_type and v.id in wanted_ids)
                ]
                children.reverse()
                extend(children)
            elif value is not None and (
                type(value) not in skip or type(value) is name_type and value.id in wanted_ids
            ):
                push(value)
            continue
        children = []
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                # None stands for a `**spread` entry's missing key in a dict display.
                children.extend(
                    [
                        v
                        for v in value
                        if v is not None
                        and (type(v) not in skip or type(v) is name_type and v.id in wanted_ids)
                    ]
                )
            elif value is not None and (
                type(value) not in skip or type(value) is name_type and value.id in wanted_ids
            ):
                children.append(value)
        if children:
            children.reverse()
            extend(children)


def _dispatch(
    node: ast.AST, kind: type, detectors: tuple, ctx: Context, result: CheckResult
) -> None:
    """Run the detectors of `node`'s class: those for every node, then those for its name (or
    for a call of an imported name)."""
    always, by_name, imported = detectors
    run = always
    if by_name:
        # The common cases inlined (see node_name): the walk's hottest lines.
        bare_call = False
        if kind is ast.Call:
            func = node.func
            func_type = type(func)
            if func_type is ast.Attribute:
                key = func.attr
            elif func_type is ast.Name:
                key, bare_call = func.id, True
            else:
                key = None
        elif kind is ast.Attribute:
            key = node.attr
        elif kind is ast.Name:
            key = node.id
        else:
            key = node_name(node)
        if bare_call and imported is not None and key in ctx.imported:
            named = _imported_call_detectors(node, key, by_name, imported, ctx)
        else:
            named = by_name.get(key)
        if named:
            run = always + named if always else named
    for pitfall, check in run:
        try:
            found: Iterable[Finding] | None = check(node, ctx)
            if found:
                result.findings.extend(found)
        except Exception as error:  # a bug in one detector must not stop the others
            _internal_error(node, ctx, pitfall, error, result)


def _imported_call_detectors(
    call: ast.Call, key: str, by_name: dict[str, Detectors], imported: ImportedNames, ctx: Context
) -> Detectors:
    """The detectors of a call of a bare name an import binds: those keyed on that name, and
    those keyed on the last part of what it was imported as (`cp` of `from
    torch.utils.checkpoint import checkpoint as cp`: "checkpoint")."""
    named = by_name.get(key) or []
    qualname = ctx.qualname(call.func)
    origin = imported.get(qualname.rpartition(".")[2], []) if qualname else []
    return named + [entry for entry in origin if entry not in named]


def _walk_index(
    found: FileIndex,
    current: ast.AST,
    ctx: Context,
    dispatch: Dispatch,
    every: dict[type, tuple | None],
    skippable: tuple[frozenset[type], frozenset[str]],
    result: CheckResult,
    stop: threading.Event | None,
) -> None:
    """The rest of `_walk` after the detectors of `current` have run, read from the whole
    file's index: its nodes are numbered in the order the walk meets them, and the nodes under
    each have consecutive numbers, so that a tracked node is left when the walk passes its end.
    The nodes it would not stop at (no detector, not tracked) are not read at all."""
    nodes, ends, number, ancestors = found.nodes, found.ends, found.number, ctx.ancestors
    tracked, on_enter, on_leave = _TRACKED_CLASSES, _ON_ENTER, _ON_LEAVE
    open_ends = [ends[number[node]] for node in ancestors]  # where each ancestor is left
    at = number[current]
    numbers = _walked_after(found, at, dispatch, skippable)
    node, kind = current, type(current)
    while True:
        if kind in tracked:
            if stop is not None and stop.is_set():
                raise CheckStopped
            handler = on_enter[kind]
            if handler is not None:
                handler(ctx, node)
            ancestors.append(node)
            open_ends.append(ends[at])
        if not numbers:
            break
        at = numbers.pop()
        while open_ends and open_ends[-1] <= at:
            _leave(ctx, ancestors, open_ends, on_leave)
        node = nodes[at]
        kind = type(node)
        detectors = every[kind]
        if detectors is not None:
            _dispatch(node, kind, detectors, ctx, result)
    while ancestors:
        _leave(ctx, ancestors, open_ends, on_leave)


def _leave(ctx: Context, ancestors: list, open_ends: list, on_leave: dict) -> None:
    open_ends.pop()
    node = ancestors.pop()
    handler = on_leave[type(node)]
    if handler is not None:
        handler(ctx, node)


def _walked_after(
    found: FileIndex,
    start: int,
    dispatch: Dispatch,
    skippable: tuple[frozenset[type], frozenset[str]],
) -> list[int]:
    """The numbers after `start` of the nodes `_walk` stops at (those with detectors, those the
    context tracks), last first, leaving out the parts of the tree it never enters and the
    attributes no detector is keyed on (`_walk` stops at those for nothing)."""
    skip, wanted_ids = skippable
    lists = [
        numbers
        for cls, numbers in found.by_class.items()
        if (cls in dispatch or cls in _TRACKED_CLASSES)
        and cls not in skip
        and cls is not ast.Attribute  # read below, from the index's table of their names
    ]
    if ast.Name in skip:  # `Name`s are walked for the names detectors are keyed on only
        lists += [found.names[name] for name in wanted_ids if name in found.names]
    if ast.Attribute in dispatch:
        always, by_name, _ = dispatch[ast.Attribute]
        if always:
            lists.append(found.by_class.get(ast.Attribute, []))
        else:  # most attributes: no detector for their name
            lists += [found.attributes[name] for name in by_name if name in found.attributes]
    numbers = []
    for some in lists:
        numbers += some[bisect_right(some, start) :]
    numbers.sort()  # sorted runs: merged, not sorted from scratch
    unwalked = _unwalked(found, start)
    if unwalked:
        numbers = [at for at in numbers if at not in unwalked]
    numbers.reverse()
    return numbers


def _unwalked(found: FileIndex, start: int) -> set[int]:
    """The numbers after `start` of the nodes in fields the index reads and `_walk` does not
    (annotations, the names of imports)."""
    unwalked: set[int] = set()
    for cls, fields in _INDEX_ONLY_FIELDS.items():
        for at in found.by_class.get(cls, ()):
            node = found.nodes[at]
            for name in fields:
                value = getattr(node, name, None)
                for item in value if type(value) is list else (value,):
                    if item is not None:
                        first, end = found.span(item)
                        if end > start:
                            unwalked.update(range(max(first, start + 1), end))
    return unwalked


def _internal_error(
    node: ast.AST, ctx: Context, pitfall: Pitfall, error: Exception, result: CheckResult
) -> None:
    result.internal_errors.append(
        f"{ctx.path}:{getattr(node, 'lineno', 0)}: internal error in {pitfall.name}: "
        f"{type(error).__name__}: {error}"
    )


@dataclass
class FixResult:
    source: str
    fixed: int
    remaining: CheckResult


def fix_source(
    source: str,
    path: str,
    codes: frozenset[str],
    unsafe: bool,
    cells: Sequence[int] | None = None,
    project: ProjectFacts = NO_FACTS,
) -> FixResult:
    """Apply fixes until none is left; a pass whose result does not parse is not applied."""

    def parses(candidate: str, chosen: list[Finding], result: CheckResult) -> bool:
        try:
            ast.parse(candidate, filename=path)
        except (SyntaxError, ValueError) as error:
            if (
                isinstance(error, SyntaxError)
                and not _parses(source, path)
                and _repaired_tree(candidate, path, error).tree is not None
            ):
                return True  # parses as the source did: through the same repairs (Python 2)
            result.internal_errors.append(
                f"{path}: fixes by {', '.join(sorted({f.name for f in chosen}))} produced code "
                "that does not parse; left unchanged"
            )
            return False
        return True

    def check(text: str) -> CheckResult:
        return check_source(text, path, codes, cells=cells, project=project)

    return FixResult(*fix_until_stable(source, check, unsafe, MAX_FIX_PASSES, parses))
