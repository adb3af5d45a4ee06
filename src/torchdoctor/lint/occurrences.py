"""Where nodes and names occur, indexed once per file in one walk: a rule asking about the
statements after the one it looks at, every call of a scope or every use of a name reads a
slice of the index instead of walking the tree again, so that no check grows quadratically
with the size of a block or a file, and rules that each need such facts share one walk."""

from __future__ import annotations

import ast
import heapq
from bisect import bisect_left, bisect_right
from collections import defaultdict
from functools import cached_property
from operator import add, attrgetter
from typing import Iterable, Iterator

from torchdoctor.lint.context import Context, per_file

# Fields that never hold a node with a name in it: identifiers, constants, operators and the
# Load/Store markers. (`names` holds nodes only in imports; `name` only in 3.12's `type X`.)
_NO_NAMES = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "arg",
        "module",
        "level",
        "asname",
        "conversion",
        "kind",
        "is_async",
        "type_comment",
        "type_ignores",
        "kwd_attrs",
        "rest",
        "simple",
        "tag",
    }
)
_VALUE_IS_CONSTANT = (ast.Constant, ast.MatchSingleton)
# Nodes whose inside is a scope of its own: the node itself belongs to the scope around it.
SCOPES = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def node_classes() -> list[type]:
    """Every class of AST node (and the abstract ones above them)."""
    found, todo = [], [ast.AST]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _node_fields(cls: type) -> tuple[str, ...]:
    if issubclass(cls, _VALUE_IS_CONSTANT):
        return ()
    return tuple(
        f
        for f in cls._fields
        if f not in _NO_NAMES
        and (f != "name" or cls.__name__ == "TypeAlias")
        and (f != "names" or cls in (ast.Import, ast.ImportFrom))
    )


# Per node class, computed once: the fields a walk descends into; and for the classes that
# have some, a function reading them all (a tuple, or the value of the only one), and whether
# there is only one.
_FIELDS = {cls: _node_fields(cls) for cls in node_classes()}
_GETTERS = {
    cls: (attrgetter(*fields), len(fields) == 1) if fields else None
    for cls, fields in _FIELDS.items()
}


def indexed_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that the index reads (it skips those that hold no node with a
    name in it)."""
    return _FIELDS[cls]


def call_name(call: ast.Call) -> str | None:
    """The name a call is indexed by: `f` in `f(...)` and in `x.f(...)`, else None."""
    func = call.func
    kind = type(func)
    return func.attr if kind is ast.Attribute else func.id if kind is ast.Name else None


def children(node: ast.AST) -> list[ast.AST]:
    """The child nodes of `node`, as `ast.iter_child_nodes` but without operator and
    Load/Store nodes, and much faster."""
    found = []
    for name in _FIELDS[type(node)]:
        value = getattr(node, name, None)
        if type(value) is list:
            found.extend([item for item in value if item is not None])
        elif value is not None:
            found.append(value)
    return found


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    """What `call` passes by the keyword `name`, if anything."""
    return next((k.value for k in call.keywords if k.arg == name), None)


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """What `call` passes at `position`, or else by the keyword `name`."""
    if len(call.args) > position:
        return call.args[position]
    return keyword_value(call, name)


def lineage(node: ast.AST, parents) -> Iterator[tuple[ast.AST, ast.AST]]:
    """The nodes above `node`, innermost first, each with its child that `node` is under (the
    child tells which branch of an `if` holds it); `parents`: a node's parent, by node."""
    child, above = node, parents.get(node)
    while above is not None:
        yield above, child
        child, above = above, parents.get(above)


def in_other_branches(first: ast.AST, second: ast.AST, parents) -> bool:
    """`first` and `second` lie in the two branches of the lowest `if` above both: one never
    runs after the other in the same pass (a warm-up phase's training beside the main one, an
    optimizer built per mode)."""
    above = {node: child for node, child in lineage(first, parents) if type(node) is ast.If}
    for node, theirs in lineage(second, parents):
        if node in above:
            sides = {_if_branch(node, above[node]), _if_branch(node, theirs)}  # type: ignore[arg-type]
            return sides == {"body", "orelse"}
    return False


def _if_branch(owner: ast.If, child: ast.AST) -> str | None:
    """Which block of `owner` holds its child `child` (None for its test), told by position:
    the `else` block starts on a line after every statement of the body."""
    if child is owner.test:
        return None
    orelse = owner.orelse
    return "orelse" if orelse and child.lineno >= orelse[0].lineno else "body"  # type: ignore[attr-defined]


