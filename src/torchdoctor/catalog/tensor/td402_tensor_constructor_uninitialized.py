"""TD402 tensor-constructor-uninitialized: `torch.Tensor(3, 4)` read before anything fills it."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Iterator

from torchdoctor.catalog.sdk import (
    file_of_tests,
    index_of,
    is_self_attribute,
    Context,
    Finding,
    Kind,
    holds_marker,
    lazy_compile,
    Pitfall,
    block_names,
    name_words,
    per_file,
    shorten,
    subtree_parents,
    tensor_methods,
)

PITFALL = Pitfall(
    code="TD402",
    name="tensor-constructor-uninitialized",
    title={
        "en": "Uninitialized tensor from a legacy constructor is read",
        "zh": "读取了旧式构造函数创建的未初始化张量",
    },
    messages={
        "parameter": {
            "en": "`{call}` allocates a tensor of that size without initializing it, and nothing "
            "fills the parameter `{attribute}` (no `nn.init`, no in-place fill, no initialization "
            "of the parameters in the project): the model starts from whatever that memory "
            "held; use `torch.zeros(...)` or initialize it in `__init__`",
            "zh": "`{call}` 按这个尺寸分配张量但不初始化，而没有任何代码填充参数 `{attribute}`（没有 `nn.init`、"
            "没有原地填充，项目中也没有统一初始化参数的代码）：模型从这块内存里原有的任意值开始训练；"
            "请改用 `torch.zeros(...)`，或在 `__init__` 中初始化它",
        },
        "": {
            "en": "`{call}` allocates a tensor of that size without initializing it, and `{use}` "
            "reads those arbitrary values before anything fills them; use `torch.zeros(...)` "
            "(or `torch.tensor(...)` if you meant the values)",
            "zh": "`{call}` 按这个尺寸分配张量但不初始化，而 `{use}` 在填充之前就读取了这些任意值；"
            "请使用 `torch.zeros(...)`（如果想要的是这些数值本身，请用 `torch.tensor(...)`）",
        },
    },
    fix_title={"en": "Allocate with `torch.zeros(...)`", "zh": "改用 `torch.zeros(...)` 分配"},
    fix_applicability="unsafe",
    docs={
        "en": """
## What it catches
`torch.Tensor(...)`, `torch.FloatTensor(...)`, `torch.LongTensor(...)` and the other legacy
typed constructors called with sizes (`torch.Tensor(3, 4)`, `torch.FloatTensor(n, m)`,
`torch.Tensor(x.size())`), whose result is read before anything fills it: used in arithmetic,
passed to a `torch` function, reduced, given to a method that computes from its values
(`buf.sum()`, `buf.cumsum(0)`, `buf.clamp(0, 1)`, `buf.median()`), or returned, directly or
through a name assigned just before.

Called with data (`torch.Tensor([1, 2])`, `torch.FloatTensor(array)`) they copy the data and
are not reported; one argument computed from a name (`torch.FloatTensor(num_classes - 1)`) is a
size only when the name says it counts something: `1 - done`, a batch of flags from a replay
buffer, is data. Filling the tensor is fine: `torch.Tensor(3, 4).uniform_()`, `.zero_()`,
`.fill_(v)`, `.normal_()`, `nn.init.*_(t)`, `t[i] = ...` or `t.copy_(...)`. A constructor
stored on `self` (`self.weight = nn.Parameter(torch.Tensor(out, in))`) is not reported either:
`reset_parameters()` or the model's weight initialization usually fills it elsewhere; unless
nothing can. A parameter so made in `__init__` is reported when no text of its file fills the
attribute by name (no in-place method on it, `self.bias.data.normal_()`; no call given it first,
`nn.init.zeros_(self.bias)`; no other assignment; no string naming it) and no code of the project
fills parameters wholesale (`model.apply(init)`, a loop over `parameters()`,
`named_parameters()` or `modules()`, a `reset_parameters` or an `init_weights`-like helper): the
Hierarchical-attention-networks models fill their weights in `_create_weights`, not `sent_bias`.

## Why is this bad?
With integer arguments these constructors allocate memory of that shape and leave whatever
bytes were there: they behave like `torch.empty`, not like `torch.tensor`. `torch.Tensor(3)`
is a tensor of three arbitrary numbers, not `tensor([3.])`. Results that depend on them differ
from run to run and machine to machine, and may be huge, `nan` or `inf`; on a fresh process the
memory is often zero, so the bug hides in tests.

