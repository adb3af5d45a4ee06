"""TD301 deprecated-iterator-next: `it.next()` on a DataLoader iterator, gone since PyTorch 1.13."""

from __future__ import annotations

import ast
from functools import partial
from typing import Iterator

from torchdoctor.catalog.sdk import (
    is_self_attribute,
    Clue,
    Context,
    FileIndex,
    Finding,
    Kind,
    Pitfall,
    bindings,
    index,
    in_compat_fallback,
    index_of,
    is_parameter,
    lazy_compile,
    makes_generator,
    passed_values,
    per_file,
    reaching_assignment,
    shorten,
)

# Messages quote at most 40 characters of source.
_short = partial(shorten, limit=40)

PITFALL = Pitfall(
    code="TD301",
    name="deprecated-iterator-next",
    title={
        "en": "Python 2 style `.next()` on a DataLoader iterator",
        "zh": "在 DataLoader 迭代器上使用 Python 2 风格的 `.next()`",
    },
    messages={
        "": {
            "en": "DataLoader iterators have no `.next()` method since PyTorch 1.13: use `next({iterator})`",
            "zh": "自 PyTorch 1.13 起 DataLoader 迭代器没有 `.next()` 方法：请改用 `next({iterator})`",
        },
        "any": {
            "en": "`.next()` is the Python 2 iterator method: Python 3 iterators have none "
            "(DataLoader iterators dropped theirs in PyTorch 1.13): use `next({iterator})`",
            "zh": "`.next()` 是 Python 2 的迭代器方法：Python 3 的迭代器没有它（DataLoader 迭代器在 "
            "PyTorch 1.13 中也去掉了）：请改用 `next({iterator})`",
        },
    },
    fix_title={"en": "Use the built-in `next(...)`", "zh": "改用内置函数 `next(...)`"},
    fix_applicability="safe",
    fix_hint={
        "en": "Call the built-in `next(it)` instead of `it.next()` (the Python 2 method "
        "was removed from DataLoader iterators in PyTorch 1.13).",
        "zh": "把 `it.next()` 改为内置函数 `next(it)`（PyTorch 1.13 已从 DataLoader "
        "迭代器上移除了这个 Python 2 风格的方法）。",
    },
    docs={
        "en": """
## What it catches
`.next()` called on an iterator: `iter(loader).next()`, `loader.__iter__().next()`, a
DataLoader's `loader._get_iterator().next()`, or
`it.next()` where every assignment to `it` (or to `self.it` in the class, or its place in
`a, b = iter(x), iter(y)`) is such an iterator, or a generator (a generator expression, or a
call of an undecorated function of the file that yields: `gen = inf_train_gen()`); or a
parameter that every call of its function in the file passes such an iterator (`batches =
iter(loader)`, then `first_image(batches)`), or that its function itself rebinds only to such
iterators (`try: batch = data_iterator.next()`, `except StopIteration: data_iterator =
iter(data_generator)`); or the variable of a loop over a `self.` list that
holds only such iterators (`for i, it in enumerate(self.iter_list)`, the list made empty or of
`iter(...)`s and appended only `iter(...)`s in the class), or an item of that list
(`self.iter_list[i].next()`). A
DataLoader's gets the DataLoader message; any other (`iter(batches).next()` over a parameter,
a list...) fails the same way in Python 3, whose iterators have no `.next()`, and gets a
general one.

A call in a branch kept for Python 2 (`if PY3: next(it) else: it.next()`, or the `except`
of `try: it.__next__()` / `next(it)` on the same iterator) or for an old torch is not
reported: Python 3 never runs it (or only to fail where the Python 3 call failed already).
Other objects have `.next()` methods of their own, so
receivers that are not made by `iter()`
or `__iter__()` are not reported, nor is anything in a file that defines its own iterator
class with `__iter__` and `next` (a Python-2-compatible one; also `next = __next__`).

## Why is this bad?
`.next()` is the Python 2 iterator protocol. DataLoader iterators kept a `next` alias for
Python 2 until PyTorch 1.13 removed it; since then the line fails with an `AttributeError`.
The pattern is everywhere in older tutorials, often in the "fetch one batch to look at it"
cell or inside a `try/except StopIteration` loop that restarts an iterator, so it tends to
break an otherwise working script halfway through training.

## Symptoms
`AttributeError: '_SingleProcessDataLoaderIter' object has no attribute 'next'`, or with
`num_workers > 0`: `AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute 'next'`.
(Before PyTorch 1.3 the iterator class was `_DataLoaderIter`.)

## Fix safety
`next(it)` calls the iterator's `__next__`, which is what the old `next` alias called. The
fix is safe and offered only when the file does not define anything called `next` itself.

## Known problems
Iterators passed in as parameters from other files, or stored in containers other than lists
of them, are not followed. Those `enumerate()`, `zip()`, `map()`, `filter()` and `reversed()`
make are (`seq_iter = enumerate(scores)`), with the general message.
""",
        "zh": """
## What it catches
在迭代器上调用 `.next()`：`iter(loader).next()`、`loader.__iter__().next()`、DataLoader 的
`loader._get_iterator().next()`，或者 `it.next()`，
且对 `it`（或类中的 `self.it`，或 `a, b = iter(x), iter(y)` 中对应位置）的每一次赋值都是这样的迭代器，
或者是生成器（生成器表达式，或调用本文件中没有装饰器、带 `yield` 的函数：`gen = inf_train_gen()`）；
也包括这样的函数参数：本文件中对该函数的每次调用都传入这样的迭代器（`batches = iter(loader)`，
然后 `first_image(batches)`），或函数自己只把它重新绑定为这样的迭代器（`try: batch = data_iterator.next()`，
`except StopIteration: data_iterator = iter(data_generator)`）；或者遍历只装着这种迭代器的 `self.` 列表的循环变量
（`for i, it in enumerate(self.iter_list)`，类中只把该列表设为空列表或 `iter(...)` 组成的列表，
且只向它追加 `iter(...)`），或者该列表的元素（`self.iter_list[i].next()`）。
DataLoader 的迭代器给出 DataLoader 的说明；其他迭代器（对参数、列表调用 `iter(...)` 等）在 Python 3
中同样会失败——Python 3 的迭代器都没有 `.next()`——给出通用的说明。

为 Python 2（`if PY3: next(it) else: it.next()`，或者同一个迭代器上 `try: it.__next__()` / `next(it)` 的
`except` 分支）或旧版 torch 保留的分支中的调用不会报告：Python 3 从不执行它
（或者只在 Python 3 的写法已经失败时才执行）。
很多其他对象也有自己的 `.next()` 方法，所以不是由 `iter()` 或 `__iter__()` 得到的接收者不会被报告；
文件中自己定义了带 `__iter__` 和 `next` 的迭代器类（兼容 Python 2；也包括 `next = __next__`）时也不报告。

## Why is this bad?
`.next()` 是 Python 2 的迭代器协议。DataLoader 迭代器为了兼容 Python 2 保留了 `next` 这个别名，
直到 PyTorch 1.13 把它删掉；从那以后这一行会直接抛出 `AttributeError`。老教程里到处是这种写法，
常见于“取一个 batch 看看”的代码，或者在 `try/except StopIteration` 中重建迭代器的循环里，
所以往往是原本能跑的脚本在训练到一半时突然崩溃。

## Symptoms
`AttributeError: '_SingleProcessDataLoaderIter' object has no attribute 'next'`；当 `num_workers > 0` 时为
`AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute 'next'`。（PyTorch 1.3
之前迭代器类名为 `_DataLoaderIter`。）

## Fix safety
`next(it)` 调用迭代器的 `__next__`，旧的 `next` 别名调用的也正是它。该修复是安全的，
且只在文件自己没有定义名为 `next` 的东西时提供。

## Known problems
从其他文件作为参数传入的迭代器，或存放在（迭代器列表以外的）容器中的迭代器不会被追踪。
由 `enumerate()`、`zip()`、`map()`、`filter()`、`reversed()` 得到的迭代器会被追踪
（`seq_iter = enumerate(scores)`），使用通用的提示信息。
""",
    },
    example="""
from torch.utils.data import DataLoader

loader = DataLoader(list(range(10)), batch_size=2)
it = iter(loader)
batch = it.next()
""",
    use_instead="""
from torch.utils.data import DataLoader

loader = DataLoader(list(range(10)), batch_size=2)
it = iter(loader)
batch = next(it)
""",
    # A helper module of a project that trains with torch may preview a batch without
    # importing torch itself (facegen-dcgan's `display.py`).
    needs_torch=False,
)