def subtree(node: ast.AST) -> list[ast.AST]:
    """`node` and the nodes under it, as `ast.walk` but depth first, without operator and
    Load/Store nodes, and much faster (no generator per node and per field): for questions
    whose answer does not depend on the order, such as a set of names or whether some node
    is there."""
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children(current))
    return found


class FileIndex:
    """Every node under some roots (a file's module, or one function, loop...) numbered in
    depth-first source order, so that the nodes under any node have consecutive numbers; with
    each node's parent and scope, and the numbers of the nodes of each class and of each name,
    in order."""

    def __init__(self, roots: list[ast.AST], scope: ast.AST | None) -> None:
        self.nodes: list[ast.AST] = []
        self.number: dict[ast.AST, int] = {}  # the number of each node
        self.above: list[int] = []  # the number of each node's parent (-1 for the roots)
        self.by_class: dict[type, list[int]] = defaultdict(list)
        self.names: dict[str, list[int]] = defaultdict(list)  # the `Name` nodes of each identifier
        self.attributes: dict[str, list[int]] = defaultdict(
            list
        )  # ... `Attribute` nodes of each name
        self.stored: dict[str, list[int]] = {}  # ... those that store or delete it
        self.declared: dict[str, list[int]] = {}  # `global`/`nonlocal` statements naming it
        # `x.add_(...)`, `x.data = ...`: attributes that may change `x` in place.
        self.changed: dict[str, list[int]] = {}
        # The calls of each name (`name(...)` and `x.name(...)`; None: calls of anything
        # else): a rule looking for a few functions reads their calls only.
        self.calls: dict[str | None, list[int]] = defaultdict(list)
        self._scope = scope  # the scope the roots belong to
        self._kept: dict[tuple[int, int], set[ast.AST]] = {}  # see `_block_scopes`
        self._statements: dict[int, int] = {}  # see `statement_of`
        self._read(roots)

    def _read(self, roots: list[ast.AST]) -> None:
        # The hottest loop of the checker after its own walk: the common cases are inlined, the
        # fields of a node are read by one call, and `number` is made at the end in one go.
        nodes, above, by_class, getters = self.nodes, self.above, self.by_class, _GETTERS
        names, stored, declared = self.names, self.stored, self.declared
        attributes, changed, calls = self.attributes, self.changed, self.calls
        todo, ups = list(reversed(roots)), [-1] * len(roots)
        pop, push, extend = todo.pop, todo.append, todo.extend
        up_pop, up_push, up_extend = ups.pop, ups.append, ups.extend
        add_node, add_above = nodes.append, above.append
        at = -1
        while todo:
            node = pop()
            at += 1
            add_node(node)
            add_above(up_pop())
            kind = type(node)
            by_class[kind].append(at)
            getter = getters[kind]  # every class is there: a subscript is not a call
            if getter is None:  # a leaf
                if kind is ast.Name:
                    names[node.id].append(at)
                    if type(node.ctx) is not ast.Load:
                        stored.setdefault(node.id, []).append(at)
                elif kind is ast.Global or kind is ast.Nonlocal:
                    for name in node.names:
                        declared.setdefault(name, []).append(at)
                continue
            if kind is ast.Attribute:
                attributes[node.attr].append(at)
                value = node.value
                if type(value) is ast.Name and (
                    node.attr.endswith("_") or type(node.ctx) is not ast.Load
                ):
                    changed.setdefault(value.id, []).append(at)
                push(value)
                up_push(at)
                continue
            if kind is ast.Call:  # `call_name`, inlined
                func = node.func
                func_kind = type(func)
                calls[
                    func.attr
                    if func_kind is ast.Attribute
                    else func.id
                    if func_kind is ast.Name
                    else None
                ].append(at)
            read, one_field = getter
            if one_field:
                value = read(node)
                if type(value) is list:
                    below = [item for item in value if item is not None]
                    below.reverse()
                    extend(below)
                    up_extend([at] * len(below))
                elif value is not None:
                    push(value)
                    up_push(at)
                continue
            below = []
            for value in read(node):
                if type(value) is list:
                    below += value
                elif value is not None:
                    below.append(value)
            if None in below:  # a `**spread` entry's missing key in a dict display
                below = [item for item in below if item is not None]
            below.reverse()
            extend(below)
            up_extend([at] * len(below))
        count = len(nodes)
        self.number = dict(zip(nodes, range(count)))
        # The size of each subtree, added up from the last node back; the roots' parent, -1,
        # adds into a last slot dropped after.
        sizes = [1] * (count + 1)
        for at, up in zip(range(count - 1, -1, -1), reversed(above)):
            sizes[up] += sizes[at]
        del sizes[count]
        self.ends = list(map(add, range(count), sizes))

    @cached_property
    def parents(self) -> _Parents:
        """The parent of every node (operators and Load/Store markers left out), as a read-only
        mapping."""
        return _Parents(self.nodes, self.number, self.above)

    @cached_property
    def scopes(self) -> list[ast.AST | None]:
        """The function, lambda, class or module each node belongs to, by number: a nested
        scope's own node belongs to the scope around it; its decorators, arguments and body
        to itself."""
        nodes, ends = self.nodes, self.ends
        scopes: list[ast.AST | None] = [self._scope] * len(nodes)
        # The nodes of a scope are the numbers after its own up to its end, but for those of
        # the scopes nested in it: each open scope fills the run up to its next nested scope
        # (that scope's own node included) in one slice, so each number is written once.
        inside: list[list] = []  # [scope, its end, its first number not yet filled]
        for at in self._numbers_of_classes(SCOPES, 0, len(nodes)):
            while inside and inside[-1][1] <= at:
                _fill(scopes, inside)
            if inside:
                open_scope = inside[-1]
                scopes[open_scope[2] : at + 1] = [open_scope[0]] * (at + 1 - open_scope[2])
                open_scope[2] = ends[at]
            inside.append([nodes[at], ends[at], at + 1])
        while inside:
            _fill(scopes, inside)
        return scopes

    def calls_named(
        self, root: ast.AST, names: Iterable[str | None], local: bool = False
    ) -> list[ast.Call]:
        """The calls of these names (see `calls`) under `root` (itself included), in source
        order; with `local`, those that belong to its scope only (as `local` reads them)."""
        start, end = self.span(root)
        nodes = [self.nodes[at] for at in self._calls_between(names, start, end)]
        return [node for node in nodes if self.is_local(root, node)] if local else nodes

    def _calls_between(self, names: Iterable[str | None], start: int, end: int) -> list[int]:
        """The numbers in [start, end) of the calls of these names, in order: looked up by
        name, or when there are more names than calls there, by reading those calls (so that
        the names of a file's functions asked about each of its loops cost no more than the
        loop's own calls)."""
        names = set(names)
        every_call = self.by_class.get(ast.Call, [])
        # Counted, not sliced: a slice of every call of the module, for each function asked
        # about, would grow with the functions times the file.
        first, last = bisect_left(every_call, start), bisect_left(every_call, end)
        if len(names) > last - first:
            nodes = self.nodes
            return [at for at in every_call[first:last] if call_name(nodes[at]) in names]
        return sorted(at for name in names for at in _between(self.calls.get(name, []), start, end))

    def is_local(self, root: ast.AST, node: ast.AST) -> bool:
        """`node` is under `root` (not `root` itself) and belongs to its scope, as `local`
        reads it."""
        start, end = self.span(root)
        at = self.number.get(node, -1)
        if not start < at < end:
            return False
        return self.scopes[at] is (root if isinstance(root, SCOPES) else self.scopes[start])

    def statement_of(self, node: ast.AST) -> ast.AST | None:
        """The innermost statement holding `node` (itself, if it is one); None above the
        statements. Remembered for each node on the way up, so that asking about every node
        of a statement climbs it once."""
        at, path, found = self.number[node], [], -1
        while at >= 0:
            if at in self._statements:
                found = self._statements[at]
                break
            path.append(at)
            if isinstance(self.nodes[at], ast.stmt):
                found = at
                break
            at = self.above[at]
        for visited in path:
            self._statements[visited] = found
        return self.nodes[found] if found >= 0 else None

    def runs_in(self, node: ast.AST) -> ast.AST | None:
        """The function (or module) `node` runs in, as `Context.enclosing_function` sees it: the
        nodes of a lambda or of a class body belong to the code around them."""
        scope = self.scopes[self.number[node]]
        while isinstance(scope, (ast.Lambda, ast.ClassDef)):
            scope = self.scopes[self.number[scope]]
        return scope

    def span(self, root: ast.AST) -> tuple[int, int]:
        """The numbers of `root` and the nodes under it: [start, end)."""
        at = self.number[root]
        return at, self.ends[at]

    def under(self, root: ast.AST, *kinds: type) -> list[ast.AST]:
        """The nodes of these classes under `root` (itself included), in source order."""
        start, end = self.span(root)
        return self._of_classes(kinds, start, end)

    def local(self, root: ast.AST, *kinds: type) -> list[ast.AST]:
        """The nodes of these classes under `root` (itself excluded) that belong to its scope
        (to `root` itself when it is a function, lambda, class or module): nested scopes are
        not entered, but their own nodes are included."""
        start, end = self.span(root)
        scope = root if isinstance(root, SCOPES) else self.scopes[start]
        scopes, nodes = self.scopes, self.nodes
        return [
            nodes[at]
            for at in self._numbers_of_classes(kinds, start + 1, end)
            if scopes[at] is scope
        ]

    def everywhere(self, *kinds: type) -> list[ast.AST]:
        """The nodes of these classes in the whole file, in source order."""
        return self._of_classes(kinds, 0, len(self.nodes))

    def in_block(
        self, statements: list[ast.stmt], *kinds: type, local: bool = False
    ) -> list[ast.AST]:
        """The nodes of these classes under consecutive statements of one block (the statements
        themselves included), in source order. With `local`, only those of the block's scope
        and of the functions and classes defined right in the block, as the loop rules have
        always read a body: the scopes nested deeper are not entered."""
        if not statements:
            return []
        start, end = self.number[statements[0]], self.ends[self.number[statements[-1]]]
        return self._in_block(statements, self._numbers_of_classes(kinds, start, end), local)

    def calls_in_block(
        self, statements: list[ast.stmt], names: Iterable[str | None], local: bool = False
    ) -> list[ast.Call]:
        """The calls of these names (see `calls`) in a block, as `in_block` reads it."""
        if not statements:
            return []
        start, end = self.number[statements[0]], self.ends[self.number[statements[-1]]]
        return self._in_block(statements, self._calls_between(names, start, end), local)

    def _in_block(
        self, statements: list[ast.stmt], numbers: list[int], local: bool
    ) -> list[ast.AST]:
        if local:
            scopes = self.scopes
            kept = self._block_scopes(statements)
            numbers = [at for at in numbers if scopes[at] in kept]
        nodes = self.nodes
        return [nodes[at] for at in numbers]

    def _block_scopes(self, statements: list[ast.stmt]) -> set[ast.AST]:
        """The block's scope and the functions and classes defined right in it; found once
        per block however many questions are asked about it."""
        key = (self.number[statements[0]], self.number[statements[-1]])
        kept = self._kept.get(key)
        if kept is None:
            kept = self._kept[key] = {
                self.scopes[key[0]],
                *(s for s in statements if isinstance(s, SCOPES)),
            }
        return kept

    def walk_order(self, node: ast.AST) -> tuple[int, int]:
        """A sort key giving the order in which a stack-based walk that pops the last node
        first (`todo.pop()`, children pushed in order) meets nodes: a node before the nodes
        under it, and of two apart, the later one first."""
        at = self.number[node]
        return -self.ends[at], at

    def names_in(self, root: ast.AST, name: str) -> list[ast.Name]:
        """The `Name` nodes of `name` under `root`, in source order."""
        start, end = self.span(root)
        found = self.names.get(name, [])
        return [self.nodes[at] for at in found[bisect_left(found, start) : bisect_left(found, end)]]

    def assignments(self, root: ast.AST, name: str, attribute: bool = False) -> list[ast.Assign]:
        """The `Assign` statements under `root` with `name` as one of their targets (`name =
        ...`; with `attribute`, `x.name = ...`; never `a, name = ...`), each once, in source
        order."""
        found = {}
        nodes, above = self.nodes, self.above
        for at in self.numbers_in(self.attributes if attribute else self.stored, root, name):
            up = above[at]
            statement = nodes[up] if up >= 0 else None
            # A name stored under an assignment is one of its targets; an attribute may be read.
            if type(statement) is ast.Assign and type(nodes[at].ctx) is not ast.Load:
                found[up] = statement
        return list(found.values())

    def numbers_in(self, table: dict[str, list[int]], root: ast.AST, name: str) -> list[int]:
        """The numbers of `table[name]` (`names`, `stored`, `attributes`...) under `root`."""
        start, end = self.span(root)
        return _between(table.get(name, []), start, end)

    def _of_classes(self, kinds: tuple[type, ...], start: int, end: int) -> list[ast.AST]:
        nodes = self.nodes
        return [nodes[at] for at in self._numbers_of_classes(kinds, start, end)]

    def _numbers_of_classes(self, kinds: tuple[type, ...], start: int, end: int) -> list[int]:
        if len(kinds) == 1:
            return _between(self.by_class.get(kinds[0], []), start, end)
        return sorted(
            at for kind in kinds for at in _between(self.by_class.get(kind, []), start, end)
        )


