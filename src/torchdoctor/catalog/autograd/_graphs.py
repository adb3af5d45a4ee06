"""How a loss is linked to the model outputs it was computed from, read in one block of
statements: what TD107 (a graph freed by an earlier backward) and TD106 (weights a step changed
since the forward) follow from a `backward()` call."""

from __future__ import annotations

import ast
from bisect import bisect_left

from torchdoctor.catalog.sdk import (
    BlockKey,
    Context,
    Kind,
    block_names,
    name_words,
    names_a_model,
    nested_statements,
    per_file,
    top_level_functions,
)

# Attributes and methods whose result carries no graph: a use under them does not link a loss
# to the value.
_DETACHING = frozenset({"detach", "data", "item", "tolist", "numpy"})
# Statements of a block followed back from a loss at most (a chain of assignments): bounded, so
# that a block of thousands of statements and backward calls is read in linear time.
_MAX_STEPS = 64
# Factories of torch that make a new tensor, whatever they are given: no graph comes with it.
_NEW_TENSORS = frozenset(
    f"torch.{name}"
    for name in "ones_like zeros_like empty_like full_like rand_like randn_like randint_like "
    "ones zeros empty full rand randn randint arange linspace eye tensor".split()
)
# Builtins whose result is a Python value that carries no graph.
_NUMBER_BUILTINS = frozenset(
    {"len", "int", "float", "bool", "str", "isinstance", "hasattr", "type", "id", "repr"}
)
# First words of a function's name that say it makes models rather than being one.
_FACTORY_VERBS = frozenset(
    {"load", "build", "create", "get", "make", "init", "setup", "prepare", "construct"}
)


def backward_receiver(statement: ast.stmt, first: bool = False) -> ast.expr | None:
    """The tensor of `x.backward()` as a statement; for a `first` backward, None when it keeps
    the graph (`retain_graph=`, `create_graph=`, a second positional argument)."""
    if type(statement) is not ast.Expr:
        return None
    call = statement.value
    if not (
        type(call) is ast.Call
        and type(call.func) is ast.Attribute
        and call.func.attr == "backward"
        and len(call.args) <= (1 if first else 2)
    ):
        return None
    if first and any(
        k.arg is None
        or k.arg in ("retain_graph", "create_graph", "retain_variables")
        and not (isinstance(k.value, ast.Constant) and not k.value.value)
        for k in call.keywords
    ):
        return None
    return call.func.value


def graph_sources(ctx: Context, block: list[ast.stmt], position: int, expr: ast.AST) -> set[int]:
    """The positions in `block` of the statements before `position` that assign a model's
    output the value of `expr` depends on (through the block's plain assignments, a use under
    `.detach()` and the like left out)."""
    names = block_names(ctx, block)
    found: set[int] = set()
    todo = [(name, position) for name in list(dict.fromkeys(_linked(expr, ctx)[0]))[:_MAX_STEPS]]
    seen: set[tuple[str, int]] = set()
    while todo and len(seen) < _MAX_STEPS:
        name, before = todo.pop()
        at = names.last_bound_before(name, before)
        if at is None or (name, at) in seen:
            continue
        seen.add((name, at))
        statement = block[at]
        if type(statement) is not ast.Assign:
            continue  # bound some other way (a loop, a `with`): not followed
        if _made_a_leaf(block, at, before, name, ctx):
            continue  # `x.requires_grad = True` after it: a leaf, the graph starts there
        used, calls_a_model = _unpacked_linked(ctx, statement, name) or _linked_by(ctx, statement)
        if calls_a_model:
            found.add(at)
        todo += [(name, at) for name in used]
    return found


def _made_a_leaf(block: list[ast.stmt], start: int, end: int, name: str, ctx: Context) -> bool:
    """A statement between `start` and `end` sets `name.requires_grad = True` or calls
    `name.requires_grad_()`: allowed on a leaf only, it makes the tensor where a graph begins
    (torch-harmonics' `inp_full.requires_grad = True` before each transform it differentiates)."""
    positions = _leaf_settings(ctx, BlockKey(block)).get(name)
    if not positions:
        return False
    at = bisect_left(positions, start + 1)
    return at < len(positions) and positions[at] < end


@per_file
def _leaf_settings(ctx: Context, key: BlockKey) -> dict[str, list[int]]:
    """For each name, the positions of the block's statements that set its `requires_grad`;
    read once per block."""
    found: dict[str, list[int]] = {}
    for position, statement in enumerate(key.block):
        if type(statement) is ast.Assign:
            targets = statement.targets
        elif type(statement) is ast.Expr and type(statement.value) is ast.Call:
            targets = [statement.value.func]
        else:
            continue
        for target in targets:
            if (
                type(target) is ast.Attribute
                and target.attr in ("requires_grad", "requires_grad_")
                and type(target.value) is ast.Name
            ):
                found.setdefault(target.value.id, []).append(position)
    return found


@per_file
def _linked_by(ctx: Context, statement: ast.Assign) -> tuple[list[str], bool]:
    """`_linked` of an assignment's value, read once per file, its names distinct and at most
    _MAX_STEPS of them: many backward calls following one long statement cost no more than
    one."""
    used, calls_a_model = _linked(statement.value, ctx)
    return list(dict.fromkeys(used))[:_MAX_STEPS], calls_a_model