## Symptoms
Losses or outputs that are `nan`, `inf` or absurdly large on the first step, and results that
change between runs with the same seed.

## Fix safety
The fix allocates with `torch.zeros(...)`, keeping the constructor's dtype
(`torch.FloatTensor(n)` becomes `torch.zeros(n, dtype=torch.float32)`) and device
(`torch.cuda.*` adds `device="cuda"`). It is unsafe: the values change from arbitrary to zero,
which is the point, but zero may not be the value the code meant (ones, random initialization,
or the numbers passed as sizes).

## Known problems
A tensor filled by a function it is passed to (`fill(buf)`) or in another method is trusted to
be initialized, and so is one in a test function that asserts nothing about values (a test of
memory use, speed, or that the code runs). A single name as the only argument
(`torch.LongTensor(ids)`) may be a size or data, so it is not reported. A function that returns
`torch.Tensor(n)` for its caller to fill is reported: write `torch.empty(n)` there, which says
that the values are not set yet. A returned `nn.Parameter(torch.Tensor(...))` is not reported:
the module initializes it. A lone `x.shape` is a size only when `x` is known to be a tensor: the
`.shape` of a numpy array or a gym space is a tuple, which the constructor takes as data
(`torch.Tensor(space.shape)`).
""",
        "zh": """
## What it catches
用尺寸参数调用 `torch.Tensor(...)`、`torch.FloatTensor(...)`、`torch.LongTensor(...)` 等旧式带类型的构造函数
（`torch.Tensor(3, 4)`、`torch.FloatTensor(n, m)`、`torch.Tensor(x.size())`），并且在任何填充之前就读取了结果：
参与算术运算、传给 `torch` 函数、做归约、传给根据其数值计算的方法（`buf.sum()`、`buf.cumsum(0)`、
`buf.clamp(0, 1)`、`buf.median()`）或被返回。可以是直接使用，也可以是先赋给变量、紧接着使用。

以数据调用（`torch.Tensor([1, 2])`、`torch.FloatTensor(array)`）时会复制数据，不会被报告；
由某个名字算出的单个参数（`torch.FloatTensor(num_classes - 1)`）只有在名字表明它是计数时才算尺寸：
`1 - done`（回放缓冲区取出的一批结束标志）是数据。填充张量的写法
没有问题：`torch.Tensor(3, 4).uniform_()`、`.zero_()`、`.fill_(v)`、`.normal_()`、`nn.init.*_(t)`、
`t[i] = ...` 或 `t.copy_(...)`。保存在 `self` 上的构造结果（`self.weight = nn.Parameter(torch.Tensor(out, in))`）
也不报告：通常由 `reset_parameters()` 或模型的权重初始化在别处填充；除非没有任何代码会填充它。
在 `__init__` 中这样创建的参数，如果所在文件里没有任何文字按名字填充这个属性（没有对它调用原地方法，
如 `self.bias.data.normal_()`；没有把它作为第一个参数交给某个调用，如 `nn.init.zeros_(self.bias)`；
没有别的赋值；没有字符串提到它），并且项目中没有统一填充参数的代码（`model.apply(init)`、遍历
`parameters()`、`named_parameters()` 或 `modules()` 的循环、`reset_parameters` 或类似 `init_weights` 的辅助函数），
就会报告：Hierarchical-attention-networks 的模型在 `_create_weights` 里填充了权重，却没有填充 `sent_bias`。

## Why is this bad?
传入整数时，这些构造函数按该形状分配内存，但保留内存中原有的字节：它们的行为像 `torch.empty`，
而不是 `torch.tensor`。`torch.Tensor(3)` 是三个任意数值组成的张量，而不是 `tensor([3.])`。依赖这些值的结果
每次运行、每台机器都可能不同，可能极大，也可能是 `nan` 或 `inf`；新进程里这块内存往往恰好是 0，
所以测试时问题常常被掩盖。

## Symptoms
第一步的 loss 或输出就是 `nan`、`inf` 或大得离谱的数；同样的随机种子，每次运行结果却不一样。

## Fix safety
修复改用 `torch.zeros(...)` 分配，并保留构造函数对应的 dtype（`torch.FloatTensor(n)` 变为
`torch.zeros(n, dtype=torch.float32)`）和设备（`torch.cuda.*` 会加上 `device="cuda"`）。它是不安全的：
数值从任意值变成了 0，这正是修复的目的，但 0 未必是代码本来想要的值（可能是 1、随机初始化，
或者本想把这些参数当作数值）。