_ITERATOR_CAUSE = {
    "en": "`.next()` was called on a DataLoader iterator ({iterator}); that Python 2 "
    "alias was removed in PyTorch 1.13.",
    "zh": "在 DataLoader 迭代器（{iterator}）上调用了 `.next()`；这个 Python 2 风格的别名已在 "
    "PyTorch 1.13 中移除。",
}
PITFALL.error(
    r"'(?P<iterator>_SingleProcessDataLoaderIter|_MultiProcessingDataLoaderIter|_DataLoaderIter)'"
    r" object has no attribute 'next'",
    types=("AttributeError",),
    confidence=0.95,
    cause=_ITERATOR_CAUSE,
)

# The message cut before the attribute's name (a paste, a log line limit): the failing line
# the traceback shows then says which attribute it was.
_CUT_MESSAGE = lazy_compile(
    r"'(?P<iterator>_SingleProcessDataLoaderIter|_MultiProcessingDataLoaderIter|_DataLoaderIter)'"
    r" object has no attribute '?\s*$"
)
_NEXT_CALL = lazy_compile(r"\.next\(\s*\)")


@PITFALL.error_check(types=("AttributeError",), words=("dataloaderiter",))
def cut_message(block, report) -> Clue | None:
    found = _CUT_MESSAGE.search(block.message)
    if found is None or not block.frames:
        return None
    if not _NEXT_CALL.search(block.frames[-1].source or ""):
        return None  # another attribute, or a line the traceback does not show
    return Clue(0.9, _ITERATOR_CAUSE, None, found.groupdict())