class _Parents:
    """The parents of an index's nodes, found from their numbers when asked: a dictionary of
    every node's parent would cost more to build than most files ever ask of it. It holds the
    index's tables, not the index: a cycle through the index would leave the whole tree to the
    cyclic garbage collector, which walks it again before freeing it."""

    __slots__ = ("_nodes", "_number", "_above")

    def __init__(self, nodes: list[ast.AST], number: dict[ast.AST, int], above: list[int]) -> None:
        self._nodes, self._number, self._above = nodes, number, above

    def __getitem__(self, node: ast.AST) -> ast.AST:
        up = self._above[self._number[node]]
        if up < 0:
            raise KeyError(node)  # a root
        return self._nodes[up]

    def get(self, node: ast.AST, default: ast.AST | None = None) -> ast.AST | None:
        try:
            return self[node]
        except KeyError:
            return default


def _fill(scopes: list[ast.AST | None], inside: list[list]) -> None:
    """Close the innermost open scope (see `FileIndex.scopes`): the rest of its numbers are its."""
    scope, end, first = inside.pop()
    scopes[first:end] = [scope] * (end - first)
    if inside:
        inside[-1][2] = end


def _between(numbers: list[int], start: int, end: int) -> list[int]:
    return numbers[bisect_left(numbers, start) : bisect_left(numbers, end)]