## Known problems
传给某个函数（`fill(buf)`）或在另一个方法里填充的张量，会被当作已经初始化；不对数值做任何断言的测试函数
（测内存、速度，或只测代码能运行）里的张量也一样。唯一的参数是单个变量名时
（`torch.LongTensor(ids)`），它既可能是尺寸也可能是数据，因此不报告。返回 `torch.Tensor(n)`、
由调用者负责填充的函数会被报告：这种情况请写成 `torch.empty(n)`，明确表示数值尚未设置。
返回 `nn.Parameter(torch.Tensor(...))` 的函数不会被报告：通常由模块自己完成初始化。
唯一的参数是 `x.shape` 时，只有已知 `x` 是张量才当作尺寸：numpy 数组或 gym space 的 `.shape`
是元组，构造函数会把它当作数据（`torch.Tensor(space.shape)`）。
""",
    },
    example="""
import torch

bias = torch.Tensor(16)
logits = torch.randn(4, 16) + bias
""",
    use_instead="""
import torch

bias = torch.zeros(16)
logits = torch.randn(4, 16) + bias
""",
)

# Legacy constructors and the dtype that keeps their meaning in `torch.zeros` (data, not code).
CONSTRUCTOR_DTYPES = {
    "Tensor": None,
    "FloatTensor": "float32",
    "DoubleTensor": "float64",
    "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16",
    "LongTensor": "int64",
    "IntTensor": "int32",
    "ShortTensor": "int16",
    "CharTensor": "int8",
    "ByteTensor": "uint8",
    "BoolTensor": "bool",
}
CONSTRUCTOR_MODULES = {"torch": None, "torch.cuda": "cuda"}
# Methods and wrappers that hand the same (still unfilled) memory on.
PASS_THROUGH_METHODS = frozenset(
    """
cuda cpu to float double half long int short bool byte char type view reshape t transpose permute
contiguous requires_grad_ detach unsqueeze squeeze expand flatten pin_memory share_memory_ clone
""".split()
)
PARAMETERS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
WRAPPERS = PARAMETERS | {"torch.autograd.Variable"}
IDENTITY_TESTS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
# Methods that read the values of their receiver: reductions, and the out-of-place twins of
# in-place methods (`buf.cumsum(0)`, `buf.clamp(0, 1)`), less those that only reshape it or
# overwrite part of a copy (`buf.masked_fill(mask, 0)` leaves the rest unfilled, but may fill
# it all).
READING_METHODS = frozenset(
    """
sum mean max min prod std var norm abs exp log sqrt item tolist numpy add sub mul div matmul mm
bmm pow sigmoid tanh relu softmax log_softmax argmax argmin any all median mode amax amin
logsumexp nansum nanmean dot mv topk sort kthvalue equal allclose isnan isinf isfinite
count_nonzero nonzero
""".split()
) | (
    tensor_methods.OUT_OF_PLACE
    - frozenset(
        """
