"""TD107 backward-through-graph-twice: `backward()` reaches a graph an earlier backward freed."""

from __future__ import annotations

import ast
from bisect import bisect_left

from torchdoctor.catalog.sdk import (
    BlockKey,
    Context,
    Finding,
    Kind,
    Pitfall,
    block_names,
    lazy_compile,
    name_words,
    names_a_model,
    nested_statements,
    per_file,
    top_level_functions,
)

PITFALL = Pitfall(
    code="TD107",
    name="backward-through-graph-twice",
    title={
        "en": "Backward through a graph whose saved tensors were already freed",
        "zh": "对已释放中间结果的计算图再次做反向传播",
    },
    messages={
        "": {
            "en": "`backward()` reached a part of the graph that an earlier `backward()` already "
            "freed: some tensor still links this step to a graph that was used before",
            "zh": "`backward()` 走到了一段已经被之前的 `backward()` 释放的计算图："
            "某个张量仍把这一步和之前用过的计算图连在一起",
        },
        "shared": {
            "en": "`{second}` runs backward through the graph of `{shared}` (line {made}) a second "
            "time: `{first}` on line {line} already freed it (RuntimeError: Trying to backward "
            "through the graph a second time); if the first loss should not reach `{shared}`'s "
            "model (a GAN's discriminator step), give it `{shared}.detach()`, else add the "
            "losses and call `backward()` once",
            "zh": "`{second}` 再次对 `{shared}`（第 {made} 行）的计算图做反向传播：第 {line} 行的 "
            "`{first}` 已经把它释放了（RuntimeError: Trying to backward through the graph a "
            "second time）；如果第一个损失本不该传到 `{shared}` 的模型（GAN 的判别器那一步），"
            "请在那里用 `{shared}.detach()`，否则把两个损失相加后只调用一次 `backward()`",
        },
    },
    fix_hint={
        "en": "Cut the link to the previous graph instead of adding `retain_graph=True`: "
        "`hidden = hidden.detach()` for an RNN state carried between batches, "
        "`total += loss.item()` for a running loss, `fake.detach()` for the "
        "discriminator step of a GAN. Use `retain_graph=True` only when you really "
        "backpropagate twice through the same forward pass.",
        "zh": "不要急着加 `retain_graph=True`，而是切断与上一张计算图的联系：跨 batch 传递的 RNN "
        "隐状态用 `hidden = hidden.detach()`，累计损失用 `total += loss.item()`，GAN 的判别器"
        "那一步用 `fake.detach()`。只有确实要对同一次前向计算反向传播两次时，才使用 "
        "`retain_graph=True`。",
    },
    root_causes=("accumulated-loss-graph",),
    docs={
        "en": """
## What it catches
The autograd error raised when `backward()` (or `torch.autograd.grad`) needs intermediate
values that an earlier backward pass has already freed: `Trying to backward through the graph
a second time`, in all its phrasings since PyTorch 0.1.

Before the run, `check` finds the commonest way to it: two `.backward()` calls in one block
(a loop body, a function) whose losses both come from the same model output, made once before
the first of them, which has no `retain_graph=True`. The classic case is a GAN whose
discriminator step uses `netD(fake)` instead of `netD(fake.detach())`, and whose generator
step then backpropagates through `fake` again. The losses are followed through the block's
own assignments; a use under `.detach()`, `.data` or `.item()` does not count, nor an output
made a leaf before the first backward (`x.requires_grad = True`, allowed on leaves only: the
graph starts there).

## Why is this bad?
To save memory, a backward pass frees the tensors each operation saved for its gradient as
soon as it has used them. A second backward through the same operations then finds nothing
to work with. The message suggests `retain_graph=True`, but in a training loop that is rarely
the fix: the second pass usually happens by accident, because a tensor created in the
previous iteration still carries that iteration's graph into the current one:

- the hidden state of an RNN passed from one batch to the next without `.detach()`;
- a running sum `total_loss += loss` that is then backpropagated, or a value computed from
  the model outside the loop and reused in every iteration;
- in a GAN, `fake = generator(z)` used by the discriminator loss without `fake.detach()`:
  the discriminator's backward frees the generator's part of the graph, and the generator's
  backward then fails. `torchdoctor run` reports that case as `detach-missing-between-models`
  (TD115), also once `retain_graph=True` has hidden the error.

`retain_graph=True` hides the error but keeps every previous graph alive: memory grows with
each step and gradients flow into iterations that are long over (truncated backpropagation
through time becomes untruncated).

## Symptoms
`RuntimeError: Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed). Saved intermediate values of the graph are freed
when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward
through the graph a second time or if you need to access saved tensors after calling
backward.`

Older versions: `Trying to backward through the graph a second time, but the buffers have
already been freed. Specify retain_graph=True when calling backward the first time.`; the first
releases: `Trying to backward through the graph second time, but the buffers have already been
freed. Please specify retain_variables=True when calling backward for the first time.`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
        "zh": """
## What it catches
当 `backward()`（或 `torch.autograd.grad`）需要的中间结果已被之前的一次反向传播释放时，
autograd 抛出的错误：`Trying to backward through the graph a second time`，涵盖 PyTorch 0.1
以来的各种措辞。

运行之前，`check` 会找出最常见的成因：同一代码块（循环体、函数）中的两次 `.backward()`，
它们的损失都来自同一个模型输出，而这个输出在第一次调用之前只算了一次，第一次调用又没有
`retain_graph=True`。典型的例子是 GAN：判别器那一步用了 `netD(fake)` 而不是
`netD(fake.detach())`，随后生成器那一步又经过 `fake` 反向传播。规则沿着代码块内的赋值追踪损失；
在 `.detach()`、`.data` 或 `.item()` 之下的使用不算在内；在第一次反向传播之前被设为叶子的输出
（`x.requires_grad = True`，只允许对叶子这样做：计算图从那里开始）也不算。

## Why is this bad?
为了节省内存，反向传播在用完每个运算为求梯度而保存的张量后会立即释放它们。再对同一批运算做
第二次反向传播时，就已经无从计算了。报错信息建议加 `retain_graph=True`，但在训练循环里这很少是
正确的做法：第二次反向传播通常是无意中发生的，原因是上一次迭代产生的某个张量仍带着那次迭代的
计算图进入了本次迭代：

- RNN 的隐状态从一个 batch 传给下一个 batch 时没有 `.detach()`；
- 累加 `total_loss += loss` 之后又对它做反向传播，或者在循环外用模型算出的某个值在每次迭代中被重复使用；
- GAN 中判别器的损失直接使用了 `fake = generator(z)` 而没有 `fake.detach()`：判别器的反向传播
  释放了生成器那部分计算图，随后生成器的反向传播就会失败。`torchdoctor run` 把这种情况报告为
  `detach-missing-between-models`（TD115），即使 `retain_graph=True` 已经让报错消失。

`retain_graph=True` 能让报错消失，却会把之前所有的计算图都留在内存里：显存每一步都在增长，
梯度还会流回早已结束的迭代（截断的时间反向传播变成了不截断）。

## Symptoms
`RuntimeError: Trying to backward through the graph a second time (or directly access saved
tensors after they have already been freed). Saved intermediate values of the graph are freed
when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward
through the graph a second time or if you need to access saved tensors after calling
backward.`

较早的版本：`Trying to backward through the graph a second time, but the buffers have
already been freed. Specify retain_graph=True when calling backward the first time.`；最早的几个版本：
`Trying to backward through the graph second time, but the buffers have already been
freed. Please specify retain_variables=True when calling backward for the first time.`

## References
- https://pytorch.org/docs/stable/generated/torch.Tensor.backward.html
""",
    },
    example="""
import torch
import torch.nn as nn

netG = nn.Linear(8, 4)
netD = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
for step in range(3):
    fake = netG(torch.randn(16, 8))
    errD = criterion(netD(fake), torch.zeros(16, 1))
    errD.backward()
    errG = criterion(netD(fake), torch.ones(16, 1))
    errG.backward()
""",
    use_instead="""
import torch
import torch.nn as nn

netG = nn.Linear(8, 4)
netD = nn.Linear(4, 1)
criterion = nn.BCEWithLogitsLoss()
for step in range(3):
    fake = netG(torch.randn(16, 8))
    errD = criterion(netD(fake.detach()), torch.zeros(16, 1))
    errD.backward()
    errG = criterion(netD(fake), torch.ones(16, 1))
    errG.backward()
""",
)

PITFALL.error(
    r"Trying to backward through the graph (?:a )?second time"
    r"|Specify retain_graph=True (?:when calling backward the first time|if you need to "
    r"backward through the graph a second time)",
    confidence=0.95,
    cause={
        "en": "`backward()` went through operations whose saved tensors an earlier backward "
        "had already freed. In a training loop this is usually a tensor carried over "
        "from the previous iteration (an RNN hidden state that is not detached, a "
        "running loss sum, a GAN's `fake` used without `.detach()`), not a real need "
        "for `retain_graph=True`.",
        "zh": "`backward()` 经过的运算所保存的中间结果已被之前的一次反向传播释放。在训练循环里，"
        "这通常是某个从上一次迭代带过来的张量（没有 detach 的 RNN 隐状态、累加的损失、"
        "GAN 中没有 `.detach()` 的 `fake`）造成的，而不是真的需要 `retain_graph=True`。",
    },
)


# Attributes and methods whose result carries no graph: a use under them does not link a loss
# to the value.
_DETACHING = frozenset({"detach", "data", "item", "tolist", "numpy"})
# Statements of a block followed back from a loss at most (a chain of assignments), and the
# earlier backward calls of the block a backward call is compared with: bounded, so that a
# block of thousands of statements and backward calls is read in linear time.
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
_MAX_EARLIER = 8
# First words of a function's name that say it makes models rather than being one.
_FACTORY_VERBS = frozenset(
    {"load", "build", "create", "get", "make", "init", "setup", "prepare", "construct"}
)
# Parameters frozen somewhere in the file: a model's output may then carry no graph at all.
_FREEZES = lazy_compile(r"requires_grad_?\s*(?:=|\()\s*False")


@PITFALL.static(ast.Expr, names={"backward"})
def check(statement: ast.Expr, ctx: Context) -> list[Finding] | None:
    second = backward_receiver(statement)
    located = ctx.block_position(statement, ctx.ancestors[-1]) if ctx.ancestors else None
    if second is None or located is None or _freezes_parameters(ctx):
        return None
    block, index = located
    positions = _first_backwards(ctx, BlockKey(block))
    earlier = positions[
        max(0, bisect_left(positions, index) - _MAX_EARLIER) : bisect_left(positions, index)
    ]
    if not earlier:
        return None
    sources = graph_sources(ctx, block, index, second)
    if not sources:
        return None
    for position in reversed(earlier):
        first = backward_receiver(block[position], first=True)
        shared = sorted(sources & graph_sources(ctx, block, position, first))
        shared = [at for at in shared if at < position]  # made before the first backward
        if shared:
            made = block[shared[-1]]
            return [
                ctx.finding(
                    PITFALL,
                    statement,
                    "shared",
                    second=ctx.text(statement.value),
                    first=ctx.text(block[position].value),  # type: ignore[attr-defined]
                    line=block[position].lineno,
                    shared=_target_text(made, ctx),
                    made=made.lineno,
                )
            ]
    return None


@per_file
def _first_backwards(ctx: Context, key: BlockKey) -> list[int]:
    """The positions of the block's `x.backward()` statements that free the graph: found once
    per block, however many backward calls it holds."""
    return [
        position
        for position, statement in enumerate(key.block)
        if backward_receiver(statement, first=True) is not None
    ]


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


def _target_text(statement: ast.stmt, ctx: Context) -> str:
    targets = statement.targets  # type: ignore[attr-defined]
    return ctx.text(targets[0]) if len(targets) == 1 else ctx.text(targets[-1])


@per_file
def _freezes_parameters(ctx: Context) -> bool:
    return _FREEZES.search(ctx.source) is not None