# An issue telling of it in prose, the message only in a screenshot: the failing line quoted
# (`images, labels = dataiter.next()`, `iter(loader).next()`) and the error named.
_ITERATOR_NEXT = lazy_compile(
    r"(?<![\w.])(?:\w{0,40}iter\w{0,40}|iter\([^()\n]{1,120}\))\.next\(\s*\)"
)


_RETOLD_CAUSE = {
    "en": "`{call}` calls the Python 2 iterator method `.next()`: Python 3 iterators have only "
    "`__next__`, and PyTorch 1.13 removed the alias that DataLoader iterators kept.",
    "zh": "`{call}` 调用了 Python 2 的迭代器方法 `.next()`：Python 3 的迭代器只有 `__next__`，"
    "DataLoader 迭代器保留的这个别名也已在 PyTorch 1.13 中移除。",
}


@PITFALL.error_check(types=(), words=(".next(",))
def retold_next_call(block, report) -> Clue | None:
    if report.exceptions:  # a message printed: its own signatures read it
        return None
    found = report.search(_ITERATOR_NEXT)
    if found is None or "AttributeError" not in report.text:
        return None
    return Clue(0.8, _RETOLD_CAUSE, None, {"call": found.group(0)})


# `.next()` on any other Python 3 iterator (`model.parameters().next()`, a generator, `map`,
# `zip`, a list's iterator): Python 2 code, whatever the iterator.
PITFALL.error(
    r"'(?P<iterator>generator|map|filter|zip|enumerate|\w{0,40}iterator)' object has no "
    r"attribute 'next'",
    types=("AttributeError",),
    confidence=0.9,
    cause={
        "en": "`.next()` was called on a `{iterator}` object: that is the Python 2 iterator "
        "method; Python 3 iterators have only `__next__`, called by the built-in `next(it)`.",
        "zh": "在 `{iterator}` 对象上调用了 `.next()`：这是 Python 2 的迭代器方法；Python 3 的迭代器只有 "
        "`__next__`，由内置函数 `next(it)` 调用。",
    },
)