def _numbers(table: dict[str, list[int]], name: str, start: int, end: int) -> Iterator[int]:
    """The numbers of `table[name]` in [start, end), one at a time (a caller may stop early)."""
    numbers = table.get(name, [])
    for at in range(bisect_left(numbers, start), bisect_left(numbers, end)):
        yield numbers[at]


class _Indexes:
    """The indexes of one file: the whole file's, built on the first question that needs it;
    until then, its statements alone."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.whole: FileIndex | None = None
        self.statements: list[ast.AST] | None = None


@per_file
def _indexes(ctx: Context) -> _Indexes:
    return _Indexes(ctx.tree)


def index(ctx: Context) -> FileIndex:
    """The whole file's index."""
    found = _indexes(ctx)
    if found.whole is None:
        found.whole = ctx.file_index = FileIndex([ctx.tree], ctx.tree)
    return found.whole


def index_of(ctx: Context, root: ast.AST) -> FileIndex:
    """An index holding `root` and the nodes under it: the whole file's. Reading only the
    function or loop asked about costs less once, but rules ask about most of them, and once
    the whole file is read the rest of the walk skips the nodes no rule stops at: the whole
    file's index first made checks 4 % faster on timm and kornia, 25 % on the file of
    benchmarks/bench_server.py (docs/benchmarks.md)."""
    return index(ctx)


