"""TD001 tensor-result-discarded: `x.cuda()` as a statement leaves `x` where it was."""

from __future__ import annotations

import ast
from bisect import bisect_right
from typing import Iterator

from torchdoctor.catalog.sdk import (
    root_name,
    nested_statements,
    unrebound_parameter,
    BlockKey,
    Context,
    Finding,
    Kind,
    OWN_METHOD,
    Pitfall,
    attribute_values,
    bindings,
    block_names,
    bound_only_to,
    computes_a_loss,
    expects_an_error,
    imported_roots,
    index,
    index_of,
    is_parameter,
    is_self_attribute,
    names_assigned,
    passed_by_every_call,
    per_file,
    read_as_tensor,
    scope_of,
    shorten,
    statements,
    tensor_methods,
)

PITFALL = Pitfall(
    code="TD001",
    name="tensor-result-discarded",
    title={
        "en": "Out-of-place tensor method whose result is thrown away",
        "zh": "非原地张量方法的返回值被丢弃",
    },
    messages={
        "": {
            "en": "`{call}` returns a new tensor and the result is thrown away: `{target}` is unchanged",
            "zh": "`{call}` 返回一个新张量，但返回值被丢弃了：`{target}` 本身没有改变",
        },
        "array": {
            "en": "`{call}` returns a new array and the result is thrown away: `{target}` is unchanged",
            "zh": "`{call}` 返回一个新数组，但返回值被丢弃了：`{target}` 本身没有改变",
        },
        "view": {
            "en": "`{call}` returns a new tensor and the result is thrown away: `{target}` is "
            "unchanged, and the `.view(...)` on line {line} gets it as it was, not a contiguous "
            "copy (it fails if the dimensions it merges are not adjacent in memory)",
            "zh": "`{call}` 返回一个新张量，但返回值被丢弃了：`{target}` 本身没有改变，第 {line} 行的 "
            "`.view(...)` 拿到的仍是原来的张量，而不是连续的副本（要合并的维度在内存中不相邻时会出错）",
        },
    },
    fix_title={
        "en": "Assign the result back: `{target} = {target}.{method}(...)`",
        "zh": "把结果赋值回去：`{target} = {target}.{method}(...)`",
    },
    fix_applicability="unsafe",
    fix_hint={
        "en": "Assign the result back: `x = x.to(device)`, `x = x.cuda()`, `x = x.float()`. "
        "Tensor methods return a new tensor; only `Module.to`/`Module.cuda` and methods "
        "ending in `_` change their object in place.",
        "zh": "把结果赋值回去：`x = x.to(device)`、`x = x.cuda()`、`x = x.float()`。张量方法返回的是新张量；"
        "只有 `Module.to`/`Module.cuda` 和以 `_` 结尾的方法才会原地修改对象本身。",
    },
    docs={
        "en": """
## What it catches
A tensor method that returns a new tensor, called as a statement so that its result is lost:
`x.cuda()`, `x.to(device)`, `x.cpu()`, `x.float()`, `x.view(...)`, `x.reshape(...)`,
`x.permute(...)`, `x.contiguous()`, `x.detach()`, `x.clamp(...)` and friends, and every other
Tensor method that has an in-place twin (`x.masked_fill(...)` next to `x.masked_fill_(...)`,
`x.add(y)`, `x.index_fill(...)`: the list is taken from torch's own API).

`model.cuda()` and `model.to(device)` on an `nn.Module` are fine and not reported: a module is
moved in place. When the doctor cannot tell what a name holds, it reports device and dtype
moves and most other methods only for values it knows are tensors (the inputs of a module's
`forward` count); for values of unknown type it reports only methods no other common class
has (`unsqueeze`, `permute`, `contiguous`, `masked_fill`, `index_add`...). A name bound only
to the results of such methods (`x = load(p).contiguous()`, then `x = x.view(...)`) counts as a
tensor, and so does a name bound once in its function (a `del` of it aside) that the function
reads a tensor's value out of (`src = batch.src` with `src.data.numpy()`, `src.item()`...),
uses as only a tensor is used (`labels.view_as(pred)`, `placeholder.data.copy_(inputs)`, a
layer's `.data` set to it: `model.Embd.weight.data = embd`), hands
first to a torch function that takes only tensors (`torch.unsqueeze(data, 0)`, a function of
`torch.nn.functional`) or hands to a loss of `torch.nn` (`criterion(outputs, labels)` with
`criterion = nn.CrossEntropyLoss()`). A name handed only to a model is not taken for a tensor:
a batch object of a library (PyG's `Data`) moves itself with `.to`. A name last bound, in the
statement's own block, to arithmetic, a comparison or an index adding an axis (`mask = (1 -
obj) * keep.float()`, `image = image[None, :, :]`) holds an array, and of arrays only a tensor
has `.to`, `.cuda` and `.cpu`: its move counts too. A `.contiguous()` thrown away before a
`.view(...)` of the same name says which line's view still gets the tensor as it was. A call in a
`try` block that catches its error is a probe of whether it raises, and is not reported; nor is
a call that is all a loop repeats, with nothing of the loop's variable, in a file that times
kernels or captures CUDA graphs (`for _ in range(3): value.sin()` before `torch.cuda.graph(...)`:
a warm-up).

## Why is this bad?
`Tensor.cuda()` and `Tensor.to()` return a copy on the new device and leave the original where
it was, unlike `Module.cuda()`, which moves the module's parameters in place. The line looks
like it did something, and the next line that mixes the tensor with a GPU model fails, or the
tensor silently stays un-reshaped, un-detached, un-clamped.

## Symptoms
`RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should
be the same`, or `Expected all tensors to be on the same device, but found at least two
devices, cuda:0 and cpu!`

## Fix safety
The fix assigns the result back to the same name. It is unsafe: other names that still refer
to the original tensor keep the old value, which may or may not be what you meant.

## Known problems
Only methods are looked at. A function of the same name called through a module,
`torch.unsqueeze(x, 0)` or `np.reshape(a, shape)` as a statement, loses its result too but is
not reported: what it is called on is a module, not the value to assign back to. Nor is a
tensor made in the statement and moved (`torch.zeros(1).cuda()`): done for the move itself,
which creates the GPU's CUDA context, with no name to keep the result in. A value of unknown
type calling a method some class of the project defines too and returns nothing from (`def
permute(self, ...)` on a wrapper of its own that works in place) is not reported: it may be one
of those. Nor is a move to the dtype and device the tensor was made with (`torch.zeros(n,
dtype=q.dtype, device=q.device)`, then `.to(dtype=q.dtype, device=q.device)`): the line does
nothing, but loses nothing either.
""",
        "zh": """
## What it catches
作为单独语句调用、返回值被丢弃的“返回新张量”的方法：`x.cuda()`、`x.to(device)`、`x.cpu()`、
`x.float()`、`x.view(...)`、`x.reshape(...)`、`x.permute(...)`、`x.contiguous()`、`x.detach()`、
`x.clamp(...)` 等，以及其他所有带原地版本的张量方法（`x.masked_fill(...)` 对应 `x.masked_fill_(...)`、
`x.add(y)`、`x.index_fill(...)`：列表取自 torch 自身的 API）。

`nn.Module` 上的 `model.cuda()`、`model.to(device)` 没有问题，不会报告：模块是原地迁移的。
当无法确定一个名字保存的是什么时，设备、dtype 迁移和大多数方法只对确定是张量的值报告（模块 `forward`
的输入也算）；类型未知的值只报告其他常见类没有的方法（`unsqueeze`、`permute`、`contiguous`、
`masked_fill`、`index_add` 等）。只被这类方法的结果赋值过的名字（`x = load(p).contiguous()`，之后
`x = x.view(...)`）算作张量；在函数中只绑定一次、且函数从中读出张量值的名字（`src = batch.src`
之后有 `src.data.numpy()`、`src.item()` 等；或只有张量才会这样用，如 `labels.view_as(pred)`、
`placeholder.data.copy_(inputs)`、把某一层的 `.data` 设为它：
`model.Embd.weight.data = embd`；或把它作为第一个参数交给只接受张量的 torch 函数，如
`torch.unsqueeze(data, 0)` 和 `torch.nn.functional` 的函数；或把它交给 `torch.nn` 的损失函数，如
`criterion = nn.CrossEntropyLoss()` 之后的 `criterion(outputs, labels)`；对它的 `del` 不算绑定）也算作张量。
只交给模型的名字不算张量：库里的批次对象（PyG 的 `Data`）用 `.to` 移动的是它自己。
在语句所在的同一个块中，最后一次被绑定为算术运算、比较或增加维度的索引
（`mask = (1 - obj) * keep.float()`、`image = image[None, :, :]`）的名字持有的是数组，而数组中只有张量有
`.to`、`.cuda` 和 `.cpu`：对它的移动同样报告。丢弃结果的 `.contiguous()` 之后若有对同一名字的
`.view(...)`，提示会指出是哪一行的 view 拿到了原来的张量。在捕获其异常的 `try` 块中的调用是在试探它是否会出错，不报告；
在计时内核或捕获 CUDA graph 的文件里，构成整个循环体、且不涉及循环变量的调用也不报告
（`torch.cuda.graph(...)` 之前的 `for _ in range(3): value.sin()`：预热）。

## Why is this bad?
`Tensor.cuda()`、`Tensor.to()` 返回新设备上的一份拷贝，原张量留在原处；而 `Module.cuda()` 会原地迁移模块参数。
这一行看起来做了事情，但下一行把该张量和 GPU 上的模型一起用时就会报错，或者张量悄悄地没有被
reshape、没有 detach、没有 clamp。

## Symptoms
`RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should
be the same`，或 `Expected all tensors to be on the same device, but found at least two
devices, cuda:0 and cpu!`

## Fix safety
修复会把结果赋值回同一个名字。它是不安全的：仍然指向原张量的其他变量保留旧值，这未必是你想要的。

## Known problems
只检查方法调用。通过模块调用的同名函数，例如单独一行的 `torch.unsqueeze(x, 0)` 或 `np.reshape(a, shape)`，
返回值同样被丢弃，但不会报告：它调用在模块上，而模块不是应当赋值回去的那个值。在同一语句中新建并移动的张量
（`torch.zeros(1).cuda()`）也不报告：这样做是为了移动本身（它会创建该 GPU 的 CUDA context），也没有名字可以保存结果。
类型未知的值调用的方法如果项目中某个类也定义了同名、且不返回值的方法（例如项目自己的包装类上
原地修改的 `def permute(self, ...)`），不报告：它可能就是那个类的对象。移动到张量创建时已有的
dtype 和 device（`torch.zeros(n, dtype=q.dtype, device=q.device)` 之后
`.to(dtype=q.dtype, device=q.device)`）也不报告：这一行什么也没做，但也没有丢失什么。
""",
    },
    example="""
import torch

images = torch.randn(8, 3, 32, 32)
images.cuda()
""",
    use_instead="""
import torch

images = torch.randn(8, 3, 32, 32)
images = images.cuda()
""",
)