def _unpacked_linked(
    ctx: Context, statement: ast.Assign, name: str
) -> tuple[list[str], bool] | None:
    """`_linked` for one name of `a, b = helper(x, y)`, `helper` a function of the file whose
    every return is a tuple of as many items: the names of the arguments whose graph reaches
    that item (cleanlab's `loss_1, loss_2 = loss_coteaching(logits1, logits2, ...)`, each loss
    made from one model's logits, the other's only through `.data`), and whether the item's
    own computation calls a model. None when that cannot be told."""
    targets = statement.targets
    call = statement.value
    if not (
        len(targets) == 1
        and type(targets[0]) is ast.Tuple
        and type(call) is ast.Call
        and type(call.func) is ast.Name
        and not any(type(a) is ast.Starred for a in call.args)
        and all(k.arg is not None for k in call.keywords)
    ):
        return None
    items = targets[0].elts
    position = next(
        (i for i, item in enumerate(items) if type(item) is ast.Name and item.id == name), None
    )
    function = top_level_functions(ctx).get(call.func.id)
    if position is None or type(function) is not ast.FunctionDef:
        return None
    reaching = _parameters_reaching(ctx, function, position, len(items))
    if reaching is None:
        return None
    parameters, calls_a_model = reaching
    positional = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]
    passed = {**dict(zip(positional, call.args)), **{k.arg: k.value for k in call.keywords}}
    used: list[str] = []
    for parameter in parameters:
        if parameter in passed:
            names, model = _linked(passed[parameter], ctx)
            used += names
            calls_a_model = calls_a_model or model
    return list(dict.fromkeys(used))[:_MAX_STEPS], calls_a_model


@per_file
def _parameters_reaching(
    ctx: Context, function: ast.FunctionDef, position: int, size: int
) -> tuple[frozenset[str], bool] | None:
    """The parameters of `function` whose graph reaches item `position` of what it returns,
    every return a tuple of `size` items, through its assignments (flow-insensitive), and
    whether a model is called on the way; None when a return is not such a tuple, or a name
    on the way is bound otherwise than by assignment (a loop, a `with`)."""
    args = function.args
    parameters = {arg.arg for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    if args.vararg or args.kwarg:
        return None
    assigned: dict[str, list[ast.expr]] = {}
    todo: list[ast.expr] = []
    for statement in nested_statements(function.body):
        kind = type(statement)
        if kind is ast.Return:
            value = statement.value
            if type(value) is not ast.Tuple or len(value.elts) != size:
                return None
            todo.append(value.elts[position])
        elif kind is ast.Assign or kind is ast.AugAssign or kind is ast.AnnAssign:
            targets = statement.targets if kind is ast.Assign else [statement.target]
            for target in targets:
                for node in ast.walk(target):
                    if type(node) is ast.Name and statement.value is not None:
                        assigned.setdefault(node.id, []).append(statement.value)
        elif kind in _OTHER_BINDINGS:
            for node in ast.walk(statement.target if kind is not ast.With else statement):
                if type(node) is ast.Name and type(node.ctx) is ast.Store:
                    assigned[node.id] = []  # bound by a loop or a `with`: not followed
    found: set[str] = set()
    seen: set[str] = set()
    calls_a_model = False
    while todo:
        names, model = _linked(todo.pop(), ctx)
        calls_a_model = calls_a_model or model
        for used in names:
            if used in seen or len(seen) > _MAX_STEPS:
                continue
            seen.add(used)
            if used in parameters:
                found.add(used)
            elif used in assigned:
                if not assigned[used]:
                    return None
                todo += assigned[used]
    return frozenset(found), calls_a_model


_OTHER_BINDINGS = (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)


def _linked(expr: ast.AST, ctx: Context) -> tuple[list[str], bool]:
    """The names whose graph `expr`'s value carries (read in it, but not as what is called,
    nor under `.detach()`, `.data`, `.item()`...), and whether it calls a model on the way
    (`criterion(model(x), y)`). A method of a value (`pool.query(fake)`, `x.to(device)`) is
    followed to its receiver only: what it does with its arguments is not known. The
    arguments of a function (`criterion(out, y)`, `torch.cat(...)`), or of a callable
    attribute of `self`, are followed."""
    found, todo, calls_a_model = [], [expr], False
    while todo:
        node = todo.pop()
        kind = type(node)
        if kind is ast.Name:
            found.append(node.id)
        elif kind is ast.Attribute:
            if node.attr not in _DETACHING:
                todo.append(node.value)
        elif kind is ast.Call:
            func = node.func
            if type(func) is ast.Name and func.id in _NUMBER_BUILTINS:
                continue  # `len(x)`, `int(x)`: a Python number, no graph
            if (ctx.qualname(func) or "") in _NEW_TENSORS:
                continue  # `torch.ones_like(out)`: a new tensor, no graph (torchao's labels)
            calls_a_model = calls_a_model or is_model_call(node, ctx)
            if type(func) is ast.Attribute:
                if func.attr in _DETACHING:
                    continue
                receiver = func.value
                if not (type(receiver) is ast.Name and receiver.id == "self") and (
                    ctx.qualname(func) is None
                ):
                    todo.append(receiver)  # `out.sum()`: the method's receiver carries it
                    continue
            todo += node.args
            todo += [k.value for k in node.keywords]
        elif kind not in (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp):
            todo += ast.iter_child_nodes(node)
    return found, calls_a_model


def is_model_call(value: ast.AST, ctx: Context) -> bool:
    """`netG(z)`, `self.generator(z)`, `model(x)`: a call of a module (or of a name that says
    it holds one), whose output carries the module's graph; not a function of the file that
    builds or loads models (`_load_models(path)`)."""
    if type(value) is not ast.Call:
        return False
    func = value.func
    name = func.attr if type(func) is ast.Attribute else getattr(func, "id", None)
    if name is None:
        return False
    if ctx.kind_of(func) is Kind.MODULE:
        return True
    return (
        names_a_model(name)
        and name not in top_level_functions(ctx)
        and name_words(name)[0] not in _FACTORY_VERBS
    )