def statements(ctx: Context, *kinds: type) -> list[ast.AST]:
    """The statements (or `except` handlers, `case`s) of these classes anywhere in the file, in
    source order; read by a walk that skips expressions, until the whole file's index exists."""
    found = _indexes(ctx)
    if found.whole is not None:
        return found.whole.everywhere(*kinds)
    if found.statements is None:
        found.statements = []
        todo = [ctx.tree]
        while todo:
            node = todo.pop()
            found.statements.append(node)
            for name in ("cases", "finalbody", "orelse", "handlers", "body"):
                block = getattr(node, name, None)
                if type(block) is list:
                    todo.extend(reversed(block))
    return [node for node in found.statements if type(node) in kinds]


class BlockNames:
    """Which statements of one block (a statement list) use each name, and how."""

    def __init__(self, block: list[ast.stmt], index: FileIndex) -> None:
        self.block = block
        self.index = index  # the index it reads, which holds the parents of its nodes
        self._starts = [index.number[statement] for statement in block]
        self._end = index.ends[self._starts[-1]] if block else 0
        # Plain `name = value` statements (one target).
        self._assigned: dict[str, list[int]] = {}
        for position, statement in enumerate(block):
            if (
                type(statement) is ast.Assign
                and len(statement.targets) == 1
                and type(statement.targets[0]) is ast.Name
            ):
                self._assigned.setdefault(statement.targets[0].id, []).append(position)

    def mentions_after(self, name: str, index: int) -> Iterator[tuple[int, list[ast.Name]]]:
        """(position, `Name` nodes of `name` in it) for each later statement that mentions it
        (a `Name` node anywhere in it, or a global/nonlocal declaration), in order."""
        if index + 1 >= len(self.block):
            return
        start, end, nodes = self._starts[index + 1], self._end, self.index.nodes
        uses = ((at, nodes[at]) for at in _numbers(self.index.names, name, start, end))
        declarations = ((at, None) for at in _numbers(self.index.declared, name, start, end))
        position, found = None, []
        for at, node in heapq.merge(uses, declarations, key=lambda item: item[0]):
            here = bisect_right(self._starts, at) - 1
            if here != position:
                if position is not None:
                    yield position, found
                position, found = here, []
            if node is not None:
                found.append(node)
        if position is not None:
            yield position, found

    def last_bound_before(self, name: str, index: int) -> int | None:
        """The last statement before `index` that binds `name` (assigns, deletes, loops over
        it, declares it global...)."""
        return self._last_before(index, self.index.stored, self.index.declared, name=name)

    def last_changed_before(self, name: str, index: int) -> int | None:
        """The last statement before `index` that binds `name` or changes it in place."""
        return self._last_before(
            index, self.index.stored, self.index.declared, self.index.changed, name=name
        )

    def last_assigned_before(self, name: str, index: int) -> int | None:
        """The last plain `name = value` statement before `index`."""
        found = self._assigned.get(name, [])
        at = bisect_left(found, index)
        return found[at - 1] if at else None

    def _last_before(self, index: int, *tables: dict[str, list[int]], name: str) -> int | None:
        if not self.block:
            return None
        # `index` may be the block's length: before its end, every statement counts.
        start = self._starts[0]
        end = self._starts[index] if index < len(self._starts) else self._end
        last = None
        for table in tables:
            numbers = table.get(name, [])
            at = bisect_left(numbers, end)
            if at and numbers[at - 1] >= start and (last is None or numbers[at - 1] > last):
                last = numbers[at - 1]
        return None if last is None else bisect_right(self._starts, last) - 1