# Methods that exist on nn.Module too, where they work in place: report only known tensors.
MOVES = frozenset("cuda cpu to float half double bfloat16 type".split())
# Methods only tensors (and arrays) have, with no side effect: a discarded call is always lost.
PURE = frozenset(
    """
long int short bool byte char view view_as reshape reshape_as permute transpose t contiguous
detach clamp clip squeeze unsqueeze flatten expand expand_as repeat clone type_as narrow
""".split()
)
# The few of those no other popular class defines: reported even when the receiver's type is
# unknown (see tensor_methods.UNMISTAKABLE).
TENSOR_ONLY = tensor_methods.UNMISTAKABLE
# Every Tensor method with an in-place twin (`masked_fill` / `masked_fill_`), from torch's API.
OUT_OF_PLACE = tensor_methods.OUT_OF_PLACE - MOVES
TENSOR_KINDS = (Kind.TENSOR, Kind.NDARRAY)
_TENSOR_METHODS_NOT_MOVES = (PURE | TENSOR_ONLY) - MOVES
ASSIGNABLE = (ast.Name, ast.Attribute, ast.Subscript)


@PITFALL.static(ast.Expr, names=MOVES | PURE | OUT_OF_PLACE)
def check(node: ast.Expr, ctx: Context) -> Iterator[Finding]:
    call = node.value
    method = ctx.method_name(call)
    if method is None:  # a plain function call of that name, not a method
        return
    if ctx.is_displayed(node):  # a notebook cell's last line: Jupyter shows the new tensor
        return
    parent = ctx.parent()
    if (
        isinstance(parent, ast.Try)
        and parent.handlers
        and node.lineno <= parent.body[-1].end_lineno  # in its body, not orelse or finally
    ):
        return  # called to see whether it raises (`try: x.half().cos() except RuntimeError`)
    if expects_an_error(ctx):
        return  # `with pytest.raises(...): x.unsqueeze(5)`: a test that it raises
    if _repeated_alone(node, parent) and any(word in ctx.source for word in _TIMING_WORDS):
        return  # `for _ in range(3): value.sin()`: a warm-up (before a CUDA graph) or a timing
    receiver = call.func.value
    root = root_name(receiver)
    if root == "_":  # the throwaway name (or the REPL's last result)
        return
    if root in _imported_names(ctx) and _names_the_import(root, ctx):
        # `torch.unsqueeze(x, 0)`, `np.reshape(a, s)`, `utils.permute(...)`: a function of an
        # imported module (or class), not a method of a tensor; its receiver is no target. A
        # function's own `data` (a batch) is not the module `import data` binds.
        return
    kind = ctx.kind_of(receiver)
    if kind is Kind.MODULE:  # model.cuda() moves the module in place: fine
        return
    if kind is Kind.UNKNOWN and _forward_input(receiver, ctx):
        kind = Kind.TENSOR  # `def forward(self, x): x.cuda()`
    if kind is Kind.UNKNOWN and method in MOVES and _item_of_a_batch(receiver, ctx):
        kind = Kind.TENSOR  # `img = batch["image"]`, then `img.to(device)`
    if (
        kind is Kind.UNKNOWN
        and method in MOVES
        and ctx.imports_torch
        and _moved_tensor(receiver, ctx)
    ):
        kind = Kind.TENSOR  # `q, k, v = inputs` in `forward`; `vocab.vectors`; a tensor passed in
    if kind is Kind.UNKNOWN and method in MOVES and ctx.imports_torch and _named_a_tensor(receiver):
        kind = Kind.TENSOR  # `img_tensor = IMAGE_TO_TENSOR(img)`, then `img_tensor.cuda()`
    if kind is Kind.UNKNOWN and ctx.imports_torch and _made_by_tensor_only_method(receiver, ctx):
        kind = Kind.TENSOR  # `spect = parse_audio(path).contiguous()`
    # `feature.reshape(-1, 512)`: moved and thrown away, it tells a tensor, and `feature` is
    # what stays unchanged.
    method_result = _tensor_method_result(receiver, ctx)
    if kind is Kind.UNKNOWN and method in MOVES and ctx.imports_torch and method_result:
        kind = Kind.TENSOR  # `feature.reshape(-1, 512).to(device)`: no module has `reshape`
    if (
        kind in (Kind.UNKNOWN, Kind.BATCH)
        and ctx.imports_torch
        and isinstance(receiver, ast.Name)
        and read_as_tensor(ctx, scope_of(receiver.id, ctx), receiver.id)
    ):
        # `src = batch.src` read by `src.data.numpy()`; a whole batch handed to a loss
        # (`for x in loader: x.to(device)`, then `criterion(model(x), x)`: LSTM-DeepFM)
        kind = Kind.TENSOR
    if (
        kind is Kind.UNKNOWN
        and method in MOVES
        and ctx.imports_torch
        and _array_just_before(receiver, node, ctx)
    ):
        kind = Kind.TENSOR  # `mask = (1 - obj) * (iou < t).float()`, then `mask.to(device)`
    if method in MOVES and (kind is not Kind.TENSOR or _made_here(receiver, ctx)):
        # `torch.zeros(1).cuda()`: a tensor made to be moved, for the move itself (it creates
        # the CUDA context: st-gcn's occupy_gpu); no name held it to keep the result in.
        return
    if method in MOVES and _moved_so_already(receiver, call, ctx):
        return  # `x = torch.from_numpy(a).to(device)`, ..., `x.to(device)`: a line doing nothing
    if method not in PURE and method not in MOVES and kind is not Kind.TENSOR:
        # The rest of torch's out-of-place methods: on known tensors (numpy's arrays have
        # other methods), or, for the few no other class has, in torch code.
        if not (method in TENSOR_ONLY and ctx.imports_torch and isinstance(receiver, ASSIGNABLE)):
            return
    # An unknown receiver of a tensor-only method is reported only in torch code, and not in a
    # test function: there a call whose result is dropped is often the test (it must not raise).
    if kind not in TENSOR_KINDS and not (
        method in TENSOR_ONLY
        and ctx.imports_torch
        and isinstance(receiver, ASSIGNABLE)
        and not _in_test_function(ctx)
        and not _instance_of_other_class(receiver, ctx)
        and not ctx.project.has(OWN_METHOD + method)
    ):
        return
    if _in_test_function(ctx) and _never_read_after(node, receiver, ctx):
        return  # torchao's `lp_tensor.to(device2)`, rebound next: a test that the move works
    target = ctx.text(receiver)
    fix = None
    if isinstance(receiver, ASSIGNABLE) and "\n" not in target and "\r" not in target:
        call_text = ctx.text(call)
        title = {
            lang: text.format(target=target, method=method)
            for lang, text in PITFALL.fix_title.items()
        }
        fix = ctx.fix(PITFALL, "unsafe", ctx.replace(call, f"{target} = {call_text}"), title=title)
    if method_result:
        target = ctx.text(receiver.func.value)  # type: ignore[attr-defined]  # `feature`, not `feature.reshape(...)`
    elif type(receiver) is ast.Call:
        target = ctx.text(_computed_from(receiver) or receiver)
    shown = {"call": shorten(ctx.text(call)), "target": shorten(target)}
    view = _viewed_after(node, receiver, ctx) if method == "contiguous" else None
    if view is not None:
        yield ctx.finding(PITFALL, call, "view", fix=fix, line=view.lineno, **shown)
    else:
        variant = "array" if kind is Kind.NDARRAY else ""
        yield ctx.finding(PITFALL, call, variant, fix=fix, **shown)