PITFALL.error(
    r"'DataLoader' object has no attribute 'next'",
    types=("AttributeError",),
    confidence=0.9,
    cause={
        "en": "`.next()` was called on the DataLoader itself: Python 3 objects have no "
        "`.next()` method (old tutorials called it on the loader's iterator, where PyTorch "
        "1.13 removed it too).",
        "zh": "在 DataLoader 本身上调用了 `.next()`：Python 3 的对象没有 `.next()` 方法（旧教程在"
        "加载器的迭代器上调用它，PyTorch 1.13 也已把那个别名移除）。",
    },
    fix={
        "en": "Take one batch with `batch = next(iter(loader))`, or loop with "
        "`for batch in loader:`.",
        "zh": "用 `batch = next(iter(loader))` 取一个批次，或用 `for batch in loader:` 循环。",
    },
)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)


@PITFALL.static(ast.Call, names={"next"})
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    func = call.func
    # A DataLoader is only known through an import of torch, in this file or in the project
    # that trains with it (a helper module previewing `iter(dataloader).next()`): nothing to
    # trace otherwise.
    if not isinstance(func, ast.Attribute) or call.args or call.keywords:
        return
    if not (ctx.imports_torch or ctx.project.has("trains")):
        return
    iterator = func.value
    iterated = _iterated(iterator, ctx)
    if iterated is None or in_compat_fallback(ctx):
        return  # `if PY3: next(it) else: it.next()`: the branch Python 3 never runs
    text = ctx.text(iterator)
    if _fallback_of_next(ctx, text):
        return
    fix = None
    if not _binds(ctx, "next"):
        fix = ctx.fix(PITFALL, "safe", ctx.replace(call, f"next({text})"))
    variant = "" if all(ctx.kind_of(value) is Kind.LOADER for value in iterated) else "any"
    if variant and _defines_next_method(ctx):
        return  # the file's own iterator class may have a `next` method
    yield ctx.finding(PITFALL, call, variant, fix=fix, iterator=_short(text))


def _fallback_of_next(ctx: Context, iterator: str) -> bool:
    """The call is in an `except` handler of a `try` whose body advances the same iterator the
    Python 3 way (`try: it.__next__()` / `next(it)` `except: it.next()`): a fallback for
    Python 2 that Python 3 reaches only when the iterator is exhausted."""
    ancestors = ctx.ancestors
    for at in range(len(ancestors) - 1, 0, -1):
        handler, above = ancestors[at], ancestors[at - 1]
        if type(handler) is ast.ExceptHandler and type(above) is ast.Try:
            return iterator in _advanced_in(ctx, above)
    return False


@per_file
def _advanced_in(ctx: Context, guarded: ast.Try) -> frozenset[str]:
    """The iterators the body of `guarded` advances the Python 3 way; read once per `try`."""
    found = (
        _advanced(node, ctx)
        for statement in guarded.body
        for node in ast.walk(statement)
        if type(node) is ast.Call
    )
    return frozenset(text for text in found if text is not None)


def _advanced(call: ast.Call, ctx: Context) -> str | None:
    """The text of the iterator `it.__next__()` or `next(it)` advances."""
    func = call.func
    if type(func) is ast.Attribute and func.attr == "__next__" and not call.args:
        return ctx.text(func.value)
    if type(func) is ast.Name and func.id == "next" and call.args:
        return ctx.text(call.args[0])
    return None