as_strided detach squeeze unsqueeze t transpose swapaxes swapdims resize resize_as put
index_put index_copy index_fill masked_fill masked_scatter scatter
""".split()
    )
)
# Functions under these modules read their tensor arguments (no buffers filled by position),
# except those that only look at the shape, dtype or device.
READING_MODULES = frozenset({"torch", "torch.nn.functional"})
METADATA_FUNCTIONS = frozenset(
    {"numel", "is_tensor", "is_floating_point", "is_complex", "typename"}
)
INTEGER_CALLS = frozenset({"len", "int"})
INTEGER_METHODS = frozenset({"size", "numel", "dim"})
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow)
# With a name on one side, `+`/`*` may repeat or join lists (data); these work on numbers and
# on arrays (`1 - done`, a batch of flags from a replay buffer: BEAR's `FloatTensor(1 - done)`),
# so the name must also say it counts something.
NUMBER_ONLY = (ast.Sub, ast.FloorDiv, ast.Pow)
COUNT_WORDS = frozenset(
    "n num number nb count size sizes len length dim dims ndim batch hidden width height channels "
    "classes features steps k max min total".split()
)
NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


# Names of a `*name` parameter that say it holds sizes.
SIZE_NAMES = frozenset({"shape", "size", "sizes", "dims"})


@PITFALL.static(ast.Call, names=CONSTRUCTOR_DTYPES)
def check(call: ast.Call, ctx: Context) -> Iterator[Finding]:
    module, _, constructor = (ctx.qualname(call.func) or "").rpartition(".")
    if module not in CONSTRUCTOR_MODULES or constructor not in CONSTRUCTOR_DTYPES:
        return
    if not _has_sizes(call, ctx):
        return
    if _test_checking_no_values(ctx):
        return  # pytorch_memlab's memory-report tests: the values are never looked at
    parents = ctx.statement_parents()
    value = _passed_on(call, parents, ctx)
    # A returned nn.Parameter is a helper's product: the module initializes it later.
    returns_read = not _through_parameter(call, value, parents, ctx)
    reader = _reader(value, parents, ctx, returns_read)
    if reader is None:
        reader = _first_reader(_assigned_name(ctx, value), ctx, returns_read)
    if reader is None:
        attribute = _parameter_never_filled(call, value, parents, ctx)
        if attribute is not None:
            yield ctx.finding(
                PITFALL,
                call,
                "parameter",
                fix=_zeros_fix(call, module, constructor, ctx),
                call=shorten(ctx.text(call)),
                attribute=attribute,
            )
        return
    fix = _zeros_fix(call, module, constructor, ctx)
    yield ctx.finding(
        PITFALL, call, fix=fix, call=shorten(ctx.text(call)), use=shorten(ctx.text(reader))
    )


def _test_checking_no_values(ctx: Context) -> bool:
    """In a test function (`def test_...` of a file of tests) that asserts nothing about values:
    no `assert` statement, no `assert*`/`allclose`/`equal` call. An input of uninitialized memory
    there measures memory or time, or checks that the code runs: what it holds does not matter."""
    function = ctx.enclosing_function()
    if function is None or not function.name.startswith("test") or not file_of_tests(ctx):
        return False
    return not _checks_values(ctx, function)


@per_file
def _checks_values(ctx: Context, function: ast.AST) -> bool:
    """`function` asserts or compares values; read once per function, however many
    constructors it holds."""
    found = index_of(ctx, function)
    if found.under(function, ast.Assert):
        return True
    for call in found.under(function, ast.Call):
        func = call.func  # type: ignore[attr-defined]
        name = (
            func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        )
        if name.startswith("assert") or name in _VALUE_CHECKS:
            return True
    return False


_VALUE_CHECKS = frozenset({"allclose", "isclose", "equal", "eq", "all", "any"})


def _has_sizes(call: ast.Call, ctx: Context) -> bool:
    """Sizes, not data: several arguments, `*shape`, one integer, one `x.size()`, or the
    `x.shape` of a known tensor (a torch.Size; the `.shape` of a numpy array or of a gym space
    is a tuple, which the constructor takes as data: `torch.Tensor(space.shape)`)."""
    args = call.args
    if not args:
        return False
    if len(args) > 1:
        return True
    if isinstance(args[0], ast.Starred):
        # `*shape`, but not a wrapper's own `*args` handed on: its callers may pass data.
        return not _forwards_varargs(args[0].value, ctx)
    (arg,) = args
    if isinstance(arg, ast.Attribute) and arg.attr == "shape":
        return ctx.kind_of(arg.value) is Kind.TENSOR
    return _is_integer(arg) or _is_shape(arg)


def _forwards_varargs(expr: ast.AST, ctx: Context) -> bool:
    """`expr` is the enclosing function's `*args` (a name that does not say it holds sizes,
    as `*shape` does)."""
    if not isinstance(expr, ast.Name) or expr.id in SIZE_NAMES:
        return False
    function = ctx.enclosing_function()
    varargs = getattr(getattr(function, "args", None), "vararg", None)
    return varargs is not None and varargs.arg == expr.id


def _is_integer(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Constant):
        return type(expr.value) is int
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ARITHMETIC):
        if _is_integer(expr.left) and _is_integer(expr.right):
            return True
        return isinstance(expr.op, NUMBER_ONLY) and all(
            _is_integer(side) or _names_a_count(side) for side in (expr.left, expr.right)
        )
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Name):
            return func.id in INTEGER_CALLS
        return isinstance(func, ast.Attribute) and func.attr in INTEGER_METHODS and bool(expr.args)
    if isinstance(expr, ast.Subscript):  # x.shape[0]
        return _is_shape(expr.value) and _is_integer(expr.slice)
    return False


def _names_a_count(expr: ast.AST) -> bool:
    """`num_classes`, `self.hidden_size`, `n`: a name that says it holds a count."""
    if isinstance(expr, ast.Attribute):
        name = expr.attr
    elif isinstance(expr, ast.Name):
        name = expr.id
    else:
        return False
    return not COUNT_WORDS.isdisjoint(name_words(name))


def _is_shape(expr: ast.AST) -> bool:
    if isinstance(expr, ast.Attribute):
        return expr.attr == "shape"
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "size"
        and not expr.args
    )


def _passed_on(value: ast.AST, parents: dict, ctx: Context) -> ast.AST:
    """The outermost expression still holding the same unfilled memory (`.cuda()`, Parameter)."""
    while True:
        parent = parents.get(value)
        if isinstance(parent, ast.Attribute) and parent.attr in PASS_THROUGH_METHODS:
            call = parents.get(parent)
            if not (isinstance(call, ast.Call) and call.func is parent):
                return value
            value = call
        elif (
            isinstance(parent, ast.Call)
            and parent.args
            and parent.args[0] is value
            and ctx.qualname(parent.func) in WRAPPERS
        ):
            value = parent
        else:
            return value


def _parameter_never_filled(
    call: ast.Call, value: ast.AST, parents: dict, ctx: Context
) -> str | None:
    """`self.bias = nn.Parameter(torch.Tensor(1, n))` in a class's `__init__`, when nothing
    fills it: no text of the file names the attribute but as a value read (no in-place method
    on it, no call given it first, no other assignment, no string naming it), and no code of the
    project fills parameters wholesale (`model.apply(init)`, a loop over `parameters()`, a
    `reset_parameters`): Hierarchical-attention-networks' `sent_bias`, trained from whatever
    memory held. Returns `self.<attribute>`."""
    if not _through_parameter(call, value, parents, ctx):
        return None
    statement = parents.get(value)
    if not (
        type(statement) is ast.Assign and statement.value is value and len(statement.targets) == 1
    ):
        return None
    target = statement.targets[0]
    if not is_self_attribute(target):
        return None
    function = ctx.enclosing_function()
    if function is None or function.name != "__init__" or ctx.enclosing_class() is None:
        return None
    marker = "initializes parameters generically"
    if ctx.project.has(marker) or holds_marker(ctx.source.encode(), marker):
        return None
    filled, assigned = _attributes_filled(ctx)
    attribute = target.attr
    return f"self.{attribute}" if attribute not in filled and assigned[attribute] == 1 else None


# `self.bias = ...`, `self.bias.data[0] = ...`; `self.bias.normal_(...)`, `self.bias.data.zero_()`;
# `nn.init.zeros_(self.bias)`; any identifier in quotes (`getattr(self, "bias")`).
_ASSIGNED_ON_SELF = lazy_compile(rb"self\.(\w+)(?:\.data)?(?:\[[^\]\n]*\])?[ \t]*=(?!=)")
_IN_PLACE_ON_SELF = lazy_compile(
    rb"self\.(\w+)(?:\.data)?(?:\[[^\]\n]*\])?[ \t]*\.[ \t]*\w+_[ \t]*\("
)
_HANDED_FIRST = lazy_compile(rb"\([ \t]*self\.(\w+)\b")
_QUOTED_WORD = lazy_compile(rb"""['"](\w+)['"]""")