# What code that warms kernels up or times them calls (a CUDA graph captured after a warm-up,
# CUDA events, a synchronized clock).
_TIMING_WORDS = ("CUDAGraph", "cuda.graph(", "synchronize(", "perf_counter", "Event(", "timeit")


def _repeated_alone(node: ast.Expr, parent: ast.AST | None) -> bool:
    """`node` is all a loop repeats, with nothing of the loop's own variable: in code that
    times kernels or captures CUDA graphs, the same work run for its time or to warm up
    (spikingjelly's profiling examples), whose result no iteration could keep. Elsewhere it
    may be an accumulation missing its `_` (`for _ in range(k): h.add(delta)`)."""
    if not isinstance(parent, (ast.For, ast.AsyncFor, ast.While)) or parent.body != [node]:
        return False
    if isinstance(parent, ast.While):
        return True
    targets = {n.id for n in ast.walk(parent.target) if type(n) is ast.Name}
    return not any(type(n) is ast.Name and n.id in targets for n in ast.walk(node))


def _computed_from(call: ast.Call) -> ast.AST | None:
    """The named value a temporary was made from: `x` of `self.norm(x.transpose(1, 2))`, which
    is what stays unchanged when the result is dropped (ppg-vc's decoder)."""
    while type(call) is ast.Call:
        func = call.func
        if type(func) is ast.Attribute and type(func.value) is ast.Call:
            call = func.value  # `f(x).transpose(1, 2)`: what `f(x)` was made from
        elif call.args and type(call.args[0]) is not ast.Starred:
            inner = call.args[0]
            while type(inner) is ast.Call and type(inner.func) is ast.Attribute:
                inner = inner.func.value  # `x.transpose(1, 2)`: `x`
            if isinstance(inner, ASSIGNABLE):
                return inner
            call = inner  # type: ignore[assignment]
        else:
            return None
    return None