def _iterated(expr: ast.AST, ctx: Context) -> list[ast.AST] | None:
    """What `expr` iterates when it is `iter(x)` / `x.__iter__()`, or a name or `self.`
    attribute only ever assigned such iterators; None otherwise."""
    if isinstance(expr, ast.Call):
        values = [expr]
    elif isinstance(expr, ast.Name):
        values = _name_assignments(expr.id, ctx)
        function = ctx.enclosing_function()
        if values is None and function is not None and is_parameter(function, expr.id):
            values = _passed_iterators(ctx, function, expr.id) or _own_iterators(
                ctx, function, expr.id
            )
    elif is_self_attribute(expr):
        values = _self_attribute_assignments(expr.attr, ctx)
    elif isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
        # `iters[j].next()` after `iters = [iter(loader) for loader in loaders]`
        found = reaching_assignment(
            expr.value.id, ctx, lambda value: _iterators_listed(value, ctx) is not None, expr.value
        )
        if found is None:
            return _entries_set_to_iterators(expr.value.id, ctx)
        return _iterators_listed(found[0].value, ctx)
    elif isinstance(expr, ast.Subscript) and is_self_attribute(expr.value):
        # `self.iter_list[i].next()`, the list holding only iterators
        cls = ctx.enclosing_class()
        return None if cls is None else _iterators_held(ctx, cls, expr.value.attr)  # type: ignore[attr-defined]
    else:
        return None
    iterated = [_iterated_by(value, ctx) for value in values or ()]
    if iterated and None not in iterated:
        return iterated
    if isinstance(expr, ast.Name) and values is None:
        listed = _loop_over_iterators(expr.id, ctx)
        if listed is not None:
            return listed
    if isinstance(expr, ast.Name):  # bound otherwise too: what reaches this statement
        found = reaching_assignment(
            expr.id, ctx, lambda value: _iterated_by(value, ctx) is not None, expr
        )
        if found is not None:
            return [_iterated_by(found[0].value, ctx)]
    return None


def _entries_set_to_iterators(name: str, ctx: Context) -> list[ast.AST] | None:
    """What the entries of `name` iterate when the enclosing function sets some of them, and
    only ever to iterators (vilbert's `task_iter_train[task_id] = iter(loaders[task_id])`,
    then `task_iter_train[task_id].next()`); None otherwise."""
    function = ctx.enclosing_function()
    if function is None:
        return None
    return _entry_iterators(ctx, function).get(name)


@per_file
def _entry_iterators(ctx: Context, function: ast.AST) -> dict[str, list[ast.AST] | None]:
    """For each name whose entries `function` sets (`name[key] = ...`), what those entries
    iterate when each is set to an iterator, else None; read once per function."""
    found: dict[str, list[ast.AST] | None] = {}
    for node in index(ctx).under(function, ast.Assign):
        for target in node.targets:  # type: ignore[attr-defined]
            if type(target) is not ast.Subscript or type(target.value) is not ast.Name:
                continue
            name = target.value.id
            made = _iterated_by(node.value, ctx)  # type: ignore[attr-defined]
            iterated = found.setdefault(name, [])
            if made is None or iterated is None:
                found[name] = None
            else:
                iterated.append(made)
    return found


def _loop_over_iterators(name: str, ctx: Context) -> list[ast.AST] | None:
    """What the iterators iterate when `name` is the variable of a loop around the call over a
    `self.` attribute holding only iterators (`for i, it in enumerate(self.iter_list)`, the
    list made empty or of `iter(...)`s and appended only `iter(...)`s in the class: EasyOCR's
    balanced batches); None otherwise."""
    for node in reversed(ctx.ancestors):
        if isinstance(node, _FUNCTIONS):
            return None
        if type(node) is not ast.For:
            continue
        target, iterable = node.target, node.iter
        if (
            type(target) is ast.Tuple
            and len(target.elts) == 2
            and type(iterable) is ast.Call
            and type(iterable.func) is ast.Name
            and iterable.func.id == "enumerate"
            and len(iterable.args) == 1
        ):
            target, iterable = target.elts[1], iterable.args[0]
        if type(target) is not ast.Name or target.id != name:
            continue
        cls = ctx.enclosing_class()
        if cls is None or not is_self_attribute(iterable):
            return None
        return _iterators_held(ctx, cls, iterable.attr)  # type: ignore[attr-defined]
    return None