@per_file
def _attributes_filled(ctx: Context) -> tuple[frozenset[str], Counter]:
    """The `self.` attributes the file's text may fill (an in-place method on one, one handed
    first to a call, one named in a string), and how often it assigns each: read once a file."""
    source = ctx.source.encode()
    filled = set()
    for pattern in (_IN_PLACE_ON_SELF, _HANDED_FIRST, _QUOTED_WORD):
        filled.update(
            match.group(1).decode("ascii", "replace") for match in pattern.finditer(source)
        )
    assigned = Counter(
        match.group(1).decode("ascii", "replace") for match in _ASSIGNED_ON_SELF.finditer(source)
    )
    return frozenset(filled), assigned


def _through_parameter(call: ast.Call, value: ast.AST, parents: dict, ctx: Context) -> bool:
    node = call
    while node is not value:
        node = parents[node]
        if isinstance(node, ast.Call) and ctx.qualname(node.func) in PARAMETERS:
            return True
    return False


def _reader(
    value: ast.AST, parents: dict, ctx: Context, returns_read: bool = True
) -> ast.AST | None:
    """The expression or statement that reads the values of `value`, if it is one that surely
    does: arithmetic, a comparison, a reducing method, a torch function, `return`."""
    parent = parents.get(value)
    if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
        return parent
    if isinstance(parent, ast.Compare):  # `t is None` looks at the object only
        return None if all(isinstance(op, IDENTITY_TESTS) for op in parent.ops) else parent
    if isinstance(parent, ast.Return):
        return parent if returns_read else None
    if isinstance(parent, ast.AugAssign) and parent.value is value:
        return parent
    if isinstance(parent, ast.Attribute) and parent.attr in READING_METHODS:
        call = parents.get(parent)
        return call if isinstance(call, ast.Call) and call.func is parent else None
    if isinstance(parent, ast.Call) and any(arg is value for arg in parent.args):
        return parent if _reads_arguments(parent, ctx) else None
    return None