def _viewed_after(statement: ast.stmt, receiver: ast.AST, ctx: Context) -> ast.Call | None:
    """The first `.view(...)` of the name whose `.contiguous()` was thrown away, in the
    statements after it in its block, before anything binds the name again."""
    located = _own_block(statement, receiver, ctx)
    if located is None:
        return None
    block, index = located
    positions, ends = _views_and_bindings(ctx, BlockKey(block), receiver.id)
    at = bisect_right(positions, index)
    return ends[at] if at < len(ends) else None


@per_file
def _views_and_bindings(
    ctx: Context, key: BlockKey, name: str
) -> tuple[list[int], list[ast.Call | None]]:
    """The positions of the block's statements that view `name` or bind it again, in order,
    with the view's call (None for a binding), read once per block and name: each thrown-away
    `.contiguous()` of it then looks up the next one."""
    table = block_names(ctx, key.block)
    parents = table.index.parents
    positions: list[int] = []
    ends: list[ast.Call | None] = []
    for position, names in table.mentions_after(name, -1):
        for node in names:
            above = parents.get(node)
            call = parents.get(above) if above is not None else None
            if (
                isinstance(above, ast.Attribute)
                and above.attr == "view"
                and isinstance(call, ast.Call)
            ):
                positions.append(position)
                ends.append(call)
                break
        else:
            if any(not isinstance(node.ctx, ast.Load) for node in names):
                positions.append(position)
                ends.append(None)  # bound again: a later view sees another tensor
    return positions, ends