@per_file
def _iterators_held(ctx: Context, cls: ast.ClassDef, attr: str) -> list[ast.AST] | None:
    """What the iterators `self.attr` holds iterate, when the class assigns it only empty lists
    or lists of iterators and appends to it only iterators; None otherwise."""
    assigned = _class_attribute_assignments(ctx, cls, attr)
    if not assigned:
        return None
    iterated: list[ast.AST] = []
    for value in assigned:
        if isinstance(value, ast.List) and not value.elts:
            continue
        listed = _iterators_listed(value, ctx)
        if listed is None:
            return None
        iterated.extend(listed)
    for call in index_of(ctx, cls).calls_named(cls, ("append", "extend", "insert")):
        func = call.func
        if not (isinstance(func, ast.Attribute) and is_self_attribute(func.value)):
            continue
        if func.value.attr != attr:  # type: ignore[attr-defined]
            continue
        if func.attr != "append" or len(call.args) != 1:
            return None  # `extend`, `insert`: what they add is not followed
        element = _iterated_by(call.args[0], ctx)
        if element is None:
            return None
        iterated.append(element)
    return iterated or None


def _iterators_listed(value: ast.expr, ctx: Context) -> list[ast.AST] | None:
    """What the iterators of a list of them iterate: `[iter(x) for x in loaders]`, `[iter(a),
    iter(b)]`; None for any other value."""
    if isinstance(value, ast.ListComp):
        elements = [value.elt]
    elif isinstance(value, (ast.List, ast.Tuple)) and value.elts:
        elements = value.elts
    else:
        return None
    iterated = [_iterated_by(element, ctx) for element in elements]
    return None if None in iterated else iterated