class BlockKey(int):
    """A statement list as a memo key (of `per_file` functions): lists are compared by
    identity, never by content. The key is the list's id, an int, so that hashing and comparing
    it call no Python method (rules ask per node); it holds the list, whose id therefore
    stays its own while the key lives."""

    block: list[ast.stmt]

    def __new__(cls, block: list[ast.stmt]) -> BlockKey:
        key = super().__new__(cls, id(block))
        key.block = block
        return key


def block_names(ctx: Context, block: list[ast.stmt]) -> BlockNames:
    """The names of a block of the statement being checked (or of the module)."""
    return _block_names(ctx, BlockKey(block))


@per_file
def _block_names(ctx: Context, key: BlockKey) -> BlockNames:
    block = key.block
    owner = next(
        (
            node
            for node in reversed(ctx.ancestors)
            if any(getattr(node, field, None) is block for field in _BLOCKS)
        ),
        None,
    )
    return BlockNames(block, index_of(ctx, owner) if owner is not None else index(ctx))


_BLOCKS = ("body", "orelse", "finalbody")


def first_in_walk(ctx: Context, root: ast.AST, nodes: list[ast.AST]) -> ast.AST:
    """The one of `nodes` (all under `root`) that `ast.walk(root)` yields first: rules that
    once scanned a statement breadth-first keep their choice among several candidates."""
    if len(nodes) == 1:
        return nodes[0]
    order = _walk_order(ctx, root)
    return min(nodes, key=order.__getitem__)


@per_file
def _walk_order(ctx: Context, root: ast.AST) -> dict[ast.AST, int]:
    return {node: rank for rank, node in enumerate(ast.walk(root))}