def _named_a_tensor(receiver: ast.AST) -> bool:
    """A name that says it holds a tensor: `tensor`, `img_tensor`, `input_tensor_a`."""
    return type(receiver) is ast.Name and "tensor" in receiver.id.lower().split("_")


def _own_block(
    statement: ast.stmt, receiver: ast.AST, ctx: Context
) -> tuple[list[ast.stmt], int] | None:
    """The block holding the statement being checked and its place there, when the receiver
    is a plain name (whose bindings in that block tell what it holds)."""
    owner = ctx.parent()
    if type(receiver) is not ast.Name or owner is None:
        return None
    return ctx.block_position(statement, owner)


def _array_just_before(receiver: ast.AST, statement: ast.stmt, ctx: Context) -> bool:
    """The name was last bound, in the statement's own block, by `name = value` whose value
    only an array can be: arithmetic (`(1 - a) * b`: a module has no operators), a comparison,
    or an index with a new axis (`image[None, :, :]`); or a method only a tensor has
    (`text = text.masked_fill(~mask, 0.)`, muse-maskgit's T5 encoder). Of arrays only a tensor
    has `.to`, `.cuda` and `.cpu`."""
    located = _own_block(statement, receiver, ctx)
    if located is None:
        return False
    block, index = located
    names = block_names(ctx, block)
    position = names.last_bound_before(receiver.id, index)
    if position is None or position != names.last_assigned_before(receiver.id, index):
        return False
    value = block[position].value  # type: ignore[attr-defined]
    if isinstance(value, (ast.BinOp, ast.Compare)):
        return True
    if _is_tensor_only_call(value):
        return root_name(value.func.value) not in _imported_names(ctx)  # not `np.<function>`
    if not isinstance(value, ast.Subscript):
        return False
    parts = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    return any(isinstance(part, ast.Constant) and part.value in (None, ...) for part in parts)


def _moved_so_already(receiver: ast.AST, call: ast.Call, ctx: Context) -> bool:
    """Every binding of the name `receiver` in its scope moves its value the same way as
    `call` (the same method and arguments, in the chain of calls it makes: `input_data =
    torch.from_numpy(resized).to(device)`) or calls a method of the name's own value
    (`input_data = input_data.float()`): the discarded move leaves the tensor where it is."""
    if type(receiver) is not ast.Name:
        return False
    found = bindings(ctx, scope_of(receiver.id, ctx), receiver.id)
    if not found:
        return False
    wanted = _move_signature(call)
    moved = False
    for binding in found:
        if binding.augmented:
            continue  # `x /= 255.`: in place, on whichever device it is
        value = binding.value
        link = value
        while isinstance(link, ast.Call) and isinstance(link.func, ast.Attribute):
            if _move_signature(link) == wanted or _made_so(link, call):
                moved = True
                break
            link = link.func.value
        else:
            if not (type(link) is ast.Name and link.id == receiver.id and link is not value):
                return False  # made otherwise: where it is cannot be told
    return moved