def _reads_arguments(call: ast.Call, ctx: Context) -> bool:
    """`torch.matmul(a, b)`, `F.linear(x, w)`, `x.mm(w)` on a known tensor `x`."""
    func = call.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in READING_METHODS
        and ctx.kind_of(func.value) is Kind.TENSOR
    ):
        return True
    module, _, function = (ctx.qualname(func) or "").rpartition(".")
    return module in READING_MODULES and _reads_values(function)


def _reads_values(function: str) -> bool:
    if not function[:1].islower() or function in METADATA_FUNCTIONS:
        return False  # torch.Tensor/torch.Size are types; numel/... look at metadata only
    return not function.endswith(("_", "_like"))  # in-place writers; zeros_like & co. read shapes


def _assigned_name(ctx: Context, value: ast.AST) -> str | None:
    statement = ctx.ancestors[-1] if ctx.ancestors else None
    if not (isinstance(statement, ast.Assign) and statement.value is value):
        return None
    targets = statement.targets
    return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else None


def _first_reader(name: str | None, ctx: Context, returns_read: bool) -> ast.AST | None:
    """The reader of `name` in the first later statement of this block that uses it, when every
    use in that statement reads it; None when the first use may fill it (or nothing uses it)."""
    found = ctx.statement_block() if name else None
    if found is None:
        return None
    block, index = found
    names = block_names(ctx, block)
    tree_parents = names.index.parents
    for position, uses in names.mentions_after(name, index):
        statement = block[position]
        if not uses or _only_marks_grad(statement, name):
            continue
        if isinstance(statement, NESTED_SCOPES):
            return None
        readers = [_use_reader(use, tree_parents, ctx, returns_read) for use in uses]
        if any(reader is None for reader in readers):
            return None
        first = min(_position(reader) for reader in readers)
        if len({id(r) for r in readers if _position(r) == first}) > 1:
            # Readers starting at one place (`buf * 2 > buf`): the one of the use a scan of
            # the statement meets first, as ever.
            order = _scan_order(ctx, statement)
            readers = [
                reader for _, reader in sorted(zip(uses, readers), key=lambda p: order[p[0]])
            ]
        return min(readers, key=_position)
    return None


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


@per_file
def _scan_order(ctx: Context, statement: ast.stmt) -> dict[ast.AST, int]:
    return {node: rank for rank, node in enumerate(subtree_parents(statement))}


def _use_reader(use: ast.Name, parents: dict, ctx: Context, returns_read: bool) -> ast.AST | None:
    parent = parents.get(use)
    if isinstance(parent, ast.AugAssign) and parent.target is use:
        return parent  # `buf += x` reads buf first
    if not isinstance(use.ctx, ast.Load):
        return None
    value = _passed_on(use, parents, ctx)
    returns_read = returns_read and not _through_parameter(use, value, parents, ctx)
    return _reader(value, parents, ctx, returns_read)


def _only_marks_grad(statement: ast.stmt, name: str) -> bool:
    """`t.requires_grad_()` as a statement: neither fills nor reads `t`."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "requires_grad_"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    )


def _zeros_fix(call: ast.Call, module: str, constructor: str, ctx: Context):
    root = _root_name(call.func)
    if root is None or call.keywords or ctx.qualname(root) != "torch":
        return None  # `from torch import FloatTensor`: no torch name to build the call on
    torch_name = root.id
    start, _ = ctx.span(call.args[0])
    _, end = ctx.span(call.args[-1])
    arguments = [ctx.source[start:end]]
    if CONSTRUCTOR_DTYPES[constructor]:
        arguments.append(f"dtype={torch_name}.{CONSTRUCTOR_DTYPES[constructor]}")
    if CONSTRUCTOR_MODULES[module]:
        arguments.append(f'device="{CONSTRUCTOR_MODULES[module]}"')
    replacement = f"{torch_name}.zeros({', '.join(arguments)})"
    return ctx.fix(PITFALL, "unsafe", ctx.replace(call, replacement))


def _root_name(expr: ast.AST) -> ast.Name | None:
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr if isinstance(expr, ast.Name) else None