@per_file
def _own_iterators(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> list[ast.expr] | None:
    """What the function itself rebinds its parameter to, when that is only iterators: it
    treats what it is given as one (meta-learning-adjusting-priors' `get_next_batch_cyclic`:
    `data_iterator.next()`, then `data_iterator = iter(data_generator)` once it is exhausted)."""
    values = [
        b.value for b in bindings(ctx, function, parameter) or () if type(b.node) is not ast.arg
    ]
    if not values or any(value is None or _iterated_by(value, ctx) is None for value in values):
        return None
    return values  # type: ignore[return-value]


def _passed_iterators(
    ctx: Context, function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> list[ast.expr] | None:
    """What the calls of `function` in the file pass for `parameter`, seen through the names
    they pass (`batches = iter(loader)`, then `take(batches)`), when the function never
    rebinds it; None when some value cannot be followed, or no call is seen."""
    found = index(ctx)
    if any(
        not isinstance(node.ctx, ast.Load) and found.scopes[found.number[node]] is function
        for node in found.names_in(function, parameter)
    ):
        return None  # rebound in the function
    passed = passed_values(ctx, function, parameter)
    if not passed:
        return None
    values: list[ast.expr] = []
    for call, value in passed:
        if isinstance(value, ast.Name):
            caller = found.scopes[found.number[call]] or ctx.tree
            assigned = _scope_assignments(ctx, caller).of_name(value.id)
            if not assigned:
                return None
            values.extend(assigned)
        else:
            values.append(value)
    return values


# Built-ins that return an iterator in Python 3 (in Python 2, `zip`, `map` and `filter` made
# lists, which had no `.next()` either).
_BUILTIN_ITERATORS = frozenset({"enumerate", "zip", "map", "filter", "reversed"})


def _iterated_by(value: ast.AST, ctx: Context) -> ast.AST | None:
    """`x` of `iter(x)` or `x.__iter__()`: a Python 3 iterator, whose `.next()` is gone; a
    generator is its own (`gen = inf_train_gen()`, a function of the file that yields)."""
    if makes_generator(value, ctx):
        return value
    if not isinstance(value, ast.Call) or value.keywords:
        return None
    func = value.func
    if isinstance(func, ast.Name) and func.id == "iter" and len(value.args) == 1:
        return None if _binds(ctx, "iter") and _shadowed_at(ctx, "iter", value) else value.args[0]
    if isinstance(func, ast.Name) and func.id in _BUILTIN_ITERATORS and value.args:
        # `seq_iter = enumerate(scores)` (LatticeLSTM's CRF): an iterator of its own, whatever
        # it goes over (the general message: no DataLoader's).
        return None if _binds(ctx, func.id) and _shadowed_at(ctx, func.id, value) else value
    if isinstance(func, ast.Attribute) and func.attr == "__iter__" and not value.args:
        return func.value
    if (
        isinstance(func, ast.Attribute)
        and func.attr == "_get_iterator"
        and not value.args
        and ctx.kind_of(func.value) is Kind.LOADER
    ):
        return func.value  # a DataLoader's own iterator, made the private way
    return None


@per_file
def _defines_next_method(ctx: Context) -> bool:
    """A class of the file has `__iter__` and `next` methods: a Python-2-compatible iterator
    of its own, which `iter(...)` may return; `next = __next__` in the class body counts (CDP's
    `CIFAR_INPUT_ITER`)."""
    for cls in index(ctx).under(ctx.tree, ast.ClassDef):
        methods = {node.name for node in cls.body if isinstance(node, _FUNCTIONS)}
        methods.update(
            target.id
            for node in cls.body
            if type(node) is ast.Assign
            for target in node.targets
            if type(target) is ast.Name
        )
        if {"__iter__", "next"} <= methods:
            return True
    return False


def _name_assignments(name: str, ctx: Context) -> list[ast.expr] | None:
    """What `name` is assigned in the scope it belongs to; None when bound in another way."""
    function = ctx.enclosing_function()
    if function is not None:
        values = _scope_assignments(ctx, function).of_name(name)
        if values != []:  # bound in the function (or in a way we can't follow)
            return values
    return _scope_assignments(ctx, ctx.tree).of_name(name)


def _self_attribute_assignments(attr: str, ctx: Context) -> list[ast.expr] | None:
    cls = ctx.enclosing_class()
    return None if cls is None else _class_attribute_assignments(ctx, cls, attr)


@per_file
def _class_attribute_assignments(
    ctx: Context, cls: ast.ClassDef, attr: str
) -> list[ast.expr] | None:
    """What the methods of `cls` assign to `self.attr`; None when it is bound another way."""
    values: list[ast.expr] = []
    for method in cls.body:
        if isinstance(method, _FUNCTIONS):
            found = _scope_assignments(ctx, method).of_attribute(attr)
            if found is None:
                return None
            values.extend(found)
    return values


class _Assignments:
    """The plain `target = value` assignments of one scope (nested scopes excluded), looked up
    one name or `self.` attribute at a time, and how else names are bound there."""

    def __init__(self, scope: ast.AST, found: FileIndex) -> None:
        self._scope, self._found = scope, found
        # Names bound as parameters, by imports, `global`, definitions.
        self.otherwise = {
            name for node in found.local(scope, *_OTHER_BINDERS) for name in _bound_otherwise(node)
        }
        self._attributes: dict[str, list[ast.Attribute]] | None = None

    def of_name(self, name: str) -> list[ast.expr] | None:
        """Values of the plain `name = value`; None when `name` is also bound any other way:
        a parameter, a loop, a tuple, `global`..."""
        if name in self.otherwise:
            return None
        found = self._found
        return _plain(
            [
                node
                for node in found.names_in(self._scope, name)
                if not isinstance(node.ctx, ast.Load)
                and found.scopes[found.number[node]] is self._scope
            ],
            found.parents,
        )

    def of_attribute(self, attr: str) -> list[ast.expr] | None:
        """Values of the plain `self.attr = value`; None when it is also bound another way."""
        if self._attributes is None:
            self._attributes = {}
            for node in self._found.local(self._scope, ast.Attribute):
                if not isinstance(node.ctx, ast.Load) and is_self_attribute(node):
                    self._attributes.setdefault(node.attr, []).append(node)
        return _plain(self._attributes.get(attr, []), self._found.parents)


def _plain(targets: list[ast.AST], parents: dict) -> list[ast.expr] | None:
    """The values assigned to `targets` (the stores of one name) when each is the one target
    of an assignment."""
    values = []
    for target in targets:
        parent = parents[target]
        if isinstance(parent, ast.Assign) and parent.targets == [target]:
            values.append(parent.value)
            continue
        # `a, b = iter(x), iter(y)`: the element at the same place.
        statement = parents.get(parent)
        if (
            isinstance(parent, ast.Tuple)
            and isinstance(statement, ast.Assign)
            and statement.targets == [parent]
            and isinstance(statement.value, ast.Tuple)
            and len(statement.value.elts) == len(parent.elts)
            and not any(isinstance(e, ast.Starred) for e in parent.elts)
        ):
            values.append(statement.value.elts[parent.elts.index(target)])
    return values if len(values) == len(targets) else None


@per_file
def _scope_assignments(ctx: Context, scope: ast.AST) -> _Assignments:
    return _Assignments(scope, index_of(ctx, scope))


# The nodes that bind a name other than by an assignment.
_OTHER_BINDERS = (ast.arg, ast.Global, ast.Nonlocal, ast.alias, *_DEFINITIONS)


def _bound_otherwise(node: ast.AST) -> list[str]:
    """The names `node` binds other than by assignment: a parameter, a `global`, an import, a
    definition."""
    kind = type(node)  # by `type`: the parser makes no subclasses
    if kind is ast.arg:
        return [node.arg]
    if kind is ast.Global or kind is ast.Nonlocal:
        return node.names
    if kind is ast.alias:
        return [node.asname or node.name.partition(".")[0]]
    if kind in _DEFINITIONS:
        return [node.name]
    return []


@per_file
def _shadowed_at(ctx: Context, name: str, node: ast.AST) -> bool:
    """Some binding of `name` is in a scope around `node` (its function, the functions around
    it, the module): `def lr_poly(base_lr, iter, ...)` shadows the builtin in `lr_poly` only."""
    found = index(ctx)
    binding = _scopes_binding(ctx, name)
    scope = found.scopes[found.number[node]]
    while scope is not None:  # out to the module, whose own scope is itself
        if scope in binding:
            return True
        scope = found.scopes[found.number[scope]] if scope is not ctx.tree else None
    return False


@per_file
def _scopes_binding(ctx: Context, name: str) -> frozenset[ast.AST]:
    """The scopes in which `name` is bound (class bodies left out: they shadow nothing for
    the code around them), found once per file."""
    found = index(ctx)
    binders = [found.nodes[at] for at in found.stored.get(name, ())]
    binders += [
        node for node in found.everywhere(*_OTHER_BINDERS) if name in _bound_otherwise(node)
    ]
    return frozenset(
        found.scopes[found.number[binder]]
        for binder in binders
        if not _in_class_body(binder, found.parents)
    )


@per_file  # asked per `.next()` call: reading every binding each time grew with the file
def _binds(ctx: Context, name: str) -> bool:
    """True when the file binds `name` anywhere, shadowing the builtin of that name.

    Methods and class attributes (`def next(self)`, `next = __next__`) do not count: a class
    body does not shadow names for the code around it.
    """
    found = index(ctx)
    binders = [found.nodes[at] for at in found.stored.get(name, ())]
    binders += [
        node for node in found.everywhere(*_OTHER_BINDERS) if name in _bound_otherwise(node)
    ]
    return any(not _in_class_body(node, found.parents) for node in binders)


def _in_class_body(node: ast.AST, parents: dict) -> bool:
    """A statement of a class body, or the target of an assignment that is one."""
    parent = parents.get(node)
    if isinstance(parent, ast.Assign) and any(target is node for target in parent.targets):
        node, parent = parent, parents.get(parent)
    return isinstance(parent, ast.ClassDef) and any(statement is node for statement in parent.body)