def _made_so(made: ast.Call, move: ast.Call) -> bool:
    """`move` is `.to(dtype=..., device=...)` by keywords alone, and `made` (`torch.zeros(L, S,
    dtype=query.dtype, device=query.device)`) gives each of them the same value: the tensor is
    made where the move would take it (brevitas' attention bias)."""
    func = move.func
    if (
        move.args
        or not move.keywords
        or not (isinstance(func, ast.Attribute) and func.attr == "to")
    ):
        return False
    given = {k.arg: ast.dump(k.value) for k in made.keywords if k.arg in ("dtype", "device")}
    return all(
        k.arg in ("dtype", "device") and given.get(k.arg) == ast.dump(k.value)
        for k in move.keywords
    )


def _move_signature(call: ast.Call) -> str:
    """The method and the arguments of a call, as the tree spells them."""
    func = call.func
    method = func.attr if isinstance(func, ast.Attribute) else ""
    return (
        method
        + ast.dump(ast.Tuple(elts=call.args, ctx=ast.Load()))
        + "".join(ast.dump(keyword) for keyword in call.keywords)
    )


def _names_the_import(name: str, ctx: Context) -> bool:
    """`name`, which some import of the file binds, means that import here: bound at the
    module's level, or by an import of the function it is bound in (not a function's own
    `data, target = batch`, beside an `import data` of the module)."""
    scope = scope_of(name, ctx)
    if scope is ctx.tree:
        return True
    found = bindings(ctx, scope, name) or ()
    return any(isinstance(b.node, (ast.Import, ast.ImportFrom)) for b in found)


def _instance_of_other_class(receiver: ast.AST, ctx: Context) -> bool:
    """`self.copier` (or `copier`) where every assignment of it in the file builds an object of
    a class that is not torch's (`self.copier = IndexCopier(size)`): its `index_copy` is that
    class's own method, which may well work in place."""
    if isinstance(receiver, ast.Attribute):
        name, attribute = receiver.attr, True
    elif isinstance(receiver, ast.Name):
        name, attribute = receiver.id, False
    else:
        return False
    values = [s.value for s in index(ctx).assignments(ctx.tree, name, attribute)]
    return bool(values) and all(_builds_other_object(value, ctx) for value in values)


def _builds_other_object(value: ast.AST, ctx: Context) -> bool:
    if not isinstance(value, ast.Call):
        return False
    name = (
        value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
    )
    qualname = ctx.qualname(value.func) or ""
    return name[:1].isupper() and not qualname.startswith(("torch.", "numpy."))


def _never_read_after(statement: ast.stmt, receiver: ast.AST, ctx: Context) -> bool:
    """`receiver` is a local name that no statement after `statement` reads before binding it
    anew (the function ends, or the next mention is `name = ...` not reading it), and no loop
    around `statement` in the function comes back to it."""
    function = ctx.enclosing_function()
    if type(receiver) is not ast.Name or function is None:
        return False
    if any(isinstance(a, (ast.For, ast.AsyncFor, ast.While)) for a in ctx.ancestors):
        return False
    mentions = _statements_mentioning(ctx, function).get(receiver.id, [])
    at = bisect_right(mentions, (statement.end_lineno or statement.lineno, float("inf")))
    return at == len(mentions) or mentions[at][1] == 1


@per_file
def _statements_mentioning(ctx: Context, function: ast.AST) -> dict[str, list[tuple[int, int]]]:
    """For each name, the simple statements of `function` that mention it, in source order, as
    (line, 1 when the statement binds it anew without reading it, else 0): read once per function
    however many of its calls are asked about."""
    found: dict[str, list[tuple[int, int]]] = {}
    simple = [
        s
        for s in nested_statements(function.body)
        if not hasattr(s, "body")  # type: ignore[attr-defined]
    ]
    for statement in sorted(simple, key=lambda s: (s.lineno, s.col_offset)):
        names = {n.id for n in ast.walk(statement) if type(n) is ast.Name}
        rebound: set[str] = set()
        if type(statement) is ast.Assign:
            read = {n.id for n in ast.walk(statement.value) if type(n) is ast.Name}
            rebound = {t.id for t in statement.targets if type(t) is ast.Name} - read
        for name in names:
            found.setdefault(name, []).append((statement.lineno, 1 if name in rebound else 0))
    return found


def _in_test_function(ctx: Context) -> bool:
    function = ctx.enclosing_function()
    return function is not None and function.name.startswith("test")


def _item_of_a_batch(receiver: ast.AST, ctx: Context) -> bool:
    """An item of a batch a DataLoader gave (`batch["image"]`, `batch[0]`), or a name bound once
    to one: a tensor, collated (VPGNet's `img, gt = batch["image"], batch[task]`, then
    `img.to(device)`). (Were it a list of strings, `.to()` would raise instead.)"""
    if type(receiver) is not ast.Name:
        return type(receiver) is ast.Subscript and ctx.kind_of(receiver.value) is Kind.BATCH
    found = bindings(ctx, scope_of(receiver.id, ctx), receiver.id) or ()
    return bool(found) and all(
        type(b.value) is ast.Subscript and ctx.kind_of(b.value.value) is Kind.BATCH for b in found
    )


def _moved_tensor(receiver: ast.AST, ctx: Context) -> bool:
    """What is moved is a tensor, though its kind is not known where it is read: an item unpacked
    from what a module's `forward` is called with (`q, k, v, mask = inputs`: DeepFM-RL's
    attention layer), a layer's `weight` or `bias` or torchtext's `vectors`, or a parameter
    every call in this file hands a tensor (`x = torch.Tensor(images)`, then
    `evaluate(net, x)`, whose `x.to(device)` keeps `x` on the CPU)."""
    if type(receiver) is ast.Attribute:
        return receiver.attr in _TENSOR_ATTRIBUTES or _handed_to_a_module(receiver, ctx)
    if type(receiver) is not ast.Name:
        return False
    function = ctx.enclosing_function()
    if function is None:
        return False
    found = bindings(ctx, function, receiver.id)
    if not found:
        return False
    before = [b for b in found if b.node.lineno < receiver.lineno]
    if (
        before
        and all(_unpacks_forward_input(b.node, ctx) for b in before)
        and not ctx.enclosing_loops()
    ):
        return True  # what reaches the line is the unpacked input (later rebindings do not)
    if (
        len(found) != 1
        or not isinstance(found[0].node, ast.arg)
        or not is_parameter(function, receiver.id)
    ):
        return False
    if found[0].node.annotation is not None:  # type: ignore[attr-defined]
        return False
    passed = passed_by_every_call(ctx, function, receiver.id)  # type: ignore[arg-type]
    return bool(passed) and all(_holds_a_made_tensor(value, ctx) for value in passed or ())


def _handed_to_a_module(receiver: ast.Attribute, ctx: Context) -> bool:
    """`self.img`, which its class sets only from a method's parameter (`set_input(self,
    img_batch)`), handed to a module by the function that moves it (`self.net.forward(self.img)`:
    SatelliteImagery's frame): a model's input. Not where the project uses a library whose
    batches move in place (torch_geometric's `Data`, transformers' `BatchEncoding`)."""
    function, cls = ctx.enclosing_function(), ctx.enclosing_class()
    if function is None or cls is None or not is_self_attribute(receiver):
        return False
    if receiver.attr not in _module_inputs(ctx, function):
        return False
    if not _IN_PLACE_BATCHES.isdisjoint(imported_roots(ctx)):
        return False
    values = attribute_values(ctx, cls, receiver.attr)
    found = index_of(ctx, cls)
    return bool(values) and all(
        type(value) is ast.Name
        and unrebound_parameter(ctx, found.scopes[found.number[value]], value.id) is not None
        or type(value) is ast.Constant
        and value.value is None
        for value in values
    )


_IN_PLACE_BATCHES = frozenset({"torch_geometric", "transformers"})


@per_file
def _module_inputs(ctx: Context, function: ast.AST) -> frozenset[str]:
    """The attributes of `self` the function hands a module as its first input (`self.net(
    self.img)`, `self.net.forward(self.img)`), or a loss (`self.loss(self.mask, pred)`)."""
    found = set()
    for call in index_of(ctx, function).local(function, ast.Call):
        if computes_a_loss(call):
            found.update(a.attr for a in call.args if is_self_attribute(a))  # type: ignore[attr-defined]
            continue
        if not call.args or not is_self_attribute(call.args[0]):  # type: ignore[attr-defined]
            continue
        func = call.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr == "forward":
            func = func.value
        if _a_module(ctx, func):
            found.add(call.args[0].attr)  # type: ignore[attr-defined]
    return frozenset(found)


def _a_module(ctx: Context, expr: ast.AST) -> bool:
    """`expr` holds a module: by its kind, or for `self.net`, by a value its class gives it
    (`self.net = nn.DataParallel(self.net)` after `self.net = net().to(device)`)."""
    if ctx.kind_of(expr) is Kind.MODULE:
        return True
    cls = ctx.enclosing_class()
    return (
        cls is not None
        and is_self_attribute(expr)
        and any(
            ctx.kind_of(value) is Kind.MODULE for value in attribute_values(ctx, cls, expr.attr)
        )  # type: ignore[attr-defined]
    )


# Attributes that hold a tensor whatever holds them: a layer's parameters, torchtext's vectors.
_TENSOR_ATTRIBUTES = frozenset({"weight", "bias", "vectors"})


def _unpacks_forward_input(binding: ast.AST, ctx: Context) -> bool:
    """`binding` is a plain name of `a, b = x`, with `x` a forward input."""
    if type(binding) is not ast.Name:
        return False
    parents = index(ctx).parents
    target = parents.get(binding)
    statement = parents.get(target) if type(target) in (ast.Tuple, ast.List) else None
    return (
        type(statement) is ast.Assign
        and len(statement.targets) == 1
        and all(type(item) is ast.Name for item in target.elts)  # type: ignore[union-attr]
        and type(statement.value) is ast.Name
        and _forward_input(statement.value, ctx)
    )


def _holds_a_made_tensor(value: ast.AST, ctx: Context) -> bool:
    """A call making a tensor (`torch.Tensor(a)`), or a name its scope binds only to such calls."""
    if type(value) is ast.Call:
        return ctx.kind_of(value) is Kind.TENSOR
    return bound_only_to(ctx, value, Kind.TENSOR)


def _forward_input(receiver: ast.AST, ctx: Context) -> bool:
    """A parameter of the `forward` of an nn.Module class, not rebound in it: what the module
    is called with, a tensor (`self` and parameters with a default are left out)."""
    function = ctx.enclosing_function()
    if not isinstance(receiver, ast.Name) or function is None or function.name != "forward":
        return False
    cls = ctx.enclosing_class()
    if cls is None or not ctx.is_module_class(cls):
        return False
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    without_default = positional[1 : len(positional) - len(arguments.defaults)]
    if receiver.id not in {a.arg for a in without_default}:
        return False
    if receiver.id not in _maybe_bound_in(ctx, function):
        return True  # nothing in the function can rebind it: no bindings (nor file index) read
    return unrebound_parameter(ctx, function, receiver.id) is not None


@per_file
def _maybe_bound_in(ctx: Context, function: ast.AST) -> frozenset[str]:
    """Every name something under `function` may bind or declare shared (stores and deletions,
    imports, definitions, `except ... as`, match captures, `global`/`nonlocal`): more names
    than `bindings` finds, never fewer."""
    found: set[str] = set()
    for node in ast.walk(function):
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:
                found.add(node.id)
        elif kind is ast.Import or kind is ast.ImportFrom:
            found.update(a.asname or a.name.partition(".")[0] for a in node.names)
        elif kind is ast.Global or kind is ast.Nonlocal:
            found.update(node.names)
        elif kind is ast.MatchMapping:
            if node.rest:
                found.add(node.rest)
        elif isinstance(getattr(node, "name", None), str):
            found.add(node.name)  # definitions, `except ... as`, match captures
    return frozenset(found)


def _tensor_method_result(receiver: ast.AST, ctx: Context) -> bool:
    """`feature.reshape(-1, 512)`, `y.long()`: a call, on a name of the program, of a method
    only tensors and arrays have, none of which also has the move (`.to`, `.cuda`) made of
    it; a module has neither."""
    return (
        isinstance(receiver, ast.Call)
        and ctx.method_name(receiver) in _TENSOR_METHODS_NOT_MOVES
        and isinstance(receiver.func.value, ASSIGNABLE)  # type: ignore[attr-defined]
        and root_name(receiver.func.value) not in _imported_names(ctx)  # type: ignore[attr-defined]
    )


def _made_by_tensor_only_method(receiver: ast.AST, ctx: Context) -> bool:
    """Every binding of the name in its scope is the result of a method no other class has
    (`x = load(path).contiguous()`), or of a tensor method of the name itself
    (`x = x.view(1, -1)`) after one: deepspeech.pytorch transcribe.py's `spect.to(device)`."""
    if not isinstance(receiver, ast.Name):
        return False
    scope = ctx.enclosing_function() or ctx.tree
    return _tensor_only_name(ctx, scope, receiver.id)


@per_file
def _tensor_only_name(ctx: Context, scope: ast.AST, name: str) -> bool:
    if name not in names_assigned(ctx, _is_tensor_only_call):
        return False  # no binding made by such a method: no bindings (nor file index) read
    found = bindings(ctx, scope, name)
    if not found:
        return False
    made = False
    for binding in found:
        value = binding.value
        if binding.augmented or not isinstance(value, ast.Call):
            return False
        method = ctx.method_name(value)
        if method in TENSOR_ONLY and root_name(value.func.value) not in _imported_names(ctx):
            made = True  # not a module's function of that name
        elif not (
            made
            and method in MOVES | PURE
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == name
        ):
            return False
    return made


def _is_tensor_only_call(value: ast.expr) -> bool:
    """`x.contiguous()`: a call of a method of TENSOR_ONLY (whatever its receiver)."""
    return (
        type(value) is ast.Call
        and type(value.func) is ast.Attribute
        and value.func.attr in TENSOR_ONLY
    )


def _made_here(receiver: ast.AST, ctx: Context) -> bool:
    """`torch.zeros(1)`, `torch.ones(2).float()`: made by a call of an imported module in the
    statement itself, from no name of the program."""
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        inner = receiver.func.value
        if root_name(inner) in _imported_names(ctx) and not isinstance(inner, ast.Call):
            return True  # `torch.zeros(...)`: a function of the module, called
        receiver = inner
    return False


def _imported_names(ctx: Context) -> frozenset[str]:
    """Every name an import binds anywhere in the file, relative imports included."""
    return frozenset(
        alias.asname or alias.name.partition(".")[0]
        for node in statements(ctx, ast.Import, ast.ImportFrom)
        for alias in node.names
    )
